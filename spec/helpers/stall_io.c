/*
 * stall_io.c: a test double for a stalled or stuttering disk, loaded with
 * LD_PRELOAD by spec/sink_spec.lua. write(2) to a file whose path contains
 * "phaseprobe-stall" and open(2) of a path containing "phaseprobe-stallopen"
 * first sleep PHASEPROBE_STALL_MS milliseconds (default 5000), as a write or
 * an open on a hung file system would block, then do the real call.
 * write(2) to a file whose path contains "phaseprobe-short" takes only 1 to
 * 7 bytes of what it is given (a fixed cycle), and every fifth call fails
 * with EINTR before writing anything, as a signal would interrupt it: the
 * short writes POSIX allows of a regular file (a full disk, a quota, a
 * signal after part of the data).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

static void stall(void) {
  const char *v = getenv("PHASEPROBE_STALL_MS");
  long ms = v ? atol(v) : 5000;
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0)
    ;
}

/* Whether the path of fd contains mark. */
static int marked_fd(int fd, const char *mark) {
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0)
    return 0;
  path[n] = 0;
  return strstr(path, mark) != NULL;
}

static unsigned calls; /* the short writes' cycle (one writer thread) */

/* Says at exit how many writes were cut short or interrupted, so that a
 * spec knows the double was in the way. */
__attribute__((destructor)) static void say_calls(void) {
  if (calls)
    dprintf(2, "stall_io: %u writes cut short or interrupted\n", calls);
}

ssize_t write(int fd, const void *buf, size_t n) {
  static ssize_t (*real)(int, const void *, size_t);
  if (!real)
    real = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
  if (marked_fd(fd, "phaseprobe-stall"))
    stall();
  if (n > 0 && marked_fd(fd, "phaseprobe-short")) {
    unsigned k = calls++;
    if (k % 5 == 4) {
      errno = EINTR;
      return -1;
    }
    size_t most = 1 + k % 7;
    if (n > most)
      n = most;
  }
  return real(fd, buf, n);
}

static int open_with(const char *name, const char *path, int flags,
                     va_list ap) {
  int (*real)(const char *, int, ...) =
      (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, name);
  mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, mode_t) : 0;
  if (path && strstr(path, "phaseprobe-stallopen"))
    stall();
  return real(path, flags, mode);
}

/* open and open64: each hands its mode (there when the flags call for one)
 * to open_with, under its own name. */
#define STALLED_OPEN(name)                                                     \
  int name(const char *path, int flags, ...) {                                 \
    va_list ap;                                                                \
    va_start(ap, flags);                                                       \
    int fd = open_with(#name, path, flags, ap);                                \
    va_end(ap);                                                                \
    return fd;                                                                 \
  }
STALLED_OPEN(open)
STALLED_OPEN(open64)
