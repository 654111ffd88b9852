/*
 * cupti.c: CUPTI as the device timeline of a dispatch (see pp_cupti.h): the
 * spans. Loading libcupti is cupti_loader.c; turning collection on and off
 * (CUPTI's callbacks registered, the flusher thread) is cupti_collect.c; a
 * complete span's timeline and record, cupti_timeline.c.
 *
 * Built with the CUPTI headers (PP_HAVE_CUPTI_H, which the Makefile sets
 * only beside PP_HAVE_CUDA_H); without them every entry point says why
 * CUPTI is absent. Global state: the span and correlation tables
 * (allocated at the first start) and their counters.
 *
 * The flow. A window's launch loop runs inside a span. A driver launch
 * callback (CUPTI's callback API, on the launching thread) notes each launch
 * call's correlation id and probe-clock time in the span, and files the
 * correlation id in `corr_tab` (indexed by its low bits: ids grow by one per
 * API call, so a slot is reused only CORR_SLOTS calls later). CUPTI writes a
 * kernel record per launch, start and end already on the probe clock (our
 * timestamp callback), into a buffer it hands back when the buffer is
 * flushed: the flusher thread flushes every flush_ms while any span waits.
 * buffer_completed looks each kernel up by correlation id and files its
 * times in the span. A span is complete when its window has closed and every
 * launch's kernel has come; then its timeline is computed and, if a dispatch
 * took it, that dispatch's record is filled and delivered to the sinks from
 * whichever thread completed it (the flusher, a waiter, or the emitting
 * thread itself when the kernels came first).
 *
 * Locking: `tab_lock` guards the tables and the counters; CUPTI is never
 * called and no record is delivered while it is held. cupti_collect.c's
 * `ctl_lock` guards start/stop and the flusher's life (taken first where
 * both are held).
 */
#include "cupti_internal.h"

#include <string.h>

#if defined(PP_HAVE_CUPTI_H) && defined(PP_HAVE_CUDA_H)

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <time.h>

#define CORR_SLOTS (1u << 16)
#define BUF_BYTES ((size_t)256 << 10)
#define BUF_KEEP 8
#define GIVE_UP_NS 2000000000ull     /* a closed span waits at most 2 s,    */
#define UNCLAIMED_NS 10000000000ull  /* and, complete, 10 s for its dispatch */
#define FORCE_AFTER_NS 1000000000ull /* then a forced flush after 1 s       */

/* ---- tables ------------------------------------------------------------------ */
typedef struct {
  uint32_t corr;  /* CUPTI's correlation id of the launch call             */
  uint32_t index; /* the launch's place in its span                        */
  uint64_t span;  /* the span id (0: slot empty)                            */
} corr_slot;

static pthread_mutex_t tab_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t tab_cond = PTHREAD_COND_INITIALIZER; /* spans done    */
static corr_slot *corr_tab;  /* CORR_SLOTS, allocated at the first start    */
static pp_cupti_span *spans; /* SPAN_SLOTS                                 */
static uint64_t span_seq = 1;
/* The free slots, oldest freed first: a span's start takes one at once,
 * however many wait, and a slot is reused as late as possible. */
static unsigned free_slot[SPAN_SLOTS], free_head, nfree;
static uint64_t npending;    /* spans not free                               */
static pp_cupti_stats stats; /* under tab_lock (starts: cupti_collect.c)    */
static uint8_t *buf_free[BUF_KEEP];
static size_t nbuf_free;

static __thread uint64_t tls_span; /* this thread's open span, or 0          */
/* The launch call this thread is inside: its span and place there, so its
 * return is noted without the table lock: the span stays open until this
 * thread, its owner, closes or releases it after the call returned, and is
 * read only then (pp_cupti.h: a span is ended, closed and released by the
 * thread that began it). */
static __thread pp_cupti_span *tls_call_span;
static __thread uint64_t tls_call_id, tls_call_index;

static pp_cupti_span *span_of(uint64_t id) {
  if (!id || !spans)
    return NULL;
  pp_cupti_span *s = &spans[id & (SPAN_SLOTS - 1)];
  return s->id == id ? s : NULL;
}

