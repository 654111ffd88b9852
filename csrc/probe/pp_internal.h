/* pp_internal.h: shared between the C core's files; not installed. */
#ifndef PP_INTERNAL_H
#define PP_INTERNAL_H

#include "phaseprobe.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#define PP_EXPORT __attribute__((visibility("default")))

/* ---- clock --------------------------------------------------------------- */
typedef struct {
  pp_clock_kind kind;
  uint64_t mult; /* ns = ticks * mult >> 32 (1<<32 for ns clocks) */
} pp_clock_state;
extern pp_clock_state pp_clk;

pp_ticks pp_now_slow(void);
/* Busy-waits `ns` nanoseconds on the probe clock (clock.c). */
void pp_spin_ns(uint64_t ns);

static inline pp_ticks pp_now_inline(void) {
#if defined(__x86_64__) || defined(__i386__)
  if (__builtin_expect(pp_clk.kind == PP_CLOCK_TSC, 1))
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
  uint64_t kernel_ns, kernel_floor_ns, device_window_ns;
  int has_window;
  pp_kernel_src kernel_src;
  uint64_t clock_reads; /* for the self-overhead estimate */
  uint64_t probe_ns;    /* measured probe host cost (events etc.) */
  unsigned depth;       /* open scopes; scope[depth-1] is the one running */
  /* Kept across dispatches. */
  char kept[0];
  char tags[PP_TAGS_MAX];
  uint64_t tid;
  uint64_t gen;         /* dispatches begun or emitted on this thread       */
  pp_scope next_serial; /* this thread's id in the top bits, then a count   */
  pp_scope_ent scope[PP_SCOPE_DEPTH];
} pp_acc;

/* This thread's accumulator (allocated on first use). */
pp_acc *pp_acc_get(void);

/* Charges the running scope up to `now` and closes every open scope (at
 * pp_end and pp_emit: no scope runs past the wall the probe measured). */
void pp_scopes_settle(pp_acc *a, pp_ticks now);
/* pp_scope_close, adding probe_ns (the caller's own cost) to the dispatch
 * when the scope was still open in it; returns whether it was. */
int pp_scope_end(pp_scope scope, uint64_t probe_ns);
/* Clears the record part of the accumulator and the open scopes; a new
 * dispatch generation. */
void pp_acc_clear(pp_acc *a);

/* Notes clock reads made on this thread's open dispatch by a binding (for
 * the self-overhead estimate). */
void pp_note_clock_reads(unsigned n);

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
