/*
 * sink_internal.h: shared by the line sink (sink.c: the writer thread, the
 * emit path, configuration, lifetimes) and its targets (sink_target.c:
 * descriptors of the module's own, the notices' target, the module's own
 * threads); not installed.
 */
#ifndef PP_SINK_INTERNAL_H
#define PP_SINK_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define SLICE_MS 20    /* longest one wait on a full pipe or socket   */
#define GRACE_MS 1000u /* a replaced sink's lines get this long       */

/* ---- targets (sink_target.c) --------------------------------------------- */
/* How a target is written: a regular file (or anything else that is not a
 * stream), a pipe, FIFO or terminal opened anew non-blocking, a socket
 * (MSG_DONTWAIT | MSG_NOSIGNAL), or the caller's own description of a pipe
 * or terminal, which only the writer thread may then wait on. */
enum { PP_TARGET_FILE, PP_TARGET_STREAM, PP_TARGET_SOCK, PP_TARGET_BLOCKING };

/* Where lines or notices go: a descriptor of the module's own. */
typedef struct {
  int fd;   /* our own descriptor; -1 until resolved                   */
  int kind; /* PP_TARGET_*                                             */
  char name[160];
} pp_target;

/* Our own descriptor for the caller's fd (its name is not set): 0, or -1
 * with errno. */
int pp_target_from_fd(int fd, pp_target *t);
/* "fd N", with " (stderr)" or " (stdout)" where it is one of those. */
void pp_target_name_fd(pp_target *t, int fd);
/* The file, FIFO or terminal at path, opened without waiting (at most 2 s
 * for a stalled file system; a FIFO with no reader is refused at once):
 * 0, or -1 with errno. */
int pp_target_from_path(const char *path, pp_target *t);
/* One write(2) (send(2) to a socket): never blocks on a stream, never
 * raises SIGPIPE. */
ssize_t pp_target_write(const pp_target *t, const char *p, size_t n);

/* ---- the notices' target (sink_target.c) -------------------------------- */
/* Writes a notice where pp_notices_* sends them (stderr by default), from
 * the writer thread: non-blocking, one attempt and one short wait. */
void pp_notice_say(const char *msg);
/* At the module's end: a target of the module's own is closed. */
void pp_notices_fini(void);
/* In a child after fork(): the target's lock is made anew. */
void pp_notices_after_fork(void);

/* ---- the module's own threads (sink_target.c) ----------------------------- */
/* Starts a thread of ours with every signal blocked: it never runs a
 * handler of the program's, and SIGPIPE can only be pending on it. */
int pp_own_thread(pthread_t *t, void *(*fn)(void *), void *arg);
/* Keeps this module mapped for the rest of the process: a thread of ours
 * that cannot be joined must never run unmapped code. */
void pp_pin_module(void);

/* ---- time ------------------------------------------------------------------ */
static inline uint64_t pp_mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void pp_abs_time(struct timespec *ts, uint64_t mono_deadline) {
  ts->tv_sec = (time_t)(mono_deadline / 1000000000ull);
  ts->tv_nsec = (long)(mono_deadline % 1000000000ull);
}

/* A condition variable whose timed waits are on CLOCK_MONOTONIC. */
static inline void pp_cond_init(pthread_cond_t *c) {
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_init(c, &a);
  pthread_condattr_destroy(&a);
}

#endif
