/*
 * pp_internal.h: shared between the C core's files; not installed. What
 * passes between the areas of the data flow: the clock (probe/clock.c),
 * the schema's layout (probe/schema.c), this thread's accumulator
 * (probe/probe.c), the record's line (record/record.c), the sinks and the
 * store (record/sink.c, its writer thread record/sink_writer.c,
 * record/store.c).
 */
#ifndef PP_INTERNAL_H
#define PP_INTERNAL_H

#include "phaseprobe.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
/* __rdtsc alone: <x86gprintrin.h>, not <x86intrin.h> (64,000 lines of
 * vector intrinsics a file, half the time of a build). */
#if defined(__has_include) && __has_include(<x86gprintrin.h>)
#include <x86gprintrin.h>
#else
#include <x86intrin.h>
#endif
#endif

#define PP_EXPORT __attribute__((visibility("default")))

/* ---- refusals ------------------------------------------------------------ */
/* The core's functions that refuse an input say why in a caller's buffer:
 * `return pp_fail(err, errlen, "phases: '%s' twice", name);` formats the
 * message (cut to errlen bytes; none with a NULL err or errlen 0) and
 * returns -1. */
static inline __attribute__((format(printf, 3, 4))) int
pp_fail(char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return -1;
}

/* ---- clock --------------------------------------------------------------- */
/* kind is a pp_clock_kind once the clock is chosen, PP_CLOCK_UNCHOSEN before:
 * the first read of the clock (pp_now_slow), pp_set_enabled(1) or
 * pp_clock() chooses and calibrates it, never loading the module. kind is
 * stored last (release) and read with acquire, so a reader that sees the
 * chosen kind sees its mult. */
#define PP_CLOCK_UNCHOSEN 3
typedef struct {
  int kind;
  uint64_t mult;   /* ns = ticks * mult >> 32 (1<<32 for ns clocks) */
  pp_ticks origin; /* the clock's first reading in this process: no mark
                      of it is earlier                                  */
} pp_clock_state;
extern pp_clock_state pp_clk;

pp_ticks pp_now_slow(void);
/* pp_clock_init, saying what made the choice (pp_clock_info.chosen_by). */
void pp_clock_choose(const char *why);
/* While pinned (a count: CUPTI converts its timestamps with the probe
 * clock), pp_clock_select refuses to switch the clock. */
void pp_clock_pin(int delta);
int pp_clock_pinned(void);
/* Busy-waits `ns` nanoseconds on the probe clock (clock.c). */
void pp_spin_ns(uint64_t ns);

static inline pp_ticks pp_now_inline(void) {
#if defined(__x86_64__) || defined(__i386__)
  if (__builtin_expect(__atomic_load_n(&pp_clk.kind, __ATOMIC_ACQUIRE) == PP_CLOCK_TSC, 1))
    return __rdtsc();
#endif
  return pp_now_slow();
}

static inline uint64_t pp_ticks_delta_ns(pp_ticks from, pp_ticks to) {
  if (to <= from)
    return 0;
  unsigned __int128 ns = (unsigned __int128)(to - from) * pp_clk.mult;
  ns >>= 32;
  return ns > UINT64_MAX ? UINT64_MAX : (uint64_t)ns;
}

/* Whether `started` can be a mark of the clock in use, read before `now`:
 * PP_START_OK; PP_START_EARLY, earlier than the clock's first reading in
 * this process less 1 ms (a small number, or nanoseconds where the clock
 * counts ticks: pp_now_ns is not a start); PP_START_LATE, later than now
 * by more than PP_START_SLACK_NS (a start a little later, from another
 * CPU's reading, charges 0). */
enum { PP_START_OK = 0, PP_START_EARLY = 1, PP_START_LATE = 2 };
#define PP_START_SLACK_NS 1000000u
static inline int pp_start_check(pp_ticks started, pp_ticks now) {
  pp_ticks origin = __atomic_load_n(&pp_clk.origin, __ATOMIC_RELAXED);
  if (__builtin_expect(started < origin, 0))
    return PP_START_EARLY;
  if (__builtin_expect(started > now, 0) &&
      pp_ticks_delta_ns(now, started) > PP_START_SLACK_NS)
    return PP_START_LATE;
  return PP_START_OK;
}
/* Counts a start refused by pp_start_check (pp_stats: bad_starts) and
 * notes it for the calling thread; pp_take_bad_start returns that note
 * (PP_START_*) and clears it: the Lua bindings raise on it after the call,
 * which read the clock for the check already. */
