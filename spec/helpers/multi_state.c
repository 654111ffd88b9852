/*
 * multi_state.c: runs one Lua script in N threads at once, each thread with
 * its own lua_State (as a multi-GPU host would: one state per device). The
 * script sees THREAD (0-based) and NTHREADS as globals; its return values
 * are printed as "thread <i>: <values>". Exits 1 if any script failed.
 *
 *   multi_state N script.lua
 *
 * With MULTI_STATE_LINGER_MS set, the process lives that long after every
 * state was closed (and the module unloaded), so that a thread the module
 * left running would be caught executing unmapped code. With
 * MULTI_STATE_CLOSE_IN_MAIN set, the threads leave their states open and
 * exit; the main thread, which never ran a script, closes them.
 */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
  int index, n;
  const char *script;
  lua_State *L;
  char out[4096];
  int failed;
} job;

static void *run(void *p) {
  job *j = p;
  lua_State *L = luaL_newstate();
  if (!L) {
    snprintf(j->out, sizeof j->out, "cannot create a Lua state");
    j->failed = 1;
    return NULL;
  }
  luaL_openlibs(L);
  lua_pushinteger(L, j->index);
  lua_setglobal(L, "THREAD");
  lua_pushinteger(L, j->n);
  lua_setglobal(L, "NTHREADS");
  int base = lua_gettop(L);
  if (luaL_dofile(L, j->script) != LUA_OK) {
    snprintf(j->out, sizeof j->out, "error: %s", lua_tostring(L, -1));
    j->failed = 1;
  } else {
    size_t off = 0;
    for (int i = base + 1; i <= lua_gettop(L) && off < sizeof j->out; i++) {
      const char *s = luaL_tolstring(L, i, NULL);
      off += (size_t)snprintf(j->out + off, sizeof j->out - off, "%s%s",
                              i > base + 1 ? " " : "", s);
      lua_pop(L, 1);
    }
  }
  if (getenv("MULTI_STATE_CLOSE_IN_MAIN"))
    j->L = L;
  else
    lua_close(L);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: multi_state N script.lua\n");
    return 2;
  }
  int n = atoi(argv[1]);
  if (n < 1 || n > 64) {
    fprintf(stderr, "multi_state: N must be 1..64\n");
    return 2;
  }
  pthread_t th[64];
  job jobs[64];
  for (int i = 0; i < n; i++) {
    memset(&jobs[i], 0, sizeof jobs[i]);
    jobs[i].index = i;
    jobs[i].n = n;
    jobs[i].script = argv[2];
    pthread_create(&th[i], NULL, run, &jobs[i]);
  }
  int failed = 0;
  for (int i = 0; i < n; i++) {
    pthread_join(th[i], NULL);
    printf("thread %d: %s\n", i, jobs[i].out);
    failed |= jobs[i].failed;
  }
  for (int i = 0; i < n; i++)
    if (jobs[i].L)
      lua_close(jobs[i].L);
  fflush(stdout);
  const char *linger = getenv("MULTI_STATE_LINGER_MS");
  if (linger) {
    long ms = atol(linger);
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
      ;
    printf("lingered %ld ms\n", ms);
  }
  return failed;
}
