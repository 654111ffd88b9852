/*
 * sink.c: where an emitted record goes once pp_emit has captured it
 * (record.c): the line sink (its writer thread, the emit path, its
 * configuration and lifetime), the record hook; the sink's targets and the
 * notices' are sink_target.c, the store is store.c.
 *
 * The line sink never blocks, signals or kills the emitting thread, whatever
 * the target (regular file, pipe, FIFO, socket, terminal):
 *
 *  - pp_emit copies the record (its schema pointer, its values, its tag
 *    text: 16 + 8 x fields + tags bytes, rounded up to 8) into a chunk (2
 *    to 16 KiB, below) owned by its own thread (a per-thread spin flag,
 *    which only the writer ever contends for, for the time of a pointer
 *    swap) and returns. No formatting and no system call on the emitting
 *    thread. A record refers to its schema, which lives for the process
 *    (schema.c keeps every schema declared, immutable, in a static table):
 *    the writer formats it long after the emit, whatever the thread has
 *    chosen since.
 *  - A writer thread of this module takes full chunks at once, and partly
 *    filled ones every interval_ms (default 50), at pp_flush() and when a
 *    Lua state closes (once it has written what it took before: so a
 *    thread's chunk is never taken for a record or two while a backlog
 *    waits), formats their lines (record.c's pp_line_format, the bytes
 *    pp_format_line gives) into a buffer of its own and writes them; a
 *    record stays in its chunk, and counts as held, until its whole line
 *    is written. It runs with every signal blocked (a vanished reader
 *    gives EPIPE, never SIGPIPE) and writes on a descriptor of its own,
 *    opened without waiting and written without blocking (sink_target.c
 *    says how): only a write to a regular file on a stalled disk can hold
 *    the writer, and then only the writer.
 *  - Each write(2) holds whole lines; to pipes, at most PIPE_BUF bytes of
 *    them, which the kernel writes whole or not at all, so no other writer
 *    of the pipe lands inside a line. A short write is continued from where
 *    it stopped before anything else goes to that sink.
 *  - Memory is bounded by the sink's `buffer` (default 1 MiB of chunks of
 *    records, shared out among the threads in chunks of 2 to 16 KiB) and
 *    the writer's line buffer (64 KiB and a line); when the target does not
 *    keep up, a record that finds no room is dropped and counted as a
 *    dropped line. What could not be written (dropped, or a failed write) is
 *    counted in pp_stats() and said once per sink on stderr (or where
 *    pp_notices_* sends notices), by the writer, non-blocking.
 *  - The writer is stopped and joined before the module's code can go away:
 *    when the last Lua state using the module closes, and in the module's
 *    destructor. If it cannot be joined in time (stuck in a write to a
 *    stalled disk), the module pins itself in memory (RTLD_NODELETE) so the
 *    thread never runs unmapped code.
 *
 * Lock order: reg_lock -> a thread's buffer flag -> q_lock. Nothing is held
 * across a write, an open or a close.
 */
#define _GNU_SOURCE
#include "pp_internal.h"
#include "sink_internal.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A thread's chunk is 2, 4, 8 or 16 KiB: a thread starts with the smallest,
 * gets the next size up when it fills one, and the next down when the
 * writer takes one before it is full; so many threads that emit now and
 * then share a small buffer, and a thread that emits flat out hands over
 * 16 KiB at a time. */
#define CHUNK_MIN 2048
#define CHUNK_MAX 16384
#define NCLASS 4
#define DEFAULT_BUFFER ((size_t)1 << 20)
#define MIN_BUFFER ((size_t)2 * CHUNK_MAX)
#define MAX_BUFFER ((size_t)1 << 30)
#define DEFAULT_INTERVAL_MS 50u
#define MAX_INTERVAL_MS 60000u
#define STOP_MS 100u      /* what a stop adds after its flush            */
#define FINISH_MS 500u    /* then, to finish a line a socket took part of */
#define WBUF_BYTES 65536 /* the writer formats this much at a time, and a line */

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

/* ---- state --------------------------------------------------------------- */
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

typedef struct tbuf {
  int flag; /* atomic spin flag: the owner, or the writer taking c    */
  int dead; /* the owner thread has exited (under flag)               */
  chunk *c;
  int cls; /* the owner's: the size of chunk it asks for next    */
  struct tbuf *next; /* registry (reg_lock)                            */
} tbuf;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static __thread tbuf *tls_tb __attribute__((tls_model("initial-exec")));

/* Thread-exit callbacks through the C runtime's thread_local machinery:
 * unlike a pthread key's destructor, a pending one keeps this module mapped
 * (dlclose leaves a module with pending ones in place), so a thread that
 * exits after another thread's lua_close never calls unmapped code. */
extern int __cxa_thread_atexit_impl(void (*fn)(void *), void *obj,
                                    void *dso);
extern void *__dso_handle;

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static tbuf *reg;

