/*
 * lua_file.c: a whole file read into a Lua string, bounded
 * (pp_lua_push_file, pp_lua.h), for the bindings that take a path:
 * pp.ptx.scan_file (lua_ptx.c) and ctx:load_file (lua_cuda_module.c).
 *
 * The size is checked before reading where the file says it (a regular
 * file, refused at once when it is over the cap), and the bytes read are
 * counted where it does not (a pipe, a character device such as
 * /dev/zero), so no input makes the text grow past the cap; what was read
 * of a refused input is freed before the call returns, never handed to Lua.
 * Reading stops early where the rest could not matter: at the first NUL
 * byte of PTX text, which ends it for the scanner (it stops there) and for
 * the driver (cuModuleLoadData reads PTX as a NUL-terminated string).
 *
 * The bytes are read into memory of our own and copied into a Lua string
 * at the end, under protection: a memory error there becomes "out of
 * memory", never a raise through the caller, and leaks nothing.
 */
#include "pp_lua.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { READ_CHUNK = 1 << 20 };

typedef struct {
  char *p;
  size_t len, cap;
} filebuf;

/* Room for at least one more byte, the buffer growing by doubling and
 * never past limit bytes (limit > b->len); 0 or ENOMEM. */
static int grow(filebuf *b, size_t limit) {
  if (b->cap > b->len)
    return 0;
  size_t cap = b->cap < limit / 2 ? (b->cap ? b->cap * 2 : 1 << 16) : limit;
  if (cap > limit)
    cap = limit;
  char *p = realloc(b->p, cap);
  if (!p)
    return ENOMEM;
  b->p = p;
  b->cap = cap;
  return 0;
}

/* The length the text keeps when a NUL byte is at offset at, or -1 to
 * read on (mode PP_FILE_PTX_TEXT: through the NUL; PP_FILE_IMAGE: up to
 * it, unless the image is a cubin or a fatbin, whose NULs are data). */
static long long nul_cut(const filebuf *b, size_t at, int mode) {
  if (mode == PP_FILE_PTX_TEXT)
    return (long long)at + 1;
  static const char elf[4] = {0x7f, 'E', 'L', 'F'};
  static const unsigned char fatbin[4] = {0x50, 0xed, 0x55, 0xba};
  if (b->len >= 4 && (memcmp(b->p, elf, 4) == 0 || memcmp(b->p, fatbin, 4) == 0))
    return -1;
  return (long long)at;
}

/* Reads fd to its end (or its cut) into b, at most cap bytes (size: a
 * regular file's size, 0 when unknown); sets *cut when reading stopped at
 * a NUL byte. 0, or an errno (EFBIG: more than cap bytes). */
static int read_fd(int fd, filebuf *b, uint64_t cap, size_t size, int mode,
                   int *cut) {
  /* a byte past the cap is room enough to see that the input goes on */
  size_t limit = cap >= SIZE_MAX ? SIZE_MAX : (size_t)cap + 1;
  if (size) { /* the whole file at once, and a byte to see it end */
    b->p = malloc(size + 1);
    if (!b->p)
      return ENOMEM;
    b->cap = size + 1;
  }
  for (int seen_nul = 0;;) {
    if (grow(b, limit) != 0)
      return ENOMEM;
    size_t room = b->cap - b->len;
    ssize_t n = read(fd, b->p + b->len, room < READ_CHUNK ? room : READ_CHUNK);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return errno;
    if (n == 0)
      return 0;
    if ((uint64_t)n > cap - b->len)
      return EFBIG;
    size_t from = b->len;
    b->len += (size_t)n;
    const char *z = seen_nul ? NULL : memchr(b->p + from, 0, (size_t)n);
    if (!z)
      continue;
    seen_nul = 1;
    long long keep = nul_cut(b, (size_t)(z - b->p), mode);
    if (keep >= 0) {
      b->len = (size_t)keep;
      *cut = 1;
      return 0;
    }
  }
}

/* (protected) Pushes the bytes of the filebuf at 1 as a string. */
static int push_bytes(lua_State *L) {
  const filebuf *b = lua_touserdata(L, 1);
  lua_pushlstring(L, b->len ? b->p : "", b->len);
  return 1;
}

int pp_lua_push_file(lua_State *L, const char *path, uint64_t cap,
                     const char *what, const char *open_verb, int mode,
                     int *cut) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  int e = 0;
  struct stat st;
  *cut = 0;
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
    filebuf b = {NULL, 0, 0};
    size_t hint = S_ISREG(st.st_mode) ? (size_t)st.st_size : 0;
    e = read_fd(fd, &b, cap, hint, mode, cut);
    if (!e) {
      lua_pushcfunction(L, push_bytes);
      lua_pushlightuserdata(L, &b);
      if (lua_pcall(L, 1, 1, 0) != LUA_OK) {
        lua_pop(L, 1);
        e = ENOMEM;
      }
    }
    free(b.p);
    if (!e) {
      close(fd);
      return 0;
    }
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
