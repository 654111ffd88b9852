/*
 * sink_helper.c: the line sink against readers that go away, stop reading or
 * read slowly, through the C API, with several emitting threads. Used by
 * spec/sink_spec.lua (and by `make tsan`).
 *
 *   sink_helper KIND SCENARIO [THREADS] [RECORDS]
 *
 * KIND: pipe | socket (a unix socketpair) | tcp (a loopback TCP connection
 * with small buffers, its descriptor handed over non-blocking: the kernel
 * then takes part of a line when the send buffer is nearly full).
 * SCENARIO:
 *   killed   the reader reads until it has seen 3 lines, then closes its end
 *            while the threads go on emitting;
 *   stalled  the reader reads nothing until every thread has emitted, then
 *            drains what reached it;
 *   slow     the reader reads 512 bytes at a time, pausing between reads;
 *   burst, burst-record
 *            the reader reads as fast as it can; the sink's buffer (64 MiB,
 *            in batches, or with write = "record" for burst-record) holds
 *            every record the threads emit, however slow the writer: no
 *            line may be dropped;
 *   crowd    the threads each emit RECORDS lines into a buffer of 32 KiB
 *            that is written only at the end (interval_ms 60000): with 2
 *            records a thread and up to 12 threads it holds them all (a
 *            thread with records waiting holds at least 2 KiB of it), so no
 *            line may be dropped;
 *   fork     (pipe, one thread) RECORDS lines are emitted and left buffered,
 *            then the process forks; the child emits 10 lines of its own,
 *            flushes and exits. The reader must get RECORDS + 10 lines: the
 *            child never writes the lines its parent buffered.
 *
 * A watchdog ends the process with "FAIL blocked" (exit 3) if the emitting
 * threads have not all returned within 20 s. Every line that reached the
 * reader must be a whole record line (prefix, every field, newline), and one
 * thread's lines must arrive in its emit order. Prints
 *   ok kind=.. scenario=.. emitted=.. received=.. written=.. dropped=..
 *      failures=.. pending=..
 * or "FAIL ..." and exits non-zero.
 */
#include "phaseprobe.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int rd_fd = -1;
static const pp_schema *schema;
static const char *scenario;
static long records;
static int nthreads;
static volatile int emitting_done;

static char *received;
static size_t received_len, received_cap;

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void keep(const char *p, size_t n) {
  if (received_len + n + 1 > received_cap) {
    received_cap = (received_len + n + 1) * 2;
    received = realloc(received, received_cap);
    if (!received) {
      printf("FAIL out of memory\n");
      _exit(4);
    }
  }
  memcpy(received + received_len, p, n);
  received_len += n;
  received[received_len] = 0;
}

static void *reader(void *arg) {
  (void)arg;
  char buf[65536];
  if (strcmp(scenario, "killed") == 0) {
    int lines = 0;
    while (lines < 3) {
      ssize_t n = read(rd_fd, buf, sizeof buf);
      if (n <= 0)
        break;
      keep(buf, (size_t)n);
      for (ssize_t i = 0; i < n; i++)
        lines += buf[i] == '\n';
    }
    close(rd_fd);
    rd_fd = -1;
    return NULL;
  }
  if (strcmp(scenario, "stalled") == 0)
    while (!__atomic_load_n(&emitting_done, __ATOMIC_ACQUIRE))
      sleep_ms(5);
  size_t piece = strcmp(scenario, "slow") == 0 ? 512 : sizeof buf;
  for (;;) {
    ssize_t n = read(rd_fd, buf, piece);
    if (n <= 0)
      break;
    keep(buf, (size_t)n);
    if (piece == 512)
      sleep_ms(1);
  }
  return NULL;
}

static void *watchdog(void *arg) {
  (void)arg;
  for (int i = 0; i < 2000; i++) {
    if (__atomic_load_n(&emitting_done, __ATOMIC_ACQUIRE))
      return NULL;
    sleep_ms(10);
  }
  printf("FAIL blocked: the emitting threads did not return within 20 s\n");
  fflush(stdout);
  _exit(3);
}

static void *emitter(void *arg) {
  long index = (long)arg;
  for (long d = 0; d < records; d++) {
    pp_begin();
    pp_set_count(PP_COUNT_NODES, (uint64_t)index);
    pp_set_count(PP_COUNT_GRID_BLOCKS, (uint64_t)d);
    pp_emit(&(pp_emit_args){.seq = (uint64_t)d, .wall_ns = 1000,
                            .given = PP_GIVEN_SEQ | PP_GIVEN_WALL | PP_GIVEN_ENQUEUE |
                                     PP_GIVEN_WAIT | PP_GIVEN_WINDOW},
            NULL);
  }
  return NULL;
}