static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cond;    /* the writer waits here     */
static pthread_cond_t done_cond; /* flushers wait here        */
static chunk *q_head, *q_tail, *free_chunks[NCLASS];
/* Bytes of chunks allocated, and of those in use (a thread's or queued):
 * in use never passes the current sink's buffer, nor allocated for long. */
static size_t bytes_alloc, bytes_used;
static sinkobj default_sink = {
    .t = {.fd = -1, .kind = PP_TARGET_FILE, .name = "stderr"},
    .lazy = 1,
    .interval_ms = DEFAULT_INTERVAL_MS,
    .buffer = DEFAULT_BUFFER,
    .refs = 1,
};
static sinkobj *cur = &default_sink;     /* q_lock                     */
static sinkobj *cur_pub = &default_sink; /* atomic copy for emitters   */
static sinkobj *retired;
static int armed; /* atomic: lines wait in thread buffers */
static uint64_t flush_req, flush_done;
static char notice[640];
static size_t notice_len;

static pthread_t writer;
static int writer_state; /* 0 none, 1 running, 2 stopping (q_lock) */
static int writer_finished, writer_detached;
static int stop_req;           /* atomic */
static uint64_t stop_deadline; /* atomic */
static int shut;               /* atomic: the module is going away */
static int lua_states;         /* q_lock */

static uint64_t n_emitted, n_written, n_dropped, n_failed; /* atomic */

/* The writer's lines: formatted from the records of the chunk it writes
 * (the queue's head, until done with it), written from wpos to wlen. Only
 * the writer thread touches them. */
static char wbuf[WBUF_BYTES + PP_LINE_BYTES];
static size_t wpos, wlen;
static int last_err;                                       /* atomic */

static pp_record_hook hook;
static void *hook_ud;
static int hook_set; /* atomic */
static pthread_mutex_t hook_lock = PTHREAD_MUTEX_INITIALIZER;

static void after_fork_child(void);

static void init_once(void) {
  pp_cond_init(&q_cond);
  pp_cond_init(&done_cond);
  pthread_atfork(NULL, NULL, after_fork_child);
}

static inline void tb_lock(tbuf *t) {
  while (__atomic_exchange_n(&t->flag, 1, __ATOMIC_ACQUIRE)) {
    for (int i = 0; i < 64 && __atomic_load_n(&t->flag, __ATOMIC_RELAXED); i++) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    if (__atomic_load_n(&t->flag, __ATOMIC_RELAXED))
      sched_yield();
  }
}

static inline void tb_unlock(tbuf *t) {
  __atomic_store_n(&t->flag, 0, __ATOMIC_RELEASE);
}

/* ---- the writer ----------------------------------------------------------- */
static size_t count_lines(const char *p, size_t n) {
  size_t k = 0;
  const char *end = p + n;
  while (p < end && (p = memchr(p, '\n', (size_t)(end - p)))) {
    k++;
    p++;
  }
  return k;
}

static void say_trouble(sinkobj *s, const char *what, int err) {
  if (__atomic_exchange_n(&s->said, 1, __ATOMIC_ACQ_REL))
    return;
  char msg[640];
  snprintf(msg, sizeof msg,
           "phaseprobe: record lines to %s %s%s%s; lines that cannot be "
           "written are counted in pp.stats() (lines_dropped, "
           "line_failures), not reported again\n",
           s->t.name, what, err ? ": " : "", err ? strerror(err) : "");
  pp_notice_say(msg);
}

static void post_notice(const char *msg);

/* The rest of the chunk (the lines formatted from it and not yet written,
 * and its records not yet formatted) will not be written: counted as failed
 * or dropped. */
static void give_up_rest(chunk *c, int failed, int err) {
  uint64_t k = c->nrec - __atomic_load_n(&c->done, __ATOMIC_RELAXED);
  __atomic_fetch_add(failed ? &n_failed : &n_dropped, k, __ATOMIC_RELAXED);
  if (failed)
    __atomic_store_n(&last_err, err, __ATOMIC_RELAXED);
  __atomic_store_n(&c->done, c->nrec, __ATOMIC_RELEASE);
  c->off = c->len;
  wpos = wlen = 0;
  if (k)
    say_trouble(c->s, failed ? "could not be written"
                             : "were not taken in time and were dropped",
                failed ? err : 0);
}

/* The next piece to write of the rest lines at p: one line for a
 * per-record sink; to a pipe, whole lines of at most PIPE_BUF bytes (a line
 * longer than that alone); elsewhere, the rest. */
static size_t piece(const sinkobj *s, const char *p, size_t rest) {
  if (s->t.kind != PP_TARGET_STREAM && s->t.kind != PP_TARGET_BLOCKING &&
      !s->per_record)
    return rest;
  const char *nl = memchr(p, '\n', rest);
  size_t n = nl ? (size_t)(nl - p) + 1 : rest;
  if (s->per_record)
    return n; /* one line a write */
  while (n < rest) {
    nl = memchr(p + n, '\n', rest - n);
    size_t m = nl ? (size_t)(nl - p) + 1 : rest;
    if (m > PIPE_BUF)
      break;
    n = m;
  }
  return n;
}

