/*
 * sink.c: where an emitted record goes once pp_emit has captured it
 * (record.c): the line sink's emit path and the threads' buffers it fills,
 * the sink's configuration and lifetime, the record hook. A line's way is
 * emit -> its thread's buffer (here) -> the queue -> the writer thread
 * (sink_writer.c, which formats and writes) -> the target (sink_target.c,
 * also the notices'); the store is store.c.
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
 *  - A writer thread of this module (sink_writer.c) takes full chunks at
 *    once, and partly filled ones every interval_ms (default 50), at
 *    pp_flush() and when a Lua state closes (once it has written what it
 *    took before: so a thread's chunk is never taken for a record or two
 *    while a backlog waits), formats their lines (record.c's
 *    pp_line_format, the bytes pp_format_line gives) into a buffer of its
 *    own and writes them; a record stays in its chunk, and counts as held,
 *    until its whole line is written. It runs with every signal blocked (a vanished reader
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
 * Lock order: reg_lock -> a thread's buffer flag -> pp_sink_lock (the
 * queue's, sink_writer.c). Nothing is held across a write, an open or a
 * close.
 */
#define _GNU_SOURCE
#include "pp_internal.h"
#include "sink_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_BUFFER ((size_t)1 << 20)
#define MIN_BUFFER ((size_t)2 * CHUNK_MAX)
#define MAX_BUFFER ((size_t)1 << 30)
#define MAX_INTERVAL_MS 60000u

/* ---- state --------------------------------------------------------------- */
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

/* Chunks not in use, by size, and bytes of chunks allocated and of those in
 * use (a thread's or queued), under pp_sink_lock: in use never passes the
 * current sink's buffer, nor allocated for long. */
static chunk *free_chunks[NCLASS];
static size_t bytes_alloc, bytes_used;
static sinkobj default_sink = {
    .t = {.fd = -1, .kind = PP_TARGET_FILE, .name = "stderr"},
    .lazy = 1,
    .interval_ms = DEFAULT_INTERVAL_MS,
    .buffer = DEFAULT_BUFFER,
    .refs = 1,
};
static sinkobj *cur = &default_sink;     /* pp_sink_lock               */
static sinkobj *cur_pub = &default_sink; /* atomic copy for emitters   */
int pp_sink_shut;      /* atomic: the module is going away */
static int lua_states; /* pp_sink_lock */
pp_sink_counts pp_sink_n;

static pp_record_hook hook;
static void *hook_ud;
static int hook_set; /* atomic */
static pthread_mutex_t hook_lock = PTHREAD_MUTEX_INITIALIZER;

static void after_fork_child(void);

static void init_once(void) {
  pp_sink_writer_init();
  pthread_atfork(NULL, NULL, after_fork_child);
}

void pp_sink_init(void) { pthread_once(&once, init_once); }

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

/* ---- the threads' buffers --------------------------------------------------- */
/* pp_sink_lock held. */
void pp_sink_chunk_release_locked(chunk *c) {
  sinkobj *s = c->s;
  c->s = NULL;
  c->next = free_chunks[c->cls];
  free_chunks[c->cls] = c;
  bytes_used -= c->cap;
  if (s)
    s->refs--;
}

size_t pp_sink_bytes_used_locked(void) { return bytes_used; }

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
  pthread_mutex_lock(&pp_sink_lock);
  if (c->len)
    pp_sink_queue_push_locked(c);
  else
    pp_sink_chunk_release_locked(c);
  pthread_mutex_unlock(&pp_sink_lock);
}

void pp_sink_collect(void) {
  pthread_mutex_lock(&reg_lock);
  tbuf *gone = sweep_locked(take_queue);
  pthread_mutex_unlock(&reg_lock);
  free_tbufs(gone);
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
  pp_sink_arm_if_running();
}

static tbuf *tb_new(void) {
  pp_sink_init();
  if (__atomic_load_n(&pp_sink_shut, __ATOMIC_ACQUIRE))
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

/* pp_sink_lock held: free chunks go to *extra (freed by the caller, outside the
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
  pthread_mutex_lock(&pp_sink_lock);
  size_t budget = s->buffer;
  if (t->c) {
    if (t->c->len) {
      /* The writer comes within the interval anyway (this thread armed it
       * with its first line); it is woken early, at the cost of a system
       * call here, only when half the buffer is in use. */
      if (t->c->s == s && t->cls < NCLASS - 1)
        t->cls++; /* filled: a bigger one next */
      pp_sink_queue_push_locked(t->c);
      if (2 * bytes_used >= budget)
        pp_sink_wake_locked();
    } else {
      pp_sink_chunk_release_locked(t->c);
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
      pthread_mutex_unlock(&pp_sink_lock);
      c = malloc(sizeof *c + cap);
      pthread_mutex_lock(&pp_sink_lock);
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
  pp_sink_writer_start_locked();
  pthread_mutex_unlock(&pp_sink_lock);
  while (extra) {
    chunk *n = extra->next;
    free(extra);
    extra = n;
  }
  return c;
}

static void line_dropped(sinkobj *s) {
  __atomic_fetch_add(&pp_sink_n.dropped, 1, __ATOMIC_RELAXED);
  if (!__atomic_load_n(&s->said, __ATOMIC_RELAXED) &&
      !__atomic_exchange_n(&s->said, 1, __ATOMIC_ACQ_REL)) {
    char msg[640];
    snprintf(msg, sizeof msg,
             "phaseprobe: record lines to %s are not being taken (a reader "
             "that stopped reading, a stalled disk?): its %zu KiB buffer is "
             "full; lines that cannot be written are counted in pp.stats() "
             "(lines_dropped, line_failures), not reported again\n",
             s->t.name, s->buffer >> 10);
    pp_sink_notice(msg);
  }
}