void pp_note_bad_start(int why);
int pp_take_bad_start(void);
uint64_t pp_bad_start_count(void);

/* Times and counts saturate: a sum that would pass UINT64_MAX stays there,
 * never wrapping to a small number that would print as a plausible one. */
static inline uint64_t pp_sat_add(uint64_t a, uint64_t b) {
  uint64_t r;
  return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* ---- schema -------------------------------------------------------------- */
struct pp_schema {
  int id;
  char prefix[PP_PREFIX_MAX];
  size_t nphases, nnested, ncounts, ncaches;
  char phase[PP_MAX_PHASES][PP_NAME_MAX + 1];
  char phase_label[PP_MAX_PHASES][PP_LABEL_MAX];
  char nested[PP_MAX_NESTED][PP_NAME_MAX + 1];
  char nested_label[PP_MAX_NESTED][PP_LABEL_MAX];
  char count[PP_MAX_COUNTS][PP_NAME_MAX + 1];
  char cache[PP_MAX_CACHES][PP_NAME_MAX + 1];
  /* line order */
  size_t nfields;
  char field[PP_MAX_FIELDS][PP_LABEL_MAX];
  pp_field_kind kind[PP_MAX_FIELDS];
  /* positions in line order */
  int f_seq, f_count0, f_wall, f_enqueue, f_wait, f_window, f_kernel;
  int f_phase0, f_nested0, f_named, f_unattr, f_cache0; /* hits,misses pairs */
  int f_disk0, f_tid, f_start, f_probe, f_ksrc, f_kfloor;
  int f_kerr, f_kernels, f_launch_at, f_kfirst, f_klast, f_latency, f_hostgap;
};

/* ---- accumulator --------------------------------------------------------- */
/* One open scope: the phase it charges, the start of the stretch it is
 * accumulating now (0 while a scope above it runs), its identity. */
typedef struct {
  pp_ticks seg;
  pp_scope serial;
  int phase;
} pp_scope_ent;

typedef struct {
  /* Cleared at every begin and emit (up to `kept`). */
  const pp_schema *schema;
  int open;      /* something was charged, or pp_begin: a record is pending */
  int ended;     /* pp_end captured wall_ns: no scope may open until emit    */
  pp_ticks begin_ticks;
  uint64_t start_ns; /* begin time on the clock's ns timeline */
  uint64_t wall_ns;  /* set by pp_end */
  uint64_t phase_ns[PP_MAX_PHASES];
  uint64_t nested_ns[PP_MAX_NESTED];
  uint64_t count[PP_MAX_COUNTS];
  uint64_t cache[PP_MAX_CACHES][3]; /* hits, misses, disk hits */
  uint64_t kernel_ns, kernel_floor_ns, kernel_error_ns, device_window_ns;
  int has_window;
  pp_kernel_src kernel_src;
  int has_timeline;        /* tl holds the loop's device timeline           */
  pp_device_timeline tl;
  uint64_t device_span;    /* a device span that completes the record later */
  uint64_t clock_reads; /* for the self-overhead estimate */
  uint64_t probe_ns;    /* measured probe host cost (events etc.) */
  unsigned depth;       /* open scopes; scope[depth-1] is the one running */
  /* Kept across dispatches. */
  char kept[0];
  char tags[PP_TAGS_MAX];
  int tags_checked;     /* schema id + 1 the tags were checked against     */
  uint64_t tid;
  uint64_t gen;         /* dispatches begun or emitted on this thread       */
  pp_scope next_serial; /* this thread's id in the top bits, then a count   */
  pp_scope_ent scope[PP_SCOPE_DEPTH];
} pp_acc;

/* ---- tags ---------------------------------------------------------------- */
/* Why pp_tag would refuse key=value (value NULL: removal), or NULL. */
const char *pp_tag_refusal(const char *key, const char *value, char *buf,
                           size_t n);
/* Whether the calling thread's tags hold key. */
int pp_tag_has_key(const char *key);
/* Removes (and says) a tag of this thread that is a field of s (pp_emit). */
void pp_tags_settle(pp_acc *a, const pp_schema *s);
/* The first declared schema with a field of that name, or NULL. */
const pp_schema *pp_schema_with_field(const char *name);

/* This thread's accumulator (allocated on first use). */
pp_acc *pp_acc_get(void);
/* This thread's accumulator, NULL when it has none yet (never allocates). */
pp_acc *pp_acc_peek(void);

/* Charges the running scope up to `now` and closes every open scope (at
 * pp_end and pp_emit: no scope runs past the wall the probe measured). */
void pp_scopes_settle(pp_acc *a, pp_ticks now);
/* pp_scope_close at `now` (a reading of the probe clock the caller took as
 * it was asked to close), adding probe_ns (the caller's own cost) to the
 * dispatch when the scope was still open in it; returns whether it was. */
int pp_scope_end_at(pp_scope scope, pp_ticks now, uint64_t probe_ns);
/* Empties it for the next dispatch: the record part and the open scopes
 * (tags, thread id and scope identities stay); a new dispatch generation. */
void pp_acc_clear(pp_acc *a);

/* Notes clock reads made on this thread's open dispatch by a binding (for
 * the self-overhead estimate). */
void pp_note_clock_reads(unsigned n);

/* Links this thread's open dispatch to a device span (0 unlinks): its
 * record is then completed by the device layer (below). 0, or -1 when no
 * dispatch is open. */
int pp_acc_link_device(uint64_t span);

/* ---- device completion ------------------------------------------------------ */
/* The device layer (csrc/cuda/cupti.c) completes records whose device
 * timeline comes after their emit; it registers these when it starts. */
typedef struct {
  /* pp_emit of a dispatch linked to `span`: 1 when the span keeps the
   * record to deliver it later, 0 when *r was completed now. */
  int (*defer)(uint64_t span, pp_record *r, int keep_window);
  /* The dispatch linked to `span` was dropped by a new begin. */
  void (*orphan)(uint64_t span);
  /* pp_flush: completes what waits (at most timeout_ns). */
  size_t (*drain)(uint64_t timeout_ns);
} pp_device_hooks;
void pp_set_device_hooks(const pp_device_hooks *h);
const pp_device_hooks *pp_device_hooks_get(void);

/* ---- record (record.c) -------------------------------------------------- */
/* Completes r's device fields from a timeline (NULL: the kernels never
 * came: kernel_src=none, no device fields). keep_window keeps r's
 * device_window_ns. */
void pp_record_fill_timeline(pp_record *r, const pp_device_timeline *t,
                             int keep_window);
/* The longest line a record can have, without its newline. */
#define PP_LINE_BYTES                                                          \
  (PP_PREFIX_MAX + PP_MAX_FIELDS * (PP_LABEL_MAX + 22) + PP_TAGS_MAX + 2)
/* Writes r's line (no newline, no NUL) at out, which has PP_LINE_BYTES of
 * room; returns its length. */
size_t pp_record_format(const pp_record *r, char *out);
/* v in decimal at p (at most 20 bytes, no NUL); returns the end. */
char *pp_put_u64(char *p, uint64_t v);
/* The same line from its parts: a schema, its nfields values in line order
 * and ntags bytes of tag text (" key=value ..."). */
size_t pp_line_format(const pp_schema *s, const uint64_t *values,
                      const char *tags, size_t ntags, char *out);
/* The bytes of r's tag text, as its line carries them. */
static inline size_t pp_record_tags_len(const pp_record *r) {
  return strnlen(r->tags, PP_TAGS_MAX - 1);
}
/* The name of a kernel_src value as lines print it ("none" when unknown). */
const char *pp_ksrc_name(uint64_t k);
/* pp_record_field_present over a schema and its values in line order (the
 * Lua record keeps only those). */
int pp_field_present(const pp_schema *s, const uint64_t *values, size_t i);

/* ---- sinks --------------------------------------------------------------- */
/* The emitted record to the line sink, the store and the hook (sink.c). */
void pp_sinks_deliver(const pp_record *r);
/* A one-time message for stderr, written by the sink's writer thread
 * (non-blocking, never a signal); dropped if one is already waiting. */
void pp_sink_notice(const char *msg);
/* A Lua state loaded / closes the module: a close flushes, the last one
 * stops the writer thread before the module can be unloaded. */
void pp_sink_state_open(void);
void pp_sink_state_close(void);
/* The store (store.c). */
void pp_store_add(const pp_record *r);
void pp_store_stats(uint64_t *stored, uint64_t *dropped);
void pp_store_after_fork(void);
/* Estimated cost of one clock read plus accumulator update, in ns. */
double pp_charge_cost_ns(void);
/* Dispatches dropped by a pp_begin over them (probe.c). */
uint64_t pp_abandoned_count(void);

#endif