/* The lines of c's next records into wbuf: as many as WBUF_BYTES takes, or
 * one (a per-record sink writes each as soon as it can). */
static void format_some(chunk *c, int one) {
  wpos = wlen = 0;
  while (c->off < c->len && wlen < WBUF_BYTES) {
    const rec_head *h = (const rec_head *)(c->data + c->off);
    const uint64_t *v = (const uint64_t *)(h + 1);
    wlen += pp_line_format(h->schema, v, (const char *)(v + h->schema->nfields),
                           h->ntags, wbuf + wlen);
    wbuf[wlen++] = '\n';
    c->off += h->size;
    if (one)
      break;
  }
}

/* Writes what is left of c. 1: done with it (written, failed or dropped);
 * 0: the target takes nothing for now (the caller looks at its other work
 * and comes back to c: wbuf keeps c's lines meanwhile). Called without
 * q_lock; `retired` and `grace_until` are the sink's, read under q_lock
 * when the chunk was taken. */
static int write_chunk(chunk *c, int retired_now, uint64_t grace_until) {
  sinkobj *s = c->s;
  if (s->lazy && s->t.fd < 0 && pp_target_from_fd(2, &s->t) != 0) {
    give_up_rest(c, 1, errno);
    return 1;
  }
  if (__atomic_load_n(&s->dead, __ATOMIC_ACQUIRE)) {
    give_up_rest(c, 1, __atomic_load_n(&last_err, __ATOMIC_RELAXED));
    return 1;
  }
  for (;;) {
    if (wpos == wlen) {
      if (c->off >= c->len)
        return 1;
      format_some(c, s->per_record);
    }
    size_t n = piece(s, wbuf + wpos, wlen - wpos);
    /* Given up at a stop, or when the sink was replaced and its grace is
     * over; but a line the target has taken part of (a stream socket) gets
     * FINISH_MS more, alone, so its reader is not left half a line. */
    uint64_t until = UINT64_MAX;
    if (__atomic_load_n(&stop_req, __ATOMIC_ACQUIRE))
      until = __atomic_load_n(&stop_deadline, __ATOMIC_RELAXED);
    if (retired_now && grace_until < until)
      until = grace_until;
    if (until != UINT64_MAX) {
      uint64_t now = pp_mono_ns();
      int mid = wpos > 0 && wbuf[wpos - 1] != '\n';
      if (now >= until + (mid ? (uint64_t)FINISH_MS * 1000000ull : 0)) {
        give_up_rest(c, 0, 0);
        return 1;
      }
      if (now >= until) {
        const char *nl = memchr(wbuf + wpos, '\n', wlen - wpos);
        n = nl ? (size_t)(nl - (wbuf + wpos)) + 1 : wlen - wpos;
      }
    }
    ssize_t w = pp_target_write(&s->t, wbuf + wpos, n);
    if (w > 0) {
      uint64_t k = count_lines(wbuf + wpos, (size_t)w);
      __atomic_fetch_add(&n_written, k, __ATOMIC_RELAXED);
      __atomic_fetch_add(&c->done, k, __ATOMIC_RELEASE);
      wpos += (size_t)w;
      continue;
    }
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct pollfd pf = {s->t.fd, POLLOUT, 0};
      if (poll(&pf, 1, SLICE_MS) == 0)
        return 0;
      continue;
    }
    int e = w < 0 ? errno : EIO;
    if (e == EPIPE || e == ECONNRESET || e == ENOTCONN || e == EBADF ||
        e == EINVAL || e == EDESTADDRREQ)
      __atomic_store_n(&s->dead, 1, __ATOMIC_RELEASE);
    give_up_rest(c, 1, e);
    return 1;
  }
}

/* q_lock held. */
static void chunk_release_locked(chunk *c) {
  sinkobj *s = c->s;
  c->s = NULL;
  c->next = free_chunks[c->cls];
  free_chunks[c->cls] = c;
  bytes_used -= c->cap;
  if (s)
    s->refs--;
}

/* q_lock held. */
static void queue_push_locked(chunk *c) {
  c->next = NULL;
  if (q_tail)
    q_tail->next = c;
  else
    q_head = c;
  q_tail = c;
}

/* q_lock held: how long lines may wait in thread buffers (not at all for
 * a per-record sink). */
static unsigned cur_interval_ms(void) {
  return !cur ? DEFAULT_INTERVAL_MS : cur->per_record ? 0 : cur->interval_ms;
}

/* Under reg_lock: takes every thread's chunk, giving it to take() under
 * its owner's flag (so one thread's lines stay in order), and unlinks the
 * buffers of threads that have exited, returned as a list for free_tbufs
 * (once reg_lock is released). */
static tbuf *sweep_locked(void (*take)(chunk *c)) {
  tbuf *gone = NULL;
  for (tbuf **pp = &reg; *pp;) {
    tbuf *t = *pp;
    tb_lock(t);
    chunk *c = t->c;
    t->c = NULL;
    int dead = t->dead; /* its thread has exited */
    if (c)
      take(c);
    tb_unlock(t);
    if (dead) {
      *pp = t->next;
      t->next = gone;
      gone = t;
    } else {
      pp = &t->next; /* a live thread's: its exit callback still uses it */
    }
  }
  return gone;
}