static void span_free(pp_cupti_span *s) {
  memset(s, 0, offsetof(pp_cupti_span, launch));
  npending--;
  free_slot[(free_head + nfree++) & (SPAN_SLOTS - 1)] = (unsigned)(s - spans);
}

/* Writes a byte in each page of a fresh allocation, so that its page faults
 * come now rather than at the first use of each span slot or correlation
 * slot: those uses are on the dispatch's path (a span's start, the launch
 * callback). A span's start on a fresh slot cost 2.3 us on the development
 * machine against 30 ns on a used one, and 4 to 8 us on the H200 machines,
 * virtual machines both (make truth, part 2c, "spin to loop"). */
static void touch_pages(void *p, size_t bytes) {
  volatile unsigned char *b = p;
  for (size_t o = 0; o < bytes; o += 4096)
    b[o] = 0;
}

int pp_cupti_tables_init(char *why, size_t whylen) {
  if (corr_tab)
    return 0;
  corr_slot *t = calloc(CORR_SLOTS, sizeof *t);
  pp_cupti_span *sp = calloc(SPAN_SLOTS, sizeof *sp);
  if (!t || !sp) {
    free(t);
    free(sp);
    return pp_fail(why, whylen,
                   "CUPTI: out of host memory for the span tables");
  }
  touch_pages(t, CORR_SLOTS * sizeof *t);
  touch_pages(sp, SPAN_SLOTS * sizeof *sp);
  pthread_mutex_lock(&tab_lock);
  corr_tab = t;
  spans = sp;
  for (unsigned i = 0; i < SPAN_SLOTS; i++)
    free_slot[i] = i;
  free_head = 0;
  nfree = SPAN_SLOTS;
  pthread_mutex_unlock(&tab_lock);
  return 0;
}

/* ---- completion --------------------------------------------------------------- */
/* Spans completed under tab_lock, delivered after it is released. */
typedef struct {
  pp_record rec;
} done_rec;

static int span_complete(const pp_cupti_span *s) {
  return s->state == SPAN_CLOSED && s->received >= s->nlaunch;
}

/* With tab_lock held: a complete span's record (if one waits) is copied out
 * for delivery and the span is freed, unless someone still has to come for
 * its timeline (a dispatch not emitted yet, or a waiter). Returns 1 when a
 * record was copied to *out. */
static int settle(pp_cupti_span *s, pp_record *out) {
  if ((s->mode == PP_CUPTI_TO_DISPATCH && !s->has_record) ||
      s->mode == PP_CUPTI_KEEP)
    return 0;
  int deliver = 0;
  if (s->has_record) {
    pp_cupti_timeline t;
    pp_cupti_timeline_of(s, &t);
    *out = s->rec;
    pp_cupti_fill_record(out, &t, s->keep_window);
    stats.deferred++;
    deliver = 1;
  }
  span_free(s);
  pthread_cond_broadcast(&tab_cond);
  return deliver;
}

/* With tab_lock held: gives the span its mode; a complete one settles now.
 * Returns 1 when a record was copied to *out for delivery. */
static int set_mode(pp_cupti_span *s, int mode, pp_record *out) {
  s->mode = mode;
  return span_complete(s) ? settle(s, out) : 0;
}

/* Gives up on a span whose kernels did not all come (with tab_lock held):
 * it completes with what came, marked incomplete, so its record says it has
 * no kernel time (kernel_src=none). */
static int give_up(pp_cupti_span *s, pp_record *out) {
  stats.incomplete++;
  s->nlaunch = s->received;
  s->untimed++;
  return settle(s, out);
}

/* ---- CUPTI's callbacks ---------------------------------------------------------- */
void CUPTIAPI pp_cupti_buffer_requested(uint8_t **buffer, size_t *size,
                                        size_t *max_records) {
  uint8_t *b = NULL;
  pthread_mutex_lock(&tab_lock);
  if (nbuf_free)
    b = buf_free[--nbuf_free];
  pthread_mutex_unlock(&tab_lock);
  if (!b)
    b = aligned_alloc(ACTIVITY_RECORD_ALIGNMENT, BUF_BYTES);
  *buffer = b;
  *size = b ? BUF_BYTES : 0;
  *max_records = 0;
}