/* Each line: the default prefix, every field in order, then the newline;
 * per thread (nodes=), grid_blocks strictly increasing. */
static int check_lines(long *nlines, char *why, size_t whylen) {
  const pp_schema *s = schema;
  const char *prefix = pp_schema_prefix(s);
  long last[65];
  for (int i = 0; i < 65; i++)
    last[i] = -1;
  char *p = received;
  char *end = received + received_len;
  *nlines = 0;
  while (p < end) {
    char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl) {
      snprintf(why, whylen, "a partial line at the end: '%.60s'", p);
      return -1;
    }
    *nl = 0;
    size_t pl = strlen(prefix);
    if (strncmp(p, prefix, pl) != 0 || p[pl] != ' ') {
      snprintf(why, whylen, "line %ld is not a record line: '%.60s'",
               *nlines + 1, p);
      return -1;
    }
    size_t nf = 0;
    long node = -1, grid = -1;
    for (char *q = p + pl; *q; q++) {
      if (*q != ' ')
        continue;
      char *eq = strchr(q + 1, '=');
      if (!eq) {
        snprintf(why, whylen, "line %ld: a field without '='", *nlines + 1);
        return -1;
      }
      const char *want = pp_schema_field_name(s, nf);
      if (!want || (size_t)(eq - q - 1) != strlen(want) ||
          strncmp(q + 1, want, strlen(want)) != 0) {
        snprintf(why, whylen, "line %ld: field %zu is '%.*s', not '%s'",
                 *nlines + 1, nf, (int)(eq - q - 1), q + 1,
                 want ? want : "(none)");
        return -1;
      }
      if (strcmp(want, "nodes") == 0)
        node = atol(eq + 1);
      if (strcmp(want, "grid_blocks") == 0)
        grid = atol(eq + 1);
      nf++;
    }
    /* these records have no device timeline: the fields that always
     * print, and no other */
    size_t always = 0;
    for (size_t i = 0; i < pp_schema_nfields(s); i++)
      always += pp_schema_field_kind(s, i) < PP_FIELD_DEVICE;
    if (nf != always) {
      snprintf(why, whylen, "line %ld has %zu fields, not %zu", *nlines + 1,
               nf, always);
      return -1;
    }
    if (node < 1 || node > 64 || grid <= last[node]) {
      snprintf(why, whylen, "line %ld: thread %ld's record %ld out of order",
               *nlines + 1, node, grid);
      return -1;
    }
    last[node] = grid;
    (*nlines)++;
    p = nl + 1;
  }
  return 0;
}