static void free_tbufs(tbuf *t) {
  while (t) {
    tbuf *n = t->next;
    free(t);
    t = n;
  }
}

/* A thread's chunk to the queue (an empty one back to the free list). */
static void take_queue(chunk *c) {
  pthread_mutex_lock(&q_lock);
  if (c->len)
    queue_push_locked(c);
  else
    chunk_release_locked(c);
  pthread_mutex_unlock(&q_lock);
}

/* Takes every thread's chunk and frees the buffers of threads that have
 * exited. Called without q_lock. */
static void collect_all(void) {
  pthread_mutex_lock(&reg_lock);
  tbuf *gone = sweep_locked(take_queue);
  pthread_mutex_unlock(&reg_lock);
  free_tbufs(gone);
}

static void *writer_main(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "phaseprobe-sink");
  uint64_t armed_at = 0, collected_for = 0;
  int stop_collected = 0;
  pthread_mutex_lock(&q_lock);
  for (;;) {
    uint64_t now = pp_mono_ns();
    int stopping = __atomic_load_n(&stop_req, __ATOMIC_ACQUIRE);
    uint64_t req = flush_req;
    int collect;
    if (stopping) {
      collect = !stop_collected; /* a stop collects once, then drains */
    } else {
      collect = req != collected_for;
      if (__atomic_load_n(&armed, __ATOMIC_ACQUIRE)) {
        if (!armed_at)
          armed_at = now;
        if (now >= armed_at + (uint64_t)cur_interval_ms() * 1000000ull)
          collect = 1;
      }
      /* Not while what was taken before waits: the threads' records stay
       * in their own chunks meanwhile (a per-record sink arms the writer at
       * every record; taking a chunk each time would hold a chunk for a
       * record or two, and the buffer would fill with them). */
      if (q_head)
        collect = 0;
    }
    if (collect) {
      __atomic_store_n(&armed, 0, __ATOMIC_RELEASE);
      armed_at = 0;
      pthread_mutex_unlock(&q_lock);
      collect_all();
      pthread_mutex_lock(&q_lock);
      collected_for = req;
      stop_collected = stopping;
      continue;
    }
    if (notice_len) {
      char msg[sizeof notice];
      memcpy(msg, notice, notice_len + 1);
      notice_len = 0;
      pthread_mutex_unlock(&q_lock);
      pp_notice_say(msg);
      pthread_mutex_lock(&q_lock);
      continue;
    }
    if (q_head) {
      chunk *c = q_head;
      int was_retired = c->s->retired;
      uint64_t grace = c->s->grace_until;
      pthread_mutex_unlock(&q_lock);
      int done = write_chunk(c, was_retired, grace);
      pthread_mutex_lock(&q_lock);
      if (done) {
        q_head = c->next;
        if (!q_head)
          q_tail = NULL;
        chunk_release_locked(c);
      }
      continue;
    }
    /* nothing queued: close replaced sinks that nothing refers to */
    sinkobj **rp = &retired;
    while (*rp && (*rp)->refs)
      rp = &(*rp)->next_retired;
    if (*rp) {
      sinkobj *s = *rp;
      *rp = s->next_retired;
      pthread_mutex_unlock(&q_lock);
      if (s->t.fd >= 0)
        close(s->t.fd);
      if (s != &default_sink)
        free(s);
      else
        s->t.fd = -1;
      pthread_mutex_lock(&q_lock);
      continue;
    }
    if (flush_done < collected_for) {
      flush_done = collected_for;
      pthread_cond_broadcast(&done_cond);
    }
    if (stopping)
      break;
    if (__atomic_load_n(&armed, __ATOMIC_ACQUIRE)) {
      if (!armed_at)
        armed_at = now;
      struct timespec ts;
      pp_abs_time(&ts, armed_at + (uint64_t)cur_interval_ms() * 1000000ull);
      pthread_cond_timedwait(&q_cond, &q_lock, &ts);
    } else if (flush_req == collected_for) {
      pthread_cond_wait(&q_cond, &q_lock);
    }
  }
  writer_finished = 1;
  if (writer_detached) {
    writer_state = 0;
    writer_detached = 0;
  }
  pthread_mutex_unlock(&q_lock);
  return NULL;
}

/* q_lock held. */
static void start_writer_locked(void) {
  if (writer_state != 0 || __atomic_load_n(&shut, __ATOMIC_ACQUIRE))
    return;
  __atomic_store_n(&stop_req, 0, __ATOMIC_RELEASE);
  writer_finished = 0;
  writer_detached = 0;
  if (pp_own_thread(&writer, writer_main, NULL) == 0)
    writer_state = 1;
}

/* Stops the writer after a flush of at most timeout_ms, and joins it within
 * STOP_MS more. 0: no writer thread remains. */
