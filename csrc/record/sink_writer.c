/*
 * sink_writer.c: the line sink's queue and its writer thread. Threads'
 * chunks of records (sink.c) are queued here; the writer takes them in
 * order, formats their lines (record.c's pp_line_format) into a buffer of
 * its own and writes them on the sink's target (sink_target.c), never
 * blocking: the flow is emit -> the thread's buffer (sink.c) -> the queue
 * -> the writer thread (here) -> the target. Also here: the writer's start
 * and stop, pp_flush (what it waits for), the notices it writes, and the
 * replaced sinks it closes once nothing refers to them. sink.c's opening
 * comment says what the line sink promises, and the lock order.
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

#define WBUF_BYTES 65536 /* the writer formats this much at a time, and a line */

/* ---- state --------------------------------------------------------------- */
pthread_mutex_t pp_sink_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cond;    /* the writer waits here     */
static pthread_cond_t done_cond; /* flushers wait here        */
static chunk *q_head, *q_tail;
static sinkobj *retired; /* replaced, closed once nothing refers to them */
int pp_sink_armed; /* atomic: lines wait in thread buffers */
static uint64_t flush_req, flush_done;
static char notice[640];
static size_t notice_len;

static pthread_t writer;
static int writer_state; /* 0 none, 1 running, 2 stopping (pp_sink_lock) */
static int writer_finished, writer_detached;
static int stop_req;           /* atomic */
static uint64_t stop_deadline; /* atomic */

/* The writer's lines: formatted from the records of the chunk it writes
 * (the queue's head, until done with it), written from wpos to wlen. Only
 * the writer thread touches them. */
static char wbuf[WBUF_BYTES + PP_LINE_BYTES];
static size_t wpos, wlen;