/* tab_lock on the dispatch's own paths (a span's start, the launch
 * callback): a wait there is time the dispatch spends before or inside its
 * launch call, so it is counted (cupti_info().lock_waits, lock_wait_ns). */
static void lock_on_dispatch_path(void) {
  if (pthread_mutex_trylock(&tab_lock) == 0)
    return;
  uint64_t t0 = pp_now_ns();
  pthread_mutex_lock(&tab_lock);
  stats.lock_waits++;
  stats.lock_wait_ns += pp_cupti_since(pp_now_ns(), t0);
}

/* With tab_lock held. */
static void on_kernel(uint32_t corr, uint64_t start, uint64_t end,
                      pp_cupti_span **done, size_t *ndone, size_t cap) {
  stats.kernels++;
  if (!corr_tab)
    return;
  corr_slot *c = &corr_tab[corr & (CORR_SLOTS - 1)];
  if (c->corr != corr || !c->span)
    return; /* a kernel launched outside any span */
  pp_cupti_span *s = span_of(c->span);
  uint32_t i = c->index;
  c->span = 0;
  if (!s) {
    stats.lost++; /* its span was given up on and reused */
    return;
  }
  stats.matched++;
  s->received++;
  if (!start || end <= start) {
    s->untimed++;
    if (i < SPAN_LAUNCHES) /* the slot may hold an earlier span's times */
      s->start[i] = s->end[i] = 0;
  } else {
    s->sum = pp_sat_add(s->sum, end - start);
    if (!s->first_start || start < s->first_start)
      s->first_start = start;
    if (end > s->last_end)
      s->last_end = end;
    if (i < SPAN_LAUNCHES) {
      s->start[i] = start;
      s->end[i] = end;
    }
  }
  if (span_complete(s) && *ndone < cap)
    done[(*ndone)++] = s;
}

static void deliver_all(pp_record *recs, size_t n) {
  for (size_t i = 0; i < n; i++)
    pp_sinks_deliver(&recs[i]);
}

void CUPTIAPI pp_cupti_buffer_completed(CUcontext ctx, uint32_t stream,
                                        uint8_t *buffer, size_t size,
                                        size_t valid) {
  (void)ctx;
  (void)stream;
  (void)size;
  if (!buffer)
    return;
  const pp_cupti_api *api = pp_cupti_lib();
  size_t dropped = 0;
  if (api->ActivityGetNumDroppedRecords &&
      api->ActivityGetNumDroppedRecords(NULL, 0, &dropped) != CUPTI_SUCCESS)
    dropped = 0;
  enum { CAP = 64 };
  pp_cupti_span *done[CAP];
  size_t ndone = 0;
  pp_record *out = NULL;
  size_t nout = 0;
  pthread_mutex_lock(&tab_lock);
  stats.buffers++;
  stats.buffer_bytes += valid;
  stats.dropped += dropped;
  CUpti_Activity *r = NULL;
  while (valid && api->ActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
    stats.records++;
    if (r->kind == CUPTI_ACTIVITY_KIND_KERNEL ||
        r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
      const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)r;
      on_kernel(k->correlationId, k->start, k->end, done, &ndone, CAP);
      if (ndone == CAP) { /* settle what is done so far */
        pp_record *grown = realloc(out, (nout + CAP) * sizeof *out);
        if (grown) {
          out = grown;
          for (size_t i = 0; i < ndone; i++)
            nout += (size_t)settle(done[i], &out[nout]);
        }
        ndone = 0;
      }
    }
  }
  if (ndone) {
    pp_record *grown = realloc(out, (nout + ndone) * sizeof *out);
    if (grown) {
      out = grown;
      for (size_t i = 0; i < ndone; i++)
        nout += (size_t)settle(done[i], &out[nout]);
    }
  }
  if (nbuf_free < BUF_KEEP) {
    buf_free[nbuf_free++] = buffer;
    buffer = NULL;
  }
  pthread_mutex_unlock(&tab_lock);
  free(buffer);
  deliver_all(out, nout);
  free(out);
}