static int writer_stop(unsigned timeout_ms) {
  pp_flush(timeout_ms);
  pthread_mutex_lock(&q_lock);
  if (writer_state != 1) {
    int none = writer_state == 0;
    pthread_mutex_unlock(&q_lock);
    return none ? 0 : -1;
  }
  writer_state = 2;
  uint64_t deadline = pp_mono_ns() + (uint64_t)STOP_MS * 1000000ull;
  __atomic_store_n(&stop_deadline, deadline, __ATOMIC_RELAXED);
  __atomic_store_n(&stop_req, 1, __ATOMIC_RELEASE);
  pthread_cond_signal(&q_cond);
  pthread_mutex_unlock(&q_lock);
  /* pthread_timedjoin_np takes a CLOCK_REALTIME deadline */
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t rt = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec +
                (uint64_t)(STOP_MS + FINISH_MS + 200) * 1000000ull;
  pp_abs_time(&ts, rt);
  if (pthread_timedjoin_np(writer, NULL, &ts) == 0) {
    pthread_mutex_lock(&q_lock);
    writer_state = 0;
    __atomic_store_n(&stop_req, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&q_lock);
    return 0;
  }
  /* Held in a write that does not return (a stalled disk): it goes when
   * the write returns; until then the module stays mapped. */
  pp_pin_module();
  pthread_mutex_lock(&q_lock);
  pthread_detach(writer);
  if (writer_finished) {
    writer_state = 0;
  } else {
    writer_detached = 1;
  }
  pthread_mutex_unlock(&q_lock);
  return -1;
}

/* ---- the emit path -------------------------------------------------------- */
/* The owner thread exits: its buffer is marked, and the writer (if one
 * runs) collects its lines and frees it. No writer is started from here. */
static void tb_thread_exit(void *p) {
  tbuf *t = p;
  tb_lock(t);
  t->dead = 1;
  tb_unlock(t);
  tls_tb = NULL;
  pthread_mutex_lock(&q_lock);
  if (writer_state == 1) {
    __atomic_store_n(&armed, 1, __ATOMIC_RELEASE);
    pthread_cond_signal(&q_cond);
  }
  pthread_mutex_unlock(&q_lock);
}

static tbuf *tb_new(void) {
  pthread_once(&once, init_once);
  if (__atomic_load_n(&shut, __ATOMIC_ACQUIRE))
    return NULL;
  tbuf *t = calloc(1, sizeof *t);
  if (!t)
    return NULL;
  if (__cxa_thread_atexit_impl(tb_thread_exit, t, &__dso_handle) != 0) {
    free(t);
    return NULL;
  }
  pthread_mutex_lock(&reg_lock);
  t->next = reg;
  reg = t;
  pthread_mutex_unlock(&reg_lock);
  tls_tb = t;
  return t;
}

/* q_lock held: free chunks go to *extra (freed by the caller, outside the
 * lock), the largest first, while more than limit bytes are allocated. */
static void trim_locked(size_t limit, chunk **extra) {
  for (int k = NCLASS - 1; k >= 0 && bytes_alloc > limit; k--)
    while (free_chunks[k] && bytes_alloc > limit) {
      chunk *f = free_chunks[k];
      free_chunks[k] = f->next;
      bytes_alloc -= f->cap;
      f->next = *extra;
      *extra = f;
    }
}

/* Under t's flag: hands t's chunk to the queue (an empty one back to the
 * free list) and takes a fresh one for s, of t's next size or smaller,
 * holding at least need bytes, within s's buffer. NULL: no room (the
 * target is not keeping up). */
static chunk *tb_refill(tbuf *t, sinkobj *s, size_t need) {
  chunk *c = NULL;
  pthread_mutex_lock(&q_lock);
  size_t budget = s->buffer;
  if (t->c) {
    if (t->c->len) {
      /* The writer comes within the interval anyway (this thread armed it
       * with its first line); it is woken early, at the cost of a system
       * call here, only when half the buffer is in use. */
      if (t->c->s == s && t->cls < NCLASS - 1)
        t->cls++; /* filled: a bigger one next */
      queue_push_locked(t->c);
      if (2 * bytes_used >= budget)
        pthread_cond_signal(&q_cond);
    } else {
      chunk_release_locked(t->c);
    }
    t->c = NULL;
  } else if (t->cls > 0) {
    t->cls--; /* the writer took the last one before it was full */
  }
  int lo = 0;
  while ((size_t)CHUNK_MIN << lo < need)
    lo++;
  int k = t->cls > lo ? t->cls : lo;
  while (k >= lo && bytes_used + ((size_t)CHUNK_MIN << k) > budget)
    k--;
  chunk *extra = NULL;
  if (k >= lo) {
    size_t cap = (size_t)CHUNK_MIN << k;
    bytes_used += cap;
    if (free_chunks[k]) {
      c = free_chunks[k];
      free_chunks[k] = c->next;
    } else {
      /* room for it: free chunks of other sizes go first */
      trim_locked(budget - cap, &extra);
      bytes_alloc += cap; /* allocated outside the lock */
      pthread_mutex_unlock(&q_lock);
      c = malloc(sizeof *c + cap);
      pthread_mutex_lock(&q_lock);
      if (c) {
        c->cap = cap;
        c->cls = k;
      } else {
        bytes_alloc -= cap;
        bytes_used -= cap;
      }
    }
  }
  /* over this sink's budget (smaller than a former one's): free chunks go */
  trim_locked(budget, &extra);
  if (c) {
    c->next = NULL;
    c->s = s;
    c->len = 0;
    c->nrec = 0;
    c->off = 0;
    __atomic_store_n(&c->done, 0, __ATOMIC_RELAXED);
    s->refs++;
  }
  if (writer_state == 0)
    start_writer_locked();
  pthread_mutex_unlock(&q_lock);
  while (extra) {
    chunk *n = extra->next;
    free(extra);
    extra = n;
  }
  return c;
}