void pp_sink_writer_init(void) {
  pp_cond_init(&q_cond);
  pp_cond_init(&done_cond);
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

/* The rest of the chunk (the lines formatted from it and not yet written,
 * and its records not yet formatted) will not be written: counted as failed
 * or dropped. */
static void give_up_rest(chunk *c, int failed, int err) {
  uint64_t k = c->nrec - __atomic_load_n(&c->done, __ATOMIC_RELAXED);
  __atomic_fetch_add(failed ? &pp_sink_n.failed : &pp_sink_n.dropped, k,
                     __ATOMIC_RELAXED);
  if (failed)
    __atomic_store_n(&pp_sink_n.last_err, err, __ATOMIC_RELAXED);
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
 * pp_sink_lock; `retired` and `grace_until` are the sink's, read under
 * pp_sink_lock when the chunk was taken. */
static int write_chunk(chunk *c, int retired_now, uint64_t grace_until) {
  sinkobj *s = c->s;
  if (s->lazy && s->t.fd < 0 && pp_target_from_fd(2, &s->t) != 0) {
    give_up_rest(c, 1, errno);
    return 1;
  }
  if (__atomic_load_n(&s->dead, __ATOMIC_ACQUIRE)) {
    give_up_rest(c, 1, __atomic_load_n(&pp_sink_n.last_err, __ATOMIC_RELAXED));
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
      __atomic_fetch_add(&pp_sink_n.written, k, __ATOMIC_RELAXED);
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

/* ---- the queue ------------------------------------------------------------ */
/* pp_sink_lock held. */
void pp_sink_queue_push_locked(chunk *c) {
  c->next = NULL;
  if (q_tail)
    q_tail->next = c;
  else
    q_head = c;
  q_tail = c;
}

/* pp_sink_lock held. */
uint64_t pp_sink_queue_pending_locked(void) {
  uint64_t pending = 0;
  for (chunk *c = q_head; c; c = c->next)
    pending += c->nrec - __atomic_load_n(&c->done, __ATOMIC_ACQUIRE);
  return pending;
}

void pp_sink_wake_locked(void) { pthread_cond_signal(&q_cond); }

static void *writer_main(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "phaseprobe-sink");
  uint64_t armed_at = 0, collected_for = 0;
  int stop_collected = 0;
  pthread_mutex_lock(&pp_sink_lock);
  for (;;) {
    uint64_t now = pp_mono_ns();
    int stopping = __atomic_load_n(&stop_req, __ATOMIC_ACQUIRE);
    uint64_t req = flush_req;
    int collect;
    if (stopping) {
      collect = !stop_collected; /* a stop collects once, then drains */
    } else {
      collect = req != collected_for;
      if (__atomic_load_n(&pp_sink_armed, __ATOMIC_ACQUIRE)) {
        if (!armed_at)
          armed_at = now;
        if (now >= armed_at + (uint64_t)pp_sink_interval_locked() * 1000000ull)
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
      __atomic_store_n(&pp_sink_armed, 0, __ATOMIC_RELEASE);
      armed_at = 0;
      pthread_mutex_unlock(&pp_sink_lock);
      pp_sink_collect();
      pthread_mutex_lock(&pp_sink_lock);
      collected_for = req;
      stop_collected = stopping;
      continue;
    }
    if (notice_len) {
      char msg[sizeof notice];
      memcpy(msg, notice, notice_len + 1);
      notice_len = 0;
      pthread_mutex_unlock(&pp_sink_lock);
      pp_notice_say(msg);
      pthread_mutex_lock(&pp_sink_lock);
      continue;
    }
    if (q_head) {
      chunk *c = q_head;
      int was_retired = c->s->retired;
      uint64_t grace = c->s->grace_until;
      pthread_mutex_unlock(&pp_sink_lock);
      int done = write_chunk(c, was_retired, grace);
      pthread_mutex_lock(&pp_sink_lock);
      if (done) {
        q_head = c->next;
        if (!q_head)
          q_tail = NULL;
        pp_sink_chunk_release_locked(c);
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
      pthread_mutex_unlock(&pp_sink_lock);
      pp_sink_close(s);
      pthread_mutex_lock(&pp_sink_lock);
      continue;
    }
    if (flush_done < collected_for) {
      flush_done = collected_for;
      pthread_cond_broadcast(&done_cond);
    }
    if (stopping)
      break;
    if (__atomic_load_n(&pp_sink_armed, __ATOMIC_ACQUIRE)) {
      if (!armed_at)
        armed_at = now;
      struct timespec ts;
      pp_abs_time(&ts,
                  armed_at + (uint64_t)pp_sink_interval_locked() * 1000000ull);
      pthread_cond_timedwait(&q_cond, &pp_sink_lock, &ts);
    } else if (flush_req == collected_for) {
      pthread_cond_wait(&q_cond, &pp_sink_lock);
    }
  }
  writer_finished = 1;
  if (writer_detached) {
    writer_state = 0;
    writer_detached = 0;
  }
  pthread_mutex_unlock(&pp_sink_lock);
  return NULL;
}

/* ---- the writer's life and what it is asked to do ------------------------- */
/* pp_sink_lock held. */
void pp_sink_writer_start_locked(void) {
  if (writer_state != 0 || __atomic_load_n(&pp_sink_shut, __ATOMIC_ACQUIRE))
    return;
  __atomic_store_n(&stop_req, 0, __ATOMIC_RELEASE);
  writer_finished = 0;
  writer_detached = 0;
  if (pp_own_thread(&writer, writer_main, NULL) == 0)
    writer_state = 1;
}

/* Stops the writer after a flush of at most timeout_ms, and joins it within
 * STOP_MS more. 0: no writer thread remains. */
int pp_sink_writer_stop(unsigned timeout_ms) {
  pp_flush(timeout_ms);
  pthread_mutex_lock(&pp_sink_lock);
  if (writer_state != 1) {
    int none = writer_state == 0;
    pthread_mutex_unlock(&pp_sink_lock);
    return none ? 0 : -1;
  }
  writer_state = 2;
  uint64_t deadline = pp_mono_ns() + (uint64_t)STOP_MS * 1000000ull;
  __atomic_store_n(&stop_deadline, deadline, __ATOMIC_RELAXED);
  __atomic_store_n(&stop_req, 1, __ATOMIC_RELEASE);
  pthread_cond_signal(&q_cond);
  pthread_mutex_unlock(&pp_sink_lock);
  /* pthread_timedjoin_np takes a CLOCK_REALTIME deadline */
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t rt = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec +
                (uint64_t)(STOP_MS + FINISH_MS + 200) * 1000000ull;
  pp_abs_time(&ts, rt);
  if (pthread_timedjoin_np(writer, NULL, &ts) == 0) {
    pthread_mutex_lock(&pp_sink_lock);
    writer_state = 0;
    __atomic_store_n(&stop_req, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&pp_sink_lock);
    return 0;
  }
  /* Held in a write that does not return (a stalled disk): it goes when
   * the write returns; until then the module stays mapped. */
  pp_pin_module();
  pthread_mutex_lock(&pp_sink_lock);
  pthread_detach(writer);
  if (writer_finished) {
    writer_state = 0;
  } else {
    writer_detached = 1;
  }
  pthread_mutex_unlock(&pp_sink_lock);
  return -1;
}

void pp_sink_arm(void) {
  if (__atomic_exchange_n(&pp_sink_armed, 1, __ATOMIC_ACQ_REL))
    return;
  pthread_mutex_lock(&pp_sink_lock);
  pp_sink_writer_start_locked();
  pthread_cond_signal(&q_cond);
  pthread_mutex_unlock(&pp_sink_lock);
}

void pp_sink_arm_if_running(void) {
  pthread_mutex_lock(&pp_sink_lock);
  if (writer_state == 1) {
    __atomic_store_n(&pp_sink_armed, 1, __ATOMIC_RELEASE);
    pthread_cond_signal(&q_cond);
  }
  pthread_mutex_unlock(&pp_sink_lock);
}

void pp_sink_notice(const char *msg) {
  pp_sink_init();
  pthread_mutex_lock(&pp_sink_lock);
  if (!notice_len) {
    snprintf(notice, sizeof notice, "%s", msg);
    notice_len = strlen(notice);
    pp_sink_writer_start_locked();
    pthread_cond_signal(&q_cond);
  }
  pthread_mutex_unlock(&pp_sink_lock);
}

void pp_sink_retire_locked(sinkobj *old) {
  old->refs--; /* its reference as the current sink */
  old->retired = 1;
  old->grace_until = pp_mono_ns() + (uint64_t)GRACE_MS * 1000000ull;
  old->next_retired = retired;
  retired = old;
}

PP_EXPORT int pp_flush(unsigned timeout_ms) {
  pp_sink_init();
  uint64_t deadline = pp_mono_ns() + (uint64_t)timeout_ms * 1000000ull;
  /* Records still waiting for their device timeline are completed first
   * (within the same timeout), so what was emitted before is written. */
  const pp_device_hooks *h = pp_device_hooks_get();
  if (h)
    h->drain(timeout_ms ? (uint64_t)timeout_ms * 1000000ull : 1);
  pthread_mutex_lock(&pp_sink_lock);
  if (writer_state == 0 && pp_sink_bytes_used_locked() == 0 && !retired &&
      !notice_len) {
    pthread_mutex_unlock(&pp_sink_lock); /* nothing held anywhere */
    return 0;
  }
  uint64_t req = ++flush_req;
  pp_sink_writer_start_locked();
  pthread_cond_signal(&q_cond);
  struct timespec ts;
  pp_abs_time(&ts, deadline);
  while (flush_done < req && writer_state == 1)
    if (pthread_cond_timedwait(&done_cond, &pp_sink_lock, &ts) == ETIMEDOUT)
      break;
  int ok = flush_done >= req;
  pthread_mutex_unlock(&pp_sink_lock);
  if (!ok)
    errno = ETIMEDOUT;
  return ok ? 0 : -1;
}

/* ---- the module's end, fork ------------------------------------------------- */
chunk *pp_sink_writer_fini_locked(sinkobj **gone) {
  chunk *queued = q_head;
  q_head = q_tail = NULL;
  wpos = wlen = 0;
  *gone = retired;
  retired = NULL;
  return queued;
}

void pp_sink_writer_after_fork(void) {
  pthread_mutex_init(&pp_sink_lock, NULL);
  pp_cond_init(&q_cond);
  pp_cond_init(&done_cond);
  q_head = q_tail = NULL;
  wpos = wlen = 0;
  writer_state = 0;
  writer_finished = writer_detached = 0;
  stop_req = 0;
  pp_sink_armed = 0;
  flush_done = flush_req;
  notice_len = 0;
  for (sinkobj *s = retired; s; s = s->next_retired)
    s->refs = 0;
}