/* fds[0] reads, fds[1] writes (non-blocking, small send buffer). */
static int tcp_pair(int fds[2]) {
  int l = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t al = sizeof a;
  int small = 4096;
  if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) != 0 ||
      getsockname(l, (struct sockaddr *)&a, &al) != 0 || listen(l, 1) != 0)
    return -1;
  fds[1] = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(fds[1], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  setsockopt(fds[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (fds[1] < 0 || connect(fds[1], (struct sockaddr *)&a, sizeof a) != 0)
    return -1;
  fds[0] = accept(l, NULL, NULL);
  close(l);
  if (fds[0] < 0)
    return -1;
  int rcv = 65536; /* a window that does not leave TCP to its persist timer */
  setsockopt(fds[0], SOL_SOCKET, SO_RCVBUF, &rcv, sizeof rcv);
  return fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: sink_helper pipe|socket|tcp "
                    "killed|stalled|slow|burst|burst-record|crowd|fork "
                    "[THREADS] [RECORDS]\n");
    return 2;
  }
  const char *kind = argv[1];
  scenario = argv[2];
  nthreads = argc > 3 ? atoi(argv[3]) : 4;
  records = argc > 4 ? atol(argv[4]) : 2000;
  if (nthreads < 1 || nthreads > 64)
    nthreads = 4;
  int fds[2];
  if (strcmp(kind, "pipe") == 0) {
    if (pipe(fds) != 0)
      return perror("pipe"), 2;
  } else if (strcmp(kind, "socket") == 0) {
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0)
      return perror("socketpair"), 2;
  } else if (strcmp(kind, "tcp") == 0) {
    if (tcp_pair(fds) != 0)
      return perror("tcp loopback"), 2;
  } else {
    fprintf(stderr, "sink_helper: unknown kind '%s'\n", kind);
    return 2;
  }
  rd_fd = fds[0];
  pp_set_enabled(1);
  schema = pp_schema_default();
  pp_schema_use(schema);
  pp_store_enable(0);
  pp_sink_fd(fds[1]);
  int burst = strncmp(scenario, "burst", 5) == 0;
  int crowd = strcmp(scenario, "crowd") == 0;
  if (burst) {
    pp_sink_opts o = {(size_t)64 << 20, 0, strcmp(scenario, "burst-record") == 0};
    pp_sink_fd_with(fds[1], &o);
  } else if (crowd) {
    pp_sink_opts o = {(size_t)32 << 10, 60000, 0};
    pp_sink_fd_with(fds[1], &o);
  }
  burst |= crowd; /* no line may be dropped */

  pthread_t rt, wt, th[64];
  pthread_create(&rt, NULL, reader, NULL);
  pthread_create(&wt, NULL, watchdog, NULL);
  int forked = strcmp(scenario, "fork") == 0;
  if (forked) {
    nthreads = 1;
    pp_sink_opts o = {0, 60000, 0}; /* nothing written before the fork */
    pp_sink_fd_with(fds[1], &o);
    emitter((void *)1);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      long mine = records;
      records = 10;
      emitter((void *)2);
      records = mine;
      if (pp_flush(2000) != 0) {
        pp_stats_t cs;
        pp_stats(&cs);
        printf("FAIL the child's flush: %s; pending=%llu written=%llu\n",
               strerror(errno), (unsigned long long)cs.lines_pending,
               (unsigned long long)cs.lines_written);
        fflush(stdout);
        _exit(1);
      }
      _exit(0);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0) {
      printf("FAIL the child failed (status %d)\n", status);
      return 1;
    }
  }
  for (long i = 0; i < nthreads && !forked; i++)
    pthread_create(&th[i], NULL, emitter, (void *)(i + 1));
  for (int i = 0; i < nthreads && !forked; i++)
    pthread_join(th[i], NULL);
  __atomic_store_n(&emitting_done, 1, __ATOMIC_RELEASE);
  pthread_join(wt, NULL);

  /* Hand what is still buffered to the sink, then close the write end so
   * the reader sees end of file. */
  pp_flush(2000);
  pp_sink_fd(-1);
  close(fds[1]);
  pthread_join(rt, NULL);

  pp_stats_t st;
  pp_stats(&st);
  /* the reader of "killed" stops where it likes, inside a line */
  if (strcmp(scenario, "killed") == 0)
    while (received_len && received[received_len - 1] != '\n')
      received[--received_len] = 0;
  long nlines = 0;
  char why[200] = "";
  int bad = check_lines(&nlines, why, sizeof why);
  uint64_t expect = (uint64_t)nthreads * (uint64_t)records;
  uint64_t accounted = st.lines_written + st.lines_dropped + st.line_failures;
  int fail = bad != 0 || st.emitted != expect || accounted != expect ||
             st.lines_pending != 0 || (burst && st.lines_dropped != 0);
  uint64_t from_child = forked ? 10 : 0;
  if (!bad && strcmp(scenario, "killed") != 0 &&
      (uint64_t)nlines != st.lines_written + from_child) {
    fail = 1;
    snprintf(why, sizeof why, "%ld lines received, %llu written", nlines,
             (unsigned long long)st.lines_written);
  }
  if (!bad && burst && st.lines_dropped)
    snprintf(why, sizeof why, "lines dropped from a buffer that holds them all");
  if (!bad && accounted != expect)
    snprintf(why, sizeof why, "written + dropped + failed = %llu, not %llu",
             (unsigned long long)accounted, (unsigned long long)expect);
  printf("%s kind=%s scenario=%s emitted=%llu received=%ld written=%llu "
         "dropped=%llu failures=%llu pending=%llu%s%s\n",
         fail ? "FAIL" : "ok", kind, scenario, (unsigned long long)st.emitted,
         nlines, (unsigned long long)st.lines_written,
         (unsigned long long)st.lines_dropped,
         (unsigned long long)st.line_failures,
         (unsigned long long)st.lines_pending, why[0] ? ": " : "", why);
  free(received);
  return fail;
}