static void arm(void) {
  if (__atomic_exchange_n(&armed, 1, __ATOMIC_ACQ_REL))
    return;
  pthread_mutex_lock(&q_lock);
  start_writer_locked();
  pthread_cond_signal(&q_cond);
  pthread_mutex_unlock(&q_lock);
}

static void line_dropped(sinkobj *s) {
  __atomic_fetch_add(&n_dropped, 1, __ATOMIC_RELAXED);
  if (!__atomic_load_n(&s->said, __ATOMIC_RELAXED) &&
      !__atomic_exchange_n(&s->said, 1, __ATOMIC_ACQ_REL)) {
    char msg[640];
    snprintf(msg, sizeof msg,
             "phaseprobe: record lines to %s are not being taken (a reader "
             "that stopped reading, a stalled disk?): its %zu KiB buffer is "
             "full; lines that cannot be written are counted in pp.stats() "
             "(lines_dropped, line_failures), not reported again\n",
             s->t.name, s->buffer >> 10);
    post_notice(msg);
  }
}

static void line_add(const pp_record *r) {
  tbuf *t = tls_tb;
  if (!t && !(t = tb_new())) {
    __atomic_fetch_add(&n_dropped, 1, __ATOMIC_RELAXED);
    return;
  }
  tb_lock(t);
  /* read under the flag: a sink switch waits for every flag once after
   * publishing, so no line can be tagged with a replaced sink later */
  sinkobj *s = __atomic_load_n(&cur_pub, __ATOMIC_ACQUIRE);
  if (!s) {
    tb_unlock(t);
    return;
  }
  if (__atomic_load_n(&s->dead, __ATOMIC_RELAXED)) {
    tb_unlock(t);
    __atomic_fetch_add(&n_failed, 1, __ATOMIC_RELAXED);
    return;
  }
  const pp_schema *sch = r->schema;
  size_t ntags = pp_record_tags_len(r);
  size_t need = REC_BYTES(sch->nfields, ntags);
  chunk *c = t->c;
  if (!c || c->s != s || c->cap - c->len < need) {
    c = tb_refill(t, s, need);
    if (!c) {
      tb_unlock(t);
      line_dropped(s);
      return;
    }
    t->c = c;
  }
  /* the record, not its line: the writer formats it */
  rec_head *h = (rec_head *)(c->data + c->len);
  h->schema = sch;
  h->size = (uint32_t)need;
  h->ntags = (uint32_t)ntags;
  uint64_t *v = (uint64_t *)(h + 1);
  memcpy(v, r->values, sizeof(uint64_t) * sch->nfields);
  memcpy(v + sch->nfields, r->tags, ntags);
  c->len += need;
  c->nrec++;
  tb_unlock(t);
  /* A per-record sink (the reference's one write per record) has no
   * interval: once armed, the writer takes the record at once and writes
   * each line on its own; an emit wakes it only when it was not armed
   * already (one system call when it sleeps), and goes on. */
  if (!__atomic_load_n(&armed, __ATOMIC_RELAXED))
    arm();
}

void pp_sinks_deliver(const pp_record *r) {
  __atomic_fetch_add(&n_emitted, 1, __ATOMIC_RELAXED);
  if (__atomic_load_n(&cur_pub, __ATOMIC_RELAXED))
    line_add(r);
  pp_store_add(r);
  if (__builtin_expect(__atomic_load_n(&hook_set, __ATOMIC_ACQUIRE), 0)) {
    pthread_mutex_lock(&hook_lock);
    pp_record_hook h = hook;
    void *ud = hook_ud;
    pthread_mutex_unlock(&hook_lock);
    if (h)
      h(r, ud);
  }
}

PP_EXPORT void pp_set_record_hook(pp_record_hook fn, void *ud) {
  pthread_mutex_lock(&hook_lock);
  hook = fn;
  hook_ud = ud;
  __atomic_store_n(&hook_set, fn != NULL, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&hook_lock);
}

/* ---- configuration ---------------------------------------------------------- */
static void post_notice(const char *msg) {
  pthread_once(&once, init_once);
  pthread_mutex_lock(&q_lock);
  if (!notice_len) {
    snprintf(notice, sizeof notice, "%s", msg);
    notice_len = strlen(notice);
    start_writer_locked();
    pthread_cond_signal(&q_cond);
  }
  pthread_mutex_unlock(&q_lock);
}

