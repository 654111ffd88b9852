/*
 * lua_file.c: a whole file read into a Lua string, bounded
 * (pp_lua_push_file, pp_lua.h), for the bindings that take a path:
 * pp.ptx.scan_file (lua_ptx.c) and ctx:load_file (lua_cuda_module.c).
 *
 * The size is checked before reading where the file says it (a regular
 * file), and the bytes read are counted where it does not (a pipe, a
 * character device such as /dev/zero), so no input makes the string grow
 * past the cap. Reading runs protected: a memory error while the string
 * grows becomes "out of memory", never a raise through the caller.
 */
#include "pp_lua.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
  int fd;
  uint64_t cap;
  int err;
} read_job;

/* (protected) Reads job->fd to its end into a string; sets job->err and
 * stops at a read error or past job->cap. */
static int read_all(lua_State *L) {
  read_job *j = lua_touserdata(L, 1);
  luaL_Buffer b;
  luaL_buffinit(L, &b);
  uint64_t total = 0;
  for (;;) {
    char *dst = luaL_prepbuffsize(&b, 1 << 16);
    ssize_t n = read(j->fd, dst, 1 << 16);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      j->err = errno;
      break;
    }
    if (n == 0)
      break;
    if ((uint64_t)n > j->cap - total) {
      j->err = EFBIG;
      break;
    }
    total += (uint64_t)n;
    luaL_addsize(&b, (size_t)n);
  }
  luaL_pushresult(&b);
  return 1;
}

int pp_lua_push_file(lua_State *L, const char *path, uint64_t cap,
                     const char *what, const char *open_verb) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  int e = 0;
  struct stat st;
  if (fd < 0) {
    e = errno;
    lua_pushfstring(L, "%s: cannot %s '%s': %s", what, open_verb, path,
                    strerror(e));
    return -1;
  }
  if (fstat(fd, &st) != 0)
    e = errno;
  else if (S_ISDIR(st.st_mode))
    e = EISDIR;
  else if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > cap)
    e = EFBIG;
  if (!e) {
    read_job j = {fd, cap, 0};
    lua_pushcfunction(L, read_all);
    lua_pushlightuserdata(L, &j);
    int rc = lua_pcall(L, 1, 1, 0);
    if (rc == LUA_OK && j.err == 0) {
      close(fd);
      return 0;
    }
    lua_pop(L, 1);
    e = rc == LUA_ERRMEM ? ENOMEM : rc != LUA_OK ? EIO : j.err;
  }
  close(fd);
  if (e == EFBIG)
    lua_pushfstring(L, "%s: '%s' is larger than %I bytes (the option max_bytes "
                       "raises the limit)",
                    what, path, (lua_Integer)cap);
  else if (e == ENOMEM)
    lua_pushfstring(L, "%s: cannot read '%s': out of memory", what, path);
  else
    lua_pushfstring(L, "%s: cannot read '%s': %s", what, path, strerror(e));
  return -1;
}