/* Launch calls of the thread's open span: correlation id and host time. */
void CUPTIAPI pp_cupti_on_launch(void *ud, CUpti_CallbackDomain domain,
                                 CUpti_CallbackId cbid, const void *data) {
  (void)ud;
  (void)domain;
  (void)cbid;
  const CUpti_CallbackData *cb = data;
  uint64_t id = tls_span;
  if (!id)
    return;
  if (cb->callbackSite != CUPTI_API_ENTER) {
    pp_cupti_span *s = tls_call_span;
    tls_call_span = NULL;
    if (s && tls_call_id == id)
      s->ret[tls_call_index] = pp_now_ns();
    return;
  }
  uint64_t now = pp_now_ns();
  tls_call_span = NULL; /* a call whose exit never came notes nothing */
  lock_on_dispatch_path();
  pp_cupti_span *s = span_of(id);
  if (s && s->state == SPAN_OPEN) {
    uint64_t i = s->nlaunch++;
    stats.launches++;
    if (i < SPAN_LAUNCHES) {
      s->launch[i] = now;
      s->ret[i] = 0;
      tls_call_span = s;
      tls_call_id = id;
      tls_call_index = i;
    }
    corr_slot *c = &corr_tab[cb->correlationId & (CORR_SLOTS - 1)];
    c->corr = cb->correlationId;
    c->span = id;
    c->index = i < UINT32_MAX ? (uint32_t)i : UINT32_MAX;
  }
  pthread_mutex_unlock(&tab_lock);
}

/* ---- the probe's hooks: a dispatch's record waits for its timeline ---------- */
/* pp_emit with a span linked to the dispatch: 1 when the span keeps the
 * record to deliver it later, 0 when the timeline was there and *r is
 * filled (pp_emit delivers it). */
static int defer_record(uint64_t id, pp_record *r, int keep_window) {
  pthread_mutex_lock(&tab_lock);
  pp_cupti_span *s = span_of(id);
  if (!s) {
    pthread_mutex_unlock(&tab_lock);
    r->values[r->schema->f_ksrc] = PP_KSRC_NONE;
    return 0;
  }
  if (span_complete(s)) {
    pp_cupti_timeline t;
    pp_cupti_timeline_of(s, &t);
    pp_cupti_fill_record(r, &t, keep_window);
    span_free(s);
    pthread_cond_broadcast(&tab_cond);
    pthread_mutex_unlock(&tab_lock);
    return 0;
  }
  s->rec = *r;
  s->has_record = 1;
  s->keep_window = keep_window;
  pthread_mutex_unlock(&tab_lock);
  return 1; /* the flusher finds it at its next round: no wake-up here */
}

/* The dispatch that took span `id` was dropped before its emit. */
static void orphan_span(uint64_t id) {
  pp_record rec;
  int deliver = 0;
  pthread_mutex_lock(&tab_lock);
  pp_cupti_span *s = span_of(id);
  if (s)
    deliver = set_mode(s, PP_CUPTI_RELEASE, &rec);
  pthread_mutex_unlock(&tab_lock);
  if (deliver)
    pp_sinks_deliver(&rec);
}

static const pp_device_hooks hooks = {defer_record, orphan_span,
                                      pp_cupti_drain};

const pp_device_hooks *pp_cupti_device_hooks(void) { return &hooks; }

/* ---- the flusher's round -------------------------------------------------------- */
static void force_flush(void) {
  pp_cupti_lib()->ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  pthread_mutex_lock(&tab_lock);
  stats.forced_flushes++;
  pthread_mutex_unlock(&tab_lock);
}

