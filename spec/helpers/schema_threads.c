/*
 * schema_threads.c: the schema a dispatch opens under belongs to its
 * thread. Two threads each make their own schema current, wait for each
 * other, then open dispatches; a third thread never chooses one. Every
 * dispatch must open under its own thread's schema (the third thread's
 * under the default), whatever the others chose meanwhile.
 *
 *   schema_threads DISPATCHES
 * prints "ok dispatches=.. wrong=0" or "FAIL ... wrong=N" and exits
 * non-zero on any dispatch opened under another thread's schema.
 */
#include "phaseprobe.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
  const pp_schema *use;    /* made current by this thread; NULL: none */
  const pp_schema *expect; /* what its dispatches must open under     */
  long dispatches;
  long wrong;
} worker;

static pthread_barrier_t start;

static void *run(void *p) {
  worker *w = p;
  if (w->use)
    pp_schema_use(w->use);
  pthread_barrier_wait(&start);
  for (long d = 0; d < w->dispatches; d++) {
    pp_begin();
    if (pp_open_schema() != w->expect || pp_schema_current() != w->expect)
      w->wrong++;
    pp_emit(NULL, NULL);
  }
  return NULL;
}

static const pp_schema *declare(const char *prefix, const char *phase) {
  const char *phases[] = {phase};
  pp_schema_def d = {.prefix = prefix, .phases = phases, .nphases = 1};
  char err[256];
  const pp_schema *s = pp_schema_declare(&d, err, sizeof err);
  if (!s) {
    fprintf(stderr, "schema_threads: %s\n", err);
    exit(2);
  }
  return s;
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 20000;
  pp_set_enabled(1);
  pp_sink_fd(-1);
  pp_store_enable(0);
  const pp_schema *a = declare("thread-a", "alpha");
  const pp_schema *b = declare("thread-b", "beta");
  const pp_schema *mine = declare("main-thread", "gamma");
  pp_schema_use(mine);
  worker w[3] = {{a, a, n, 0}, {b, b, n, 0}, {NULL, pp_schema_default(), n, 0}};
  pthread_t th[3];
  pthread_barrier_init(&start, NULL, 3);
  for (int i = 0; i < 3; i++)
    pthread_create(&th[i], NULL, run, &w[i]);
  long wrong = 0;
  for (int i = 0; i < 3; i++) {
    pthread_join(th[i], NULL);
    wrong += w[i].wrong;
  }
  if (pp_schema_current() != mine)
    wrong++;
  printf("%s dispatches=%ld wrong=%ld (a=%ld b=%ld default=%ld)\n",
         wrong ? "FAIL" : "ok", 3 * n, wrong, w[0].wrong, w[1].wrong,
         w[2].wrong);
  return wrong != 0;
}
