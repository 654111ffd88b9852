/*
 * sink_internal.h: shared by the line sink (sink.c: the emit path and the
 * threads' buffers, configuration, lifetimes; sink_writer.c: the queue and
 * the writer thread) and its targets (sink_target.c: descriptors of the
 * module's own, the notices' target, the module's own threads); not
 * installed.
 */
#ifndef PP_SINK_INTERNAL_H
#define PP_SINK_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "pp_internal.h"

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

/* ---- the line sink (sink.c, sink_writer.c) -------------------------------- */
/* A thread's chunk is 2, 4, 8 or 16 KiB: a thread starts with the smallest,
 * gets the next size up when it fills one, and the next down when the
 * writer takes one before it is full; so many threads that emit now and
 * then share a small buffer, and a thread that emits flat out hands over
 * 16 KiB at a time. */
#define CHUNK_MIN 2048
#define CHUNK_MAX 16384
#define NCLASS 4
#define DEFAULT_INTERVAL_MS 50u
#define STOP_MS 100u      /* what a stop adds after its flush            */
#define FINISH_MS 500u    /* then, to finish a line a socket took part of */

/* A record as pp_emit leaves it in its thread's chunk: this head, the
 * schema's nfields values in line order, then ntags bytes of tag text,
 * padded to 8 bytes. */
typedef struct {
  const pp_schema *schema;
  uint32_t size;  /* bytes of the whole entry, a multiple of 8 */
  uint32_t ntags; /* bytes of tag text after the values        */
} rec_head;
#define REC_BYTES(nfields, ntags)                                              \
  (sizeof(rec_head) + 8 * (size_t)(nfields) + (((size_t)(ntags) + 7) & ~(size_t)7))
_Static_assert(CHUNK_MIN >= REC_BYTES(PP_MAX_FIELDS, PP_TAGS_MAX),
               "the smallest chunk holds the largest record");
_Static_assert(CHUNK_MIN << (NCLASS - 1) == CHUNK_MAX, "the chunk sizes");

/* A line sink: its target and how its lines wait. */
typedef struct sinkobj {
  pp_target t;   /* fd -1 until resolved (the default)                     */
  int lazy;      /* the default stderr sink: resolved by the writer         */
  int per_record;
  unsigned interval_ms;
  size_t buffer;
  unsigned refs; /* chunks tagged with it, +1 while current (q_lock)       */
  int retired;   /* no longer current (q_lock)                            */
  uint64_t grace_until;
  int dead;      /* atomic: writes fail for good (reader gone)            */
  int said;      /* atomic: trouble said                                  */
  struct sinkobj *next_retired;
} sinkobj;

/* Records of one thread for one sink: filled by the thread, then queued
 * and written by the writer. */
typedef struct chunk {
  struct chunk *next;
  sinkobj *s;
  size_t len;    /* bytes of records: owner thread, under its flag; fixed once
                    queued                                              */
  uint64_t nrec; /* records in it: the same                             */
  size_t off;    /* the writer's: bytes of records formatted            */
  uint64_t done; /* atomic: records done (written, failed or dropped)   */
  size_t cap;    /* bytes of data: CHUNK_MIN << cls                     */
  int cls;
  _Alignas(8) char data[];
} chunk;

/* q_lock (sink_writer.c): the queue, the chunks' memory, the current and
 * the replaced sinks, the writer's life and what it is asked to do. */
extern pthread_mutex_t pp_sink_lock;
/* Atomic: lines wait in thread buffers (sink_writer.c). */
extern int pp_sink_armed;
/* Atomic: the module is going away, no writer starts (sink.c). */
extern int pp_sink_shut;
/* What became of the lines, atomic: pp_stats() reports them (sink.c). */
typedef struct {
  uint64_t emitted, written, dropped, failed;
  int last_err;
} pp_sink_counts;
extern pp_sink_counts pp_sink_n;

/* The threads' buffers and the sinks (sink.c) ---------------------------- */
/* pthread_once for the line sink: its conditions and its fork handler. */
void pp_sink_init(void);
/* Takes every thread's chunk to the queue and frees the buffers of threads
 * that have exited. Called without q_lock. */
void pp_sink_collect(void);
/* q_lock held: a chunk back to the free list, its sink's reference gone. */
void pp_sink_chunk_release_locked(chunk *c);
/* q_lock held: bytes of chunks in use (a thread's or queued). */
size_t pp_sink_bytes_used_locked(void);
/* q_lock held: how long lines may wait in thread buffers (not at all for
 * a per-record sink). */
unsigned pp_sink_interval_locked(void);
/* A sink nothing refers to any more: its descriptor closed, and freed
 * unless it is the default one. Called without q_lock. */
void pp_sink_close(sinkobj *s);

/* The queue and the writer (sink_writer.c) -------------------------------- */
/* Called once (pp_sink_init): the writer's conditions. */
void pp_sink_writer_init(void);
/* q_lock held: c at the queue's tail. */
void pp_sink_queue_push_locked(chunk *c);
/* q_lock held: records queued and not yet done. */
uint64_t pp_sink_queue_pending_locked(void);
/* q_lock held: the writer is woken. */
void pp_sink_wake_locked(void);
/* q_lock held: the writer starts, unless it runs or the module is going
 * away. */
void pp_sink_writer_start_locked(void);
/* Lines wait: the writer (started if need be) collects them within the
 * sink's interval. */
void pp_sink_arm(void);
/* A thread that emitted exits: a running writer collects its lines (and
 * frees its buffer) within the interval; none is started. */
void pp_sink_arm_if_running(void);
/* q_lock held: old is no longer current; what it still holds is written
 * within GRACE_MS, then it is closed. */
void pp_sink_retire_locked(sinkobj *old);
/* Stops the writer after a flush of at most timeout_ms, and joins it within
 * STOP_MS more. 0: no writer thread remains. */
int pp_sink_writer_stop(unsigned timeout_ms);
/* The module's end, the writer joined (q_lock held): the queued chunks
 * leave the queue (returned, for the caller to free), the writer's lines
 * are forgotten and the replaced sinks are handed over in *retired. */
chunk *pp_sink_writer_fini_locked(sinkobj **retired);
/* In a child after fork(): no writer, nothing queued, q_lock made anew. */
void pp_sink_writer_after_fork(void);

#endif
