/*
 * stall_io.c: a test double for a stalled disk, loaded with LD_PRELOAD by
 * spec/sink_spec.lua. write(2) to a file whose path contains
 * "phaseprobe-stall" and open(2) of a path containing "phaseprobe-stallopen"
 * first sleep PHASEPROBE_STALL_MS milliseconds (default 5000), as a write or
 * an open on a hung file system would block, then do the real call.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
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

static int marked_fd(int fd) {
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0)
    return 0;
  path[n] = 0;
  return strstr(path, "phaseprobe-stall") != NULL;
}

ssize_t write(int fd, const void *buf, size_t n) {
  static ssize_t (*real)(int, const void *, size_t);
  if (!real)
    real = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
  if (marked_fd(fd))
    stall();
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