/* Flushes while spans wait; gives up on a span closed for GIVE_UP_NS. */
static void sweep(void) {
  uint64_t now = pp_now_ns();
  int force = 0;
  pp_record *out = NULL;
  size_t nout = 0;
  pthread_mutex_lock(&tab_lock);
  for (unsigned i = 0; spans && i < SPAN_SLOTS; i++) {
    pp_cupti_span *s = &spans[i];
    if (s->state != SPAN_CLOSED)
      continue;
    uint64_t age = pp_cupti_since(now, s->closed_at);
    if (span_complete(s)) { /* complete, and nobody came for it */
      if ((s->mode == PP_CUPTI_KEEP && age >= GIVE_UP_NS) ||
          (s->mode == PP_CUPTI_TO_DISPATCH && !s->has_record &&
           age >= UNCLAIMED_NS)) {
        stats.unclaimed++;
        span_free(s);
      }
      continue;
    }
    if (age >= GIVE_UP_NS) {
      pp_record *grown = realloc(out, (nout + 1) * sizeof *out);
      if (grown) {
        out = grown;
        nout += (size_t)give_up(s, &out[nout]);
      }
    } else if (age >= FORCE_AFTER_NS && !s->forced) {
      s->forced = 1;
      force = 1;
    }
  }
  pthread_mutex_unlock(&tab_lock);
  deliver_all(out, nout);
  free(out);
  if (force)
    force_flush();
}

uint64_t pp_cupti_waiting(int *crowded) {
  pthread_mutex_lock(&tab_lock);
  uint64_t waiting = npending;
  *crowded = nfree < SPAN_SLOTS / 4;
  pthread_mutex_unlock(&tab_lock);
  return waiting;
}

void pp_cupti_flush_round(void) {
  pp_cupti_lib()->ActivityFlushAll(0);
  pthread_mutex_lock(&tab_lock);
  stats.flushes++;
  pthread_mutex_unlock(&tab_lock);
  sweep();
}

/* ---- spans ------------------------------------------------------------------------ */
PP_EXPORT uint64_t pp_cupti_span_begin(void) {
  if (!pp_cupti_active())
    return 0;
  uint64_t id = 0;
  lock_on_dispatch_path();
  int crowded = 0;
  if (spans && nfree) {
    unsigned i = free_slot[free_head];
    free_head = (free_head + 1) & (SPAN_SLOTS - 1);
    crowded = --nfree == SPAN_SLOTS / 4 - 1;
    pp_cupti_span *s = &spans[i];
    memset(s, 0, offsetof(pp_cupti_span, launch));
    id = (span_seq++ << SPAN_BITS) | i;
    s->id = id;
    s->state = SPAN_OPEN;
    npending++;
    stats.spans++;
  } else {
    stats.spans_refused++;
  }
  pthread_mutex_unlock(&tab_lock);
  if (crowded)
    pp_cupti_wake_flusher();
  tls_span = id;
  return id;
}

PP_EXPORT void pp_cupti_span_end(uint64_t id) {
  if (tls_span == id)
    tls_span = 0;
}

PP_EXPORT int pp_cupti_span_close(uint64_t id, uint64_t open_ns,
                                  uint64_t close_ns, int mode) {
  if (tls_span == id)
    tls_span = 0;
  int linked = mode == PP_CUPTI_TO_DISPATCH && pp_acc_link_device(id) == 0;
  if (mode == PP_CUPTI_TO_DISPATCH && !linked)
    mode = PP_CUPTI_KEEP;
  pp_record rec;
  int deliver = 0, rc = 0;
  pthread_mutex_lock(&tab_lock);
  pp_cupti_span *s = span_of(id);
  if (!s || s->state != SPAN_OPEN) {
    rc = -1;
  } else {
    s->open_ns = open_ns;
    s->close_ns = close_ns;
    s->closed_at = pp_now_ns();
    s->state = SPAN_CLOSED;
    deliver = set_mode(s, mode, &rec);
  }
  pthread_mutex_unlock(&tab_lock);
  if (rc != 0 && linked)
    pp_acc_link_device(0);
  if (deliver)
    pp_sinks_deliver(&rec);
  return rc;
}