static void line_add(const pp_record *r) {
  tbuf *t = tls_tb;
  if (!t && !(t = tb_new())) {
    __atomic_fetch_add(&pp_sink_n.dropped, 1, __ATOMIC_RELAXED);
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
    __atomic_fetch_add(&pp_sink_n.failed, 1, __ATOMIC_RELAXED);
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
  if (!__atomic_load_n(&pp_sink_armed, __ATOMIC_RELAXED))
    pp_sink_arm();
}

void pp_sinks_deliver(const pp_record *r) {
  __atomic_fetch_add(&pp_sink_n.emitted, 1, __ATOMIC_RELAXED);
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
unsigned pp_sink_interval_locked(void) {
  return !cur ? DEFAULT_INTERVAL_MS : cur->per_record ? 0 : cur->interval_ms;
}

void pp_sink_close(sinkobj *s) {
  if (s->t.fd >= 0)
    close(s->t.fd);
  if (s != &default_sink)
    free(s);
  else
    s->t.fd = -1;
}

/* Makes s current (NULL: no line sink); what the replaced sink still holds
 * is written within GRACE_MS, then dropped and counted. */
static void sink_switch(sinkobj *s) {
  pp_sink_init();
  pthread_mutex_lock(&pp_sink_lock);
  sinkobj *old = cur;
  cur = s;
  __atomic_store_n(&cur_pub, s, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&pp_sink_lock);
  /* every emit that might still hold the old sink finishes before this */
  pthread_mutex_lock(&reg_lock);
  for (tbuf *t = reg; t; t = t->next) {
    tb_lock(t);
    tb_unlock(t);
  }
  pthread_mutex_unlock(&reg_lock);
  if (old) {
    pthread_mutex_lock(&pp_sink_lock);
    pp_sink_retire_locked(old);
    pp_sink_writer_start_locked();
    pthread_mutex_unlock(&pp_sink_lock);
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

/* ---- Lua states and the module's end ----------------------------------------- */
void pp_sink_state_open(void) {
  pp_sink_init();
  pthread_mutex_lock(&pp_sink_lock);
  lua_states++;
  pthread_mutex_unlock(&pp_sink_lock);
}

/* A Lua state that loaded the module closes: its lines are flushed; the
 * last one stops the writer before lua_close dlcloses the module. */
void pp_sink_state_close(void) {
  pthread_mutex_lock(&pp_sink_lock);
  int last = --lua_states == 0;
  pthread_mutex_unlock(&pp_sink_lock);
  if (last)
    pp_sink_writer_stop(GRACE_MS);
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
  if (pp_sink_writer_stop(GRACE_MS) != 0) {
    __atomic_store_n(&pp_sink_shut, 1, __ATOMIC_RELEASE);
    return;
  }
  __atomic_store_n(&pp_sink_shut, 1, __ATOMIC_RELEASE);
  /* no line sink from here; an emit already past that check finishes
   * before anything is freed (the flags below) */
  __atomic_store_n(&cur_pub, NULL, __ATOMIC_RELEASE);
  pthread_mutex_lock(&reg_lock);
  tbuf *gone = sweep_locked(take_free);
  pthread_mutex_unlock(&reg_lock);
  free_tbufs(gone);
  pthread_mutex_lock(&pp_sink_lock);
  sinkobj *r;
  free_chunk_list(pp_sink_writer_fini_locked(&r));
  for (int k = 0; k < NCLASS; k++) {
    free_chunk_list(free_chunks[k]);
    free_chunks[k] = NULL;
  }
  bytes_alloc = bytes_used = 0;
  sinkobj *c = cur;
  pthread_mutex_unlock(&pp_sink_lock);
  while (r) {
    sinkobj *n = r->next_retired;
    pp_sink_close(r);
    r = n;
  }
  if (c)
    pp_sink_close(c);
  cur = NULL;
  pp_notices_fini();
}

/* After fork() in the child: no writer thread exists there, and locks may
 * have been held by threads that do not. Lines buffered before the fork
 * belong to the parent, which writes them: the child forgets them. */
static void after_fork_child(void) {
  pp_sink_writer_after_fork();
  pthread_mutex_init(&reg_lock, NULL);
  pthread_mutex_init(&hook_lock, NULL);
  pp_notices_after_fork();
  for (tbuf *t = reg; t; t = t->next) {
    t->flag = 0;
    t->c = NULL;
  }
  for (int k = 0; k < NCLASS; k++)
    free_chunks[k] = NULL;
  bytes_alloc = bytes_used = 0;
  if (cur)
    cur->refs = 1;
  pp_store_after_fork();
}

/* ---- statistics --------------------------------------------------------------- */
PP_EXPORT void pp_stats(pp_stats_t *out) {
  memset(out, 0, sizeof *out);
  out->emitted = __atomic_load_n(&pp_sink_n.emitted, __ATOMIC_RELAXED);
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
  pthread_mutex_lock(&pp_sink_lock);
  pending += pp_sink_queue_pending_locked();
  snprintf(out->sink, sizeof out->sink, "%s", cur ? cur->t.name : "none");
  pthread_mutex_unlock(&pp_sink_lock);
  out->lines_pending = pending;
  out->lines_written = __atomic_load_n(&pp_sink_n.written, __ATOMIC_RELAXED);
  out->lines_dropped = __atomic_load_n(&pp_sink_n.dropped, __ATOMIC_RELAXED);
  out->line_failures = __atomic_load_n(&pp_sink_n.failed, __ATOMIC_RELAXED);
  out->last_errno = __atomic_load_n(&pp_sink_n.last_err, __ATOMIC_RELAXED);
  out->abandoned = pp_abandoned_count();
  out->bad_starts = pp_bad_start_count();
}