void pp_sink_notice(const char *msg) { post_notice(msg); }

/* Makes s current (NULL: no line sink); what the replaced sink still holds
 * is written within GRACE_MS, then dropped and counted. */
static void sink_switch(sinkobj *s) {
  pthread_once(&once, init_once);
  pthread_mutex_lock(&q_lock);
  sinkobj *old = cur;
  cur = s;
  __atomic_store_n(&cur_pub, s, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&q_lock);
  /* every emit that might still hold the old sink finishes before this */
  pthread_mutex_lock(&reg_lock);
  for (tbuf *t = reg; t; t = t->next) {
    tb_lock(t);
    tb_unlock(t);
  }
  pthread_mutex_unlock(&reg_lock);
  if (old) {
    pthread_mutex_lock(&q_lock);
    old->refs--; /* its reference as the current sink */
    old->retired = 1;
    old->grace_until = pp_mono_ns() + (uint64_t)GRACE_MS * 1000000ull;
    old->next_retired = retired;
    retired = old;
    start_writer_locked();
    pthread_mutex_unlock(&q_lock);
    /* written (or given up) and closed before the caller goes on */
    pp_flush(GRACE_MS + STOP_MS);
  }
}

static sinkobj *sink_new(const pp_sink_opts *o) {
  sinkobj *s = calloc(1, sizeof *s);
  if (!s) {
    errno = ENOMEM;
    return NULL;
  }
  s->t.fd = -1;
  s->refs = 1;
  s->buffer = o && o->buffer ? o->buffer : DEFAULT_BUFFER;
  if (s->buffer < MIN_BUFFER)
    s->buffer = MIN_BUFFER;
  if (s->buffer > MAX_BUFFER)
    s->buffer = MAX_BUFFER;
  s->interval_ms = o && o->interval_ms ? o->interval_ms : DEFAULT_INTERVAL_MS;
  if (s->interval_ms > MAX_INTERVAL_MS)
    s->interval_ms = MAX_INTERVAL_MS;
  s->per_record = o && o->per_record;
  return s;
}

/* A new sink s, whose target took (rc 0) or not: it becomes the current
 * one, or goes, keeping the errno that says why. */
static int sink_install(sinkobj *s, int rc) {
  if (rc != 0) {
    int e = errno;
    free(s);
    errno = e;
    return -1;
  }
  sink_switch(s);
  return 0;
}

PP_EXPORT int pp_sink_fd_with(int fd, const pp_sink_opts *o) {
  if (fd < 0) {
    sink_switch(NULL);
    return 0;
  }
  sinkobj *s = sink_new(o);
  if (!s)
    return -1;
  int rc = pp_target_from_fd(fd, &s->t);
  if (rc == 0)
    pp_target_name_fd(&s->t, fd);
  return sink_install(s, rc);
}

PP_EXPORT int pp_sink_file_with(const char *path, const pp_sink_opts *o) {
  if (!path) {
    errno = EINVAL;
    return -1;
  }
  sinkobj *s = sink_new(o);
  if (!s)
    return -1;
  return sink_install(s, pp_target_from_path(path, &s->t));
}

PP_EXPORT int pp_sink_fd(int fd) { return pp_sink_fd_with(fd, NULL); }

PP_EXPORT int pp_sink_file(const char *path) {
  return pp_sink_file_with(path, NULL);
}

PP_EXPORT int pp_flush(unsigned timeout_ms) {
  pthread_once(&once, init_once);
  uint64_t deadline = pp_mono_ns() + (uint64_t)timeout_ms * 1000000ull;
  /* Records still waiting for their device timeline are completed first
   * (within the same timeout), so what was emitted before is written. */
  const pp_device_hooks *h = pp_device_hooks_get();
  if (h)
    h->drain(timeout_ms ? (uint64_t)timeout_ms * 1000000ull : 1);
  pthread_mutex_lock(&q_lock);
  if (writer_state == 0 && bytes_used == 0 && !retired && !notice_len) {
    pthread_mutex_unlock(&q_lock); /* nothing held anywhere */
    return 0;
  }
  uint64_t req = ++flush_req;
  start_writer_locked();
  pthread_cond_signal(&q_cond);
  struct timespec ts;
  pp_abs_time(&ts, deadline);
  while (flush_done < req && writer_state == 1)
    if (pthread_cond_timedwait(&done_cond, &q_lock, &ts) == ETIMEDOUT)
      break;
  int ok = flush_done >= req;
  pthread_mutex_unlock(&q_lock);
  if (!ok)
    errno = ETIMEDOUT;
  return ok ? 0 : -1;
}

/* ---- Lua states and the module's end ----------------------------------------- */
void pp_sink_state_open(void) {
  pthread_once(&once, init_once);
  pthread_mutex_lock(&q_lock);
  lua_states++;
  pthread_mutex_unlock(&q_lock);
}