PP_EXPORT void pp_cupti_span_release(uint64_t id) {
  pp_record rec;
  int deliver = 0;
  pthread_mutex_lock(&tab_lock);
  pp_cupti_span *s = span_of(id);
  if (s && s->mode == PP_CUPTI_KEEP) {
    deliver = set_mode(s, PP_CUPTI_RELEASE, &rec);
  } else if (s && s->state == SPAN_OPEN) { /* dropped before its close */
    uint64_t now = pp_now_ns();
    s->open_ns = s->nlaunch ? s->launch[0] : now;
    s->close_ns = s->closed_at = now;
    s->state = SPAN_CLOSED;
    deliver = set_mode(s, PP_CUPTI_RELEASE, &rec);
  }
  pthread_mutex_unlock(&tab_lock);
  if (deliver)
    pp_sinks_deliver(&rec);
}

static void pause_us(unsigned us) {
  struct timespec ts = {0, (long)us * 1000L};
  nanosleep(&ts, NULL);
}

/* Flushes until done(arg) or timeout_ns. Plain flushes first, at growing
 * intervals (100 us to 2 ms): they take only finished records, so a kernel
 * still running keeps its times. A forced flush takes what is left,
 * unfinished records included (CUPTI gives those no end, and they count as
 * untimed), only once half the timeout has passed: forcing at once lost the
 * record of any kernel still running (a 100 us kernel queued behind
 * another, a 10 ms one), and on an H200 the launch call after a forced
 * flush takes 170 to 290 us (make truth, part 2c). */
static void collect_until(int (*done)(void *), void *arg, uint64_t timeout_ns) {
  uint64_t t0 = pp_now_ns();
  unsigned pause = 100;
  int forced = 0;
  for (;;) {
    if (done(arg))
      return;
    uint64_t spent = pp_cupti_since(pp_now_ns(), t0);
    if (spent >= timeout_ns)
      return;
    if (!forced && spent >= timeout_ns / 2) {
      force_flush();
      forced = 1;
      continue;
    }
    pp_cupti_lib()->ActivityFlushAll(0);
    if (done(arg))
      return;
    pause_us(pause);
    pause = pause < 2000 ? pause * 2 : 2000;
  }
}

/* collect_until's tests: one span complete (or gone), none waiting. */
static int span_done(void *arg) {
  pthread_mutex_lock(&tab_lock);
  pp_cupti_span *s = span_of(*(const uint64_t *)arg);
  int done = !s || span_complete(s);
  pthread_mutex_unlock(&tab_lock);
  return done;
}

static int none_waiting(void *arg) {
  (void)arg;
  uint64_t waiting = 0;
  pthread_mutex_lock(&tab_lock);
  for (unsigned i = 0; spans && i < SPAN_SLOTS; i++)
    waiting += spans[i].state == SPAN_CLOSED && !span_complete(&spans[i]);
  pthread_mutex_unlock(&tab_lock);
  return !waiting;
}