/* A Lua state that loaded the module closes: its lines are flushed; the
 * last one stops the writer before lua_close dlcloses the module. */
void pp_sink_state_close(void) {
  pthread_mutex_lock(&q_lock);
  int last = --lua_states == 0;
  pthread_mutex_unlock(&q_lock);
  if (last)
    writer_stop(GRACE_MS);
  else
    pp_flush(GRACE_MS);
}

static void take_free(chunk *c) { free(c); }

static void free_chunk_list(chunk *c) {
  while (c) {
    chunk *n = c->next;
    free(c);
    c = n;
  }
}

/* Runs at dlclose and at exit: lines still buffered are written (at most
 * GRACE_MS), the writer is joined, and what it allocated is freed, unless
 * it is stuck, in which case the module is pinned and nothing is freed. */
__attribute__((destructor)) static void sink_fini(void) {
  if (writer_stop(GRACE_MS) != 0) {
    __atomic_store_n(&shut, 1, __ATOMIC_RELEASE);
    return;
  }
  __atomic_store_n(&shut, 1, __ATOMIC_RELEASE);
  /* no line sink from here; an emit already past that check finishes
   * before anything is freed (the flags below) */
  __atomic_store_n(&cur_pub, NULL, __ATOMIC_RELEASE);
  pthread_mutex_lock(&reg_lock);
  tbuf *gone = sweep_locked(take_free);
  pthread_mutex_unlock(&reg_lock);
  free_tbufs(gone);
  pthread_mutex_lock(&q_lock);
  free_chunk_list(q_head);
  q_head = q_tail = NULL;
  for (int k = 0; k < NCLASS; k++) {
    free_chunk_list(free_chunks[k]);
    free_chunks[k] = NULL;
  }
  wpos = wlen = 0;
  bytes_alloc = bytes_used = 0;
  sinkobj *r = retired;
  retired = NULL;
  sinkobj *c = cur;
  pthread_mutex_unlock(&q_lock);
  while (r) {
    sinkobj *n = r->next_retired;
    if (r->t.fd >= 0)
      close(r->t.fd);
    if (r != &default_sink)
      free(r);
    r = n;
  }
  if (c && c->t.fd >= 0) {
    close(c->t.fd);
    c->t.fd = -1;
  }
  if (c && c != &default_sink)
    free(c);
  cur = NULL;
  pp_notices_fini();
}

/* After fork() in the child: no writer thread exists there, and locks may
 * have been held by threads that do not. Lines buffered before the fork
 * belong to the parent, which writes them: the child forgets them. */
static void after_fork_child(void) {
  pthread_mutex_init(&q_lock, NULL);
  pthread_mutex_init(&reg_lock, NULL);
  pthread_mutex_init(&hook_lock, NULL);
  pp_notices_after_fork();
  pp_cond_init(&q_cond);
  pp_cond_init(&done_cond);
  for (tbuf *t = reg; t; t = t->next) {
    t->flag = 0;
    t->c = NULL;
  }
  q_head = q_tail = NULL;
  for (int k = 0; k < NCLASS; k++)
    free_chunks[k] = NULL;
  bytes_alloc = bytes_used = 0;
  wpos = wlen = 0;
  writer_state = 0;
  writer_finished = writer_detached = 0;
  stop_req = 0;
  armed = 0;
  flush_done = flush_req;
  notice_len = 0;
  for (sinkobj *s = retired; s; s = s->next_retired)
    s->refs = 0;
  if (cur)
    cur->refs = 1;
  pp_store_after_fork();
}

/* ---- statistics --------------------------------------------------------------- */
PP_EXPORT void pp_stats(pp_stats_t *out) {
  memset(out, 0, sizeof *out);
  out->emitted = __atomic_load_n(&n_emitted, __ATOMIC_RELAXED);
  pp_store_stats(&out->stored, &out->dropped);
  uint64_t pending = 0;
  pthread_mutex_lock(&reg_lock);
  for (tbuf *t = reg; t; t = t->next) {
    tb_lock(t);
    if (t->c)
      pending += t->c->nrec;
    tb_unlock(t);
  }
  pthread_mutex_unlock(&reg_lock);
  pthread_mutex_lock(&q_lock);
  for (chunk *c = q_head; c; c = c->next)
    pending += c->nrec - __atomic_load_n(&c->done, __ATOMIC_ACQUIRE);
  snprintf(out->sink, sizeof out->sink, "%s", cur ? cur->t.name : "none");
  pthread_mutex_unlock(&q_lock);
  out->lines_pending = pending;
  out->lines_written = __atomic_load_n(&n_written, __ATOMIC_RELAXED);
  out->lines_dropped = __atomic_load_n(&n_dropped, __ATOMIC_RELAXED);
  out->line_failures = __atomic_load_n(&n_failed, __ATOMIC_RELAXED);
  out->last_errno = __atomic_load_n(&last_err, __ATOMIC_RELAXED);
  out->abandoned = pp_abandoned_count();
  out->bad_starts = pp_bad_start_count();
}