PP_EXPORT int pp_cupti_span_wait(uint64_t id, uint64_t timeout_ns,
                                 pp_cupti_timeline *out, char *why,
                                 size_t whylen) {
  memset(out, 0, sizeof *out);
  if (!timeout_ns)
    timeout_ns = 1000000000u;
  pthread_mutex_lock(&tab_lock);
  pp_cupti_span *s = span_of(id);
  if (s && s->state == SPAN_OPEN) { /* never closed: close it now */
    s->open_ns = s->nlaunch ? s->launch[0] : pp_now_ns();
    s->close_ns = pp_now_ns();
    s->closed_at = s->close_ns;
    s->state = SPAN_CLOSED;
  }
  pthread_mutex_unlock(&tab_lock);
  if (!s) {
    pp_fail(why, whylen, "no CUPTI span %llu (never begun, or already read)",
            (unsigned long long)id);
    return -1;
  }
  if (tls_span == id)
    tls_span = 0;
  collect_until(span_done, &id, timeout_ns);
  int rc = 0;
  pthread_mutex_lock(&tab_lock);
  s = span_of(id);
  if (!s) {
    rc = -1;
    pp_fail(why, whylen, "CUPTI span %llu was given up on",
            (unsigned long long)id);
  } else {
    pp_cupti_timeline_of(s, out);
    if (s->nlaunch == 0) {
      rc = 1;
      pp_fail(why, whylen,
              "CUPTI saw none of the launch calls of span %llu (made on "
              "another thread, or by a driver CUPTI does not trace?)",
              (unsigned long long)id);
    } else if (!span_complete(s) || s->untimed) {
      rc = 1;
      pp_fail(why, whylen,
              "CUPTI delivered %llu of %llu kernel records (%llu untimed) "
              "for span %llu within %llu ms",
              (unsigned long long)s->received,
              (unsigned long long)s->nlaunch,
              (unsigned long long)s->untimed, (unsigned long long)id,
              (unsigned long long)(timeout_ns / 1000000u));
    }
    int take = s->mode == PP_CUPTI_TO_DISPATCH && !s->has_record;
    if (!span_complete(s)) { /* complete it with what came */
      s->nlaunch = s->received;
      s->untimed++;
    }
    s->mode = PP_CUPTI_RELEASE;
    pp_record rec;
    int deliver = settle(s, &rec);
    pthread_mutex_unlock(&tab_lock);
    if (take) {
      /* the dispatch is still open on this thread: it takes the timeline
       * now, and its emit does not wait */
      pp_acc_link_device(0);
      if (rc == 0) {
        pp_device_timeline d;
        pp_cupti_device_timeline(out, &d);
        pp_record_device_timeline(&d);
      }
    }
    if (deliver)
      pp_sinks_deliver(&rec);
    return rc;
  }
  pthread_mutex_unlock(&tab_lock);
  return rc;
}

PP_EXPORT size_t pp_cupti_drain(uint64_t timeout_ns) {
  if (!pp_cupti_lib())
    return 0;
  if (!timeout_ns)
    timeout_ns = 1000000000u;
  if (none_waiting(NULL))
    return 0;
  collect_until(none_waiting, NULL, timeout_ns);
  /* what still waits is given up on: records go out without a timeline */
  pp_record *out = NULL;
  size_t nout = 0, left = 0;
  pthread_mutex_lock(&tab_lock);
  for (unsigned i = 0; spans && i < SPAN_SLOTS; i++) {
    pp_cupti_span *s = &spans[i];
    if (s->state != SPAN_CLOSED || span_complete(s))
      continue;
    left++;
    pp_record *grown = realloc(out, (nout + 1) * sizeof *out);
    if (grown) {
      out = grown;
      nout += (size_t)give_up(s, &out[nout]);
    }
  }
  pthread_mutex_unlock(&tab_lock);
  deliver_all(out, nout);
  free(out);
  return left;
}

PP_EXPORT void pp_cupti_stats_get(pp_cupti_stats *out) {
  pthread_mutex_lock(&tab_lock);
  *out = stats;
  out->pending = npending;
  pthread_mutex_unlock(&tab_lock);
  out->starts = pp_cupti_starts();
}

#else /* no CUPTI headers at build time */

PP_EXPORT uint64_t pp_cupti_span_begin(void) { return 0; }
PP_EXPORT void pp_cupti_span_end(uint64_t id) { (void)id; }
PP_EXPORT int pp_cupti_span_close(uint64_t id, uint64_t open_ns,
                                  uint64_t close_ns, int mode) {
  (void)id;
  (void)open_ns;
  (void)close_ns;
  (void)mode;
  return -1;
}
PP_EXPORT int pp_cupti_span_wait(uint64_t id, uint64_t timeout_ns,
                                 pp_cupti_timeline *out, char *why,
                                 size_t whylen) {
  (void)id;
  (void)timeout_ns;
  memset(out, 0, sizeof *out);
  return pp_fail(why, whylen, "%s", PP_CUPTI_ABSENT_WHY);
}
PP_EXPORT size_t pp_cupti_drain(uint64_t timeout_ns) {
  (void)timeout_ns;
  return 0;
}
PP_EXPORT void pp_cupti_span_release(uint64_t id) { (void)id; }
PP_EXPORT void pp_cupti_stats_get(pp_cupti_stats *out) {
  memset(out, 0, sizeof *out);
}

#endif
