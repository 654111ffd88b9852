/*
 * phaseprobe.h: per-dispatch phase probe, public C API.
 *
 * A native runtime instruments its dispatch path with these calls and gets
 * the same records (and the same line format) as the Lua module.
 *
 *     pp_schema_use(pp_schema_default());      // optional, per thread
 *     pp_set_enabled(1);                       // or PHASEPROBE=1
 *     pp_begin();                              // a dispatch opens
 *     pp_ticks t = pp_mark();
 *     prepare(...);
 *     t = pp_lap(PP_PREPARE, t);               // charge, and start the next
 *     lower(...);
 *     t = pp_lap(PP_PTX, t);
 *     ...
 *     pp_end();                                // wall_ns captured here
 *     pp_emit(&(pp_emit_args){.seq = n, .given = PP_GIVEN_SEQ}, NULL);
 *                                              // one record, written after
 *
 * Disabled, every entry point is one relaxed load of pp_enabled_flag and,
 * for the measuring wrappers, the unmodified call.
 *
 * Times are integer nanoseconds (uint64_t) end to end; all arithmetic
 * saturates; no entry point can fail the caller.
 */
#ifndef PHASEPROBE_H
#define PHASEPROBE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PP_VERSION "0.1.0"

/* ---- limits -------------------------------------------------------------- */
#define PP_MAX_PHASES 32
#define PP_MAX_NESTED 16
#define PP_MAX_COUNTS 16
#define PP_MAX_CACHES 4
#define PP_NAME_MAX 40   /* longest short name, without "sub_" / "_ns"      */
#define PP_LABEL_MAX 64  /* room for a printed field name, with its NUL        */
#define PP_PREFIX_MAX 64
/* seq, counts, the five times, phases, nested, named + unattributed, three
 * per cache, then tid, start_ns, probe_ns, kernel_src, kernel_floor_ns,
 * kernel_error_ns and the six device-timeline fields. */
#define PP_MAX_FIELDS                                                          \
  (1 + PP_MAX_COUNTS + 5 + PP_MAX_PHASES + PP_MAX_NESTED + 2 +                 \
   3 * PP_MAX_CACHES + 12)
#define PP_TAGS_MAX 256  /* bytes of " key=value" text carried per record   */
#define PP_SCOPE_DEPTH 64 /* scopes open at once on one thread               */

/* ---- the enable flag ----------------------------------------------------- */
/* The only hot-path global. Read with one relaxed load. */
extern int pp_enabled_flag;

static inline int pp_enabled(void) {
  return __atomic_load_n(&pp_enabled_flag, __ATOMIC_RELAXED);
}
void pp_set_enabled(int on);
/* Reads PHASEPROBE and VYRE_CUDA_DISPATCH_PHASE_PROBE; called by the
 * library's constructor (the reference reads its variable at first use
 * instead), callable again after changing the environment. PHASEPROBE, when
 * set, decides ("0" or empty: off; else on); otherwise the reference's
 * variable enables by its presence, whatever its value; with neither set
 * the probe stays as it is. */
void pp_enable_from_env(void);

/* ---- the clock ----------------------------------------------------------- */
typedef uint64_t pp_ticks; /* raw clock units; 0 means "not measured"         */

typedef enum {
  PP_CLOCK_TSC = 0,           /* invariant TSC, calibrated to ns            */
  PP_CLOCK_MONOTONIC = 1,     /* clock_gettime(CLOCK_MONOTONIC)             */
  PP_CLOCK_MONOTONIC_RAW = 2, /* clock_gettime(CLOCK_MONOTONIC_RAW)         */
} pp_clock_kind;

typedef struct {
  pp_clock_kind kind;
  const char *name;          /* "tsc", "monotonic", "monotonic_raw"         */
  const char *reason;        /* why this clock was picked                   */
  int tsc_invariant;         /* CPUID says constant + nonstop TSC           */
  double tsc_ghz;            /* calibrated TSC rate, 0 if not calibrated    */
  double read_ns[3];         /* measured cost of one read, per kind         */
  uint64_t mult;             /* ns = ticks * mult >> 32                     */
  const char *chosen_by;     /* what made the choice: "enable" (the probe was
                                enabled), "first read" (of the clock),
                                "clock query" (pp_clock), "pp_clock_init",
                                "select"                                     */
} pp_clock_info;

/* Chooses and calibrates the clock once (about 25 ms); idempotent and
 * thread-safe. PHASEPROBE_CLOCK=tsc|monotonic|monotonic_raw forces a choice.
 * Loading the library never does it: enabling the probe does, or the first
 * clock read or query, whichever comes first. */
void pp_clock_init(void);
const pp_clock_info *pp_clock(void);
/* Re-selects the clock, for the whole process; returns 0, or -1 if the
 * kind is not usable here, or (errno EBUSY) while the calling thread has a
 * dispatch begun or a scope open. For tests and benchmarks: other threads
 * must not be dispatching either (their starts would be on the old clock). */
int pp_clock_select(pp_clock_kind kind);

/* Current reading, in ticks of the selected clock (never 0). */
pp_ticks pp_now(void);
/* Tick difference to nanoseconds (saturating; b earlier than a gives 0). */
uint64_t pp_ticks_to_ns(pp_ticks from, pp_ticks to);
/* Clock reading in nanoseconds on the selected clock's own timeline. */
uint64_t pp_now_ns(void);

/* ---- schemas ------------------------------------------------------------- */
/* A schema names the host phases (a partition: disjoint leaves that add),
 * the nested regions (measured inside a phase, never added), the counted
 * quantities, the caches and the line prefix. Phase "prepare" prints as
 * "prepare_ns"; nested region "ptx_digest" prints as "sub_ptx_digest_ns". */
typedef struct {
  const char *prefix;
  const char *const *phases;  size_t nphases;
  const char *const *nested;  size_t nnested;
  const char *const *counts;  size_t ncounts;
  const char *const *caches;  size_t ncaches;
} pp_schema_def;

/* How a field prints: a number; the kernel-time source's name; a field of
 * the device timeline, printed only when kernel_src=cupti (the probe knows it
 * only then); the event pair's calibrated error, printed only beside an
 * event-pair kernel_ns whose calibration measured it. A field that does not
 * print is absent from the line, never printed as a made-up 0. */
typedef enum {
  PP_FIELD_U64 = 0, PP_FIELD_KERNEL_SRC = 1, PP_FIELD_DEVICE = 2,
  PP_FIELD_EVENT_ERROR = 3
} pp_field_kind;

typedef struct pp_schema pp_schema;

/* Validates and registers a schema. NULL on refusal, with the reason (naming
 * the offending entry) written to err. Schemas are immutable and live for
 * the life of the process. */
const pp_schema *pp_schema_declare(const pp_schema_def *def, char *err,
                                   size_t errlen);
/* The reference's: nine phases, two nested regions, six counts, the ptx
 * cache, prefix "vyre-cuda-dispatch-phase". */
const pp_schema *pp_schema_default(void);
/* The schema the next pp_begin() on the calling thread uses (NULL: the
 * default). The choice is the thread's own: it never reaches a dispatch
 * on another thread, and a new thread starts with the default schema, so a
 * runtime that dispatches from several threads calls pp_schema_use on each
 * (at thread start, say). */
void pp_schema_use(const pp_schema *s);
/* The calling thread's current schema. */
const pp_schema *pp_schema_current(void);

const char *pp_schema_prefix(const pp_schema *s);
size_t pp_schema_nphases(const pp_schema *s);
size_t pp_schema_nnested(const pp_schema *s);
size_t pp_schema_ncounts(const pp_schema *s);
size_t pp_schema_ncaches(const pp_schema *s);
/* Short names ("prepare") and printed labels ("prepare_ns"). */
const char *pp_schema_phase_name(const pp_schema *s, size_t i);
const char *pp_schema_phase_label(const pp_schema *s, size_t i);
const char *pp_schema_nested_name(const pp_schema *s, size_t i);
const char *pp_schema_nested_label(const pp_schema *s, size_t i);
const char *pp_schema_count_name(const pp_schema *s, size_t i);
const char *pp_schema_cache_name(const pp_schema *s, size_t i);
/* Index of a phase/nested/count/cache by short name or label; -1 if none. */
int pp_schema_phase_index(const pp_schema *s, const char *name);
int pp_schema_nested_index(const pp_schema *s, const char *name);
int pp_schema_count_index(const pp_schema *s, const char *name);
int pp_schema_cache_index(const pp_schema *s, const char *name);
/* Every printed field, in line order. */
size_t pp_schema_nfields(const pp_schema *s);
const char *pp_schema_field_name(const pp_schema *s, size_t i);
pp_field_kind pp_schema_field_kind(const pp_schema *s, size_t i);
/* Position of a named field in line order; -1 if none. */
int pp_schema_field_index(const pp_schema *s, const char *name);

/* The default schema's indices, for C callers using it. */
enum {
  PP_PREPARE = 0, PP_PTX, PP_MODKEY, PP_STAGE, PP_RESOLVE, PP_LEASE,
  PP_LAUNCH, PP_RELEASE, PP_READBACK
};
enum { PP_SUB_PTX_DIGEST = 0, PP_SUB_PTX_VSA };
enum {
  PP_COUNT_NODES = 0, PP_COUNT_PTX_BYTES, PP_COUNT_BUFFERS, PP_COUNT_BINDINGS,
  PP_COUNT_FIXPOINT, PP_COUNT_GRID_BLOCKS
};
enum { PP_CACHE_PTX = 0 };

/* ---- the per-thread accumulator ------------------------------------------ */
/* Opens a dispatch on this thread: clears the accumulator, binds it to the
 * current schema and takes the start time. A dispatch still pending (begun,
 * or charged without pp_begin, and not emitted) is dropped, not merged:
 * counted in pp_stats().abandoned and, the first time in the process, said
 * through the notices with what it held. */
void pp_begin(void);
/* Captures wall_ns (begin to now); later charges still land in the record. */
void pp_end(void);
/* Whether a dispatch is open on this thread (begun and not yet emitted). */
int pp_is_open(void);
/* The schema the open dispatch on this thread charges against. */
const pp_schema *pp_open_schema(void);

/* Start a region: 0 when disabled, so the caller pays no clock read. */
static inline pp_ticks pp_mark(void) { return pp_enabled() ? pp_now() : 0; }

void pp_add_ns(int phase, uint64_t ns);
void pp_add_nested_ns(int nested, uint64_t ns);
/* Starts come from pp_mark (or pp_now, or a previous pp_lap): ticks of the
 * clock in use. A start that cannot be one (earlier than the clock's first
 * reading in this process, such as a small number, or nanoseconds from
 * pp_now_ns where the clock counts TSC ticks; or more than 1 ms later than
 * the call) charges nothing and is counted in pp_stats().bad_starts; a
 * start later by less than that charges 0. */
/* Charge the time since `started` (from pp_mark; 0 is a no-op). */
void pp_charge(int phase, pp_ticks started);
/* Charge the time since `started`, which the caller took for its own use. */
void pp_charge_since(int phase, pp_ticks started);
/* Charge and return the end time, to start the next adjacent phase: one
 * clock read per phase boundary. Returns 0 when disabled. */
pp_ticks pp_lap(int phase, pp_ticks started);
/* Charge time since `started` to `outer`, less what `inner` already holds. */
void pp_charge_remainder(int outer, pp_ticks started, int inner);
void pp_charge_nested(int nested, pp_ticks started);
/* Host ns charged to `phase` in the open dispatch so far. */
uint64_t pp_phase_ns(int phase);

void pp_set_count(int count, uint64_t value);
void pp_add_count(int count, uint64_t delta);
void pp_record_kernel_ns(uint64_t ns);
void pp_record_device_window_ns(uint64_t ns);
/* Where kernel_ns came from. PENDING: the record was emitted before its
 * kernels' CUPTI records came; the copy pp_emit returns says so, and the
 * record reaches the sinks when they come (then cupti, or none). */
typedef enum {
  PP_KSRC_NONE = 0, PP_KSRC_EVENT = 1, PP_KSRC_CUPTI = 2, PP_KSRC_USER = 3,
  PP_KSRC_PENDING = 4
} pp_kernel_src;
/* "none", "event", "cupti", "user", "pending" ("none" for other values). */
const char *pp_kernel_src_name(pp_kernel_src src);
/* Kernel time with its source and, for event pairs, the calibrated floor. */
void pp_record_kernel(uint64_t ns, pp_kernel_src src, uint64_t floor_ns);
/* For an event-pair kernel_ns: how far its calibrated value can be off on
 * this device (the p95 of |calibrated - CUPTI| the calibration measured;
 * kernel_error_ns). Not called: the record does not claim one. */
void pp_record_kernel_error(uint64_t ns);

/* The device side of the launch loop on the probe clock (absolute ns, as
 * pp_now_ns reads them): from CUPTI (the CUDA layer records it), or from a
 * runtime's own tracing. */
typedef struct {
  uint64_t kernels;           /* kernels of the loop                         */
  uint64_t kernel_ns;         /* sum of their durations                      */
  uint64_t first_launch_ns;   /* host: the first launch call                 */
  uint64_t first_start_ns;    /* device: the first kernel's start            */
  uint64_t last_end_ns;       /* device: the last kernel's end               */
  uint64_t window_ns;         /* the window: its open to the later of its    */
                              /* close and the last kernel's end             */
  uint64_t launch_latency_ns; /* device idle while a launch call was in      */
                              /* progress or its kernel had not started      */
  uint64_t host_gap_ns;       /* device idle with no launch call in progress */
                              /* and no kernel pending: before, between and  */
                              /* after the calls, until the close            */
} pp_device_timeline;
/* Records it into this thread's open dispatch: kernel_ns (kernel_src =
 * cupti), device_window_ns (unless set), kernels, launch_at_ns,
 * kernel_first_ns, kernel_last_ns (from the dispatch's start_ns),
 * launch_latency_ns and host_gap_ns. */
void pp_record_device_timeline(const pp_device_timeline *t);
typedef enum { PP_CACHE_HIT = 0, PP_CACHE_MISS = 1, PP_CACHE_DISK_HIT = 2 } pp_cache_outcome;
/* One cache lookup of this dispatch. A disk hit counts as a hit and also
 * in <cache>_cache_disk_hits. */
void pp_cache_event(int cache, pp_cache_outcome outcome);
/* Host time the probe itself added to this dispatch (events, queries). */
void pp_add_probe_ns(uint64_t ns);
/* Sticky per-thread tag printed as " key=value" on every record of this
 * thread until changed; value NULL removes it. Returns -1 if refused
 * (bad key or value, or no room). */
int pp_tag(const char *key, const char *value);

/* ---- scopes -------------------------------------------------------------- */
/* The nesting rule: on a thread, at any instant at most one scope
 * accumulates time, the most recently opened scope still open. Opening a
 * scope pauses the one below it; closing it resumes that one. So a phase
 * opened inside another is charged to itself only, the phases stay a
 * partition, and named_host_ns never exceeds the time the scopes ran.
 * Nested regions (PP_MEASURE_NESTED, pp_charge_nested) are measured inside
 * their phase and pause nothing; explicit charges (pp_add_ns, pp_charge,
 * pp_lap, pp_charge_remainder) are the caller's, as in the reference.
 *
 * A scope is identified by the value pp_scope_open returns, and
 * pp_scope_close ends that scope whatever else is open: closing one that is
 * not on top removes it (it was paused: nothing more is charged) and leaves
 * the others running as they were. The stack is the thread's: a scope
 * closed on another thread than it opened on is ignored. pp_end and pp_emit
 * charge the running scope up to the instant they read and close every
 * open scope (a later pp_scope_close of one is ignored); pp_begin drops
 * them. After pp_end and before the emit no scope opens (returns 0): its
 * time would lie outside wall_ns. More than PP_SCOPE_DEPTH scopes at once:
 * the extra ones return 0 and their time stays with the scope below.
 * Opening and closing cost one clock read each. 0 is never a scope. */
typedef uint64_t pp_scope;
pp_scope pp_scope_open(int phase);
void pp_scope_close(pp_scope scope);

/* Disabled, these are one flag load and the statement itself. The
 * statement must not leave by return, break or goto: its scope would stay
 * open until the dispatch's pp_end or pp_emit. */
#define PP_MEASURE(phase, stmt)                                                \
  PP_MEASURE_(phase, stmt, PP_CAT_(pp_measure_s_, __COUNTER__))
#define PP_CAT2_(a, b) a##b
#define PP_CAT_(a, b) PP_CAT2_(a, b)
/* (one name per expansion, so nested measures do not shadow each other) */
#define PP_MEASURE_(phase, stmt, s)                                            \
  do {                                                                         \
    if (!pp_enabled()) {                                                       \
      stmt;                                                                    \
    } else {                                                                   \
      pp_scope s = pp_scope_open(phase);                                       \
      stmt;                                                                    \
      pp_scope_close(s);                                                       \
    }                                                                          \
  } while (0)

#define PP_MEASURE_NESTED(nested, stmt)                                        \
  do {                                                                         \
    if (!pp_enabled()) {                                                       \
      stmt;                                                                    \
    } else {                                                                   \
      pp_ticks pp_measure_t0_ = pp_now();                                      \
      stmt;                                                                    \
      pp_charge_nested((nested), pp_measure_t0_);                              \
    }                                                                          \
  } while (0)

/* ---- records ------------------------------------------------------------- */
/* One dispatch. values[] follows pp_schema_field_name() order. */
typedef struct pp_record {
  const pp_schema *schema;
  uint64_t values[PP_MAX_FIELDS];
  char tags[PP_TAGS_MAX]; /* " key=value ..." or "" */
} pp_record;

uint64_t pp_record_get(const pp_record *r, const char *field, int *found);
/* Whether field i (line order) is in r's line: device-timeline fields only
 * with kernel_src=cupti, kernel_error_ns only when measured. */
int pp_record_field_present(const pp_record *r, size_t i);

/* What the dispatch's own telemetry knows, as the reference's emit takes
 * it. `given` says which fields hold a value (PP_GIVEN_* bits; any value,
 * UINT64_MAX included); a field not given is the probe's: seq from a
 * process-wide counter, wall_ns from pp_begin..pp_end (or ..the emit; 0
 * without pp_begin: the probe measured no wall), device_window_ns from
 * pp_record_device_window_ns, enqueue_ns and wait_ns 0, the cache counts
 * from pp_cache_event. Cache values given override the dispatch's events,
 * per field, as the reference's caller passes its own counts.
 *
 *     pp_emit(&(pp_emit_args){.seq = n, .wall_ns = w,
 *                             .given = PP_GIVEN_SEQ | PP_GIVEN_WALL}, NULL);
 *
 * The form of phaseprobe 0.1.0, with no `given` (0): a field at 0 (what a
 * designated initializer leaves it) or at PP_AUTO is the probe's, any other
 * value is given, and no cache value is. So its example,
 * pp_emit(&(pp_emit_args){.seq = n}, NULL) after pp_end, keeps the
 * measured wall and the recorded device window; that form cannot give 0 or
 * UINT64_MAX (`given` can). Callers written for it compile and keep their
 * meaning. */
#define PP_AUTO UINT64_MAX
typedef struct {
  uint64_t seq, wall_ns, enqueue_ns, wait_ns, device_window_ns;
  uint32_t given;
  uint64_t cache_hits[PP_MAX_CACHES];      /* by the schema's cache index */
  uint64_t cache_misses[PP_MAX_CACHES];
  uint64_t cache_disk_hits[PP_MAX_CACHES];
} pp_emit_args;
#define PP_GIVEN_SEQ (1u << 0)
#define PP_GIVEN_WALL (1u << 1)
#define PP_GIVEN_ENQUEUE (1u << 2)
#define PP_GIVEN_WAIT (1u << 3)
#define PP_GIVEN_WINDOW (1u << 4)
#define PP_GIVEN_HITS(cache) (1u << (5 + (cache)))
#define PP_GIVEN_MISSES(cache) (1u << (5 + PP_MAX_CACHES + (cache)))
#define PP_GIVEN_DISK_HITS(cache) (1u << (5 + 2 * PP_MAX_CACHES + (cache)))
#define PP_EMIT_ARGS_AUTO                                                      \
  ((pp_emit_args){PP_AUTO, PP_AUTO, PP_AUTO, PP_AUTO, PP_AUTO, 0, {0}, {0}, {0}})

/* Turns this thread's accumulator into one record, clears it, and hands the
 * record to the sinks. The accumulator always exists: without pp_begin,
 * what was charged since the last emit (maybe nothing) makes the record, as
 * in the reference. `out` (may be NULL) receives a copy. Returns 0, or -1
 * when disabled (nothing emitted). */
int pp_emit(const pp_emit_args *args, pp_record *out);

/* Formats the record as one line (no newline). Returns the length; the
 * output is truncated to cap-1 bytes and NUL-terminated. */
size_t pp_format_line(const pp_record *r, char *buf, size_t cap);

/* ---- sinks --------------------------------------------------------------- */
/* Line sink: stderr by default. The emitting thread never writes nor
 * formats: it copies the record (16 bytes + 8 per schema field + its tag
 * text rounded up to 8) into a buffer of its own and returns; a writer
 * thread of the library formats the lines (the bytes pp_format_line gives)
 * and writes them, whole, on a descriptor of its own (pipes, FIFOs and
 * terminals non-blocking, sockets with MSG_NOSIGNAL, SIGPIPE blocked),
 * within `interval_ms` of the emit, or at once with per_record. A record is
 * held until its line is written. When the target does not keep up, the
 * records that find no room in `buffer` bytes are dropped; dropped and
 * failed lines are counted (pp_stats) and said once on stderr. A crash
 * loses at most the lines of the last interval_ms and never more than the
 * records `buffer` bytes hold. A zero field takes the default. */
typedef struct {
  size_t buffer;        /* bytes of records held at most: default 1 MiB,
                           at least 32 KiB                               */
  unsigned interval_ms; /* longest a line waits for its write: default 50 */
  int per_record;       /* 1: each line gets its own write(2) as soon as
                           it is emitted (the reference's behaviour); the
                           emitting thread still never waits for it      */
} pp_sink_opts;

/* fd -1 turns line output off. The library writes on a descriptor of its
 * own for fd (the same file, pipe or socket). 0, or -1 with errno (EBADF). */
int pp_sink_fd(int fd);
int pp_sink_fd_with(int fd, const pp_sink_opts *opts);
/* Opens (appending, creating) and uses a file. 0, or -1 with errno: ENXIO
 * for a FIFO that no reader has open (never waits for one), ETIMEDOUT when
 * open() did not return within 2 s (a stalled file system). */
int pp_sink_file(const char *path);
int pp_sink_file_with(const char *path, const pp_sink_opts *opts);
/* Hands every line emitted so far (all threads) to the kernel and waits for
 * that at most timeout_ms. 0, or -1 with errno ETIMEDOUT (the target is
 * not taking lines; they stay buffered, within the buffer). Switching the
 * sink flushes the old one first (at most 1 s); so does the library's
 * unload, and the close of each Lua state using it. */
int pp_flush(unsigned timeout_ms);

/* Where the library's notices go (a line sink that fails or falls behind,
 * the store full): stderr by default, written by the writer thread,
 * non-blocking, each said once. pp_notices_fd(fd): on a descriptor of the
 * library's own for fd (2: stderr, followed if it is redirected later; -1:
 * nowhere). pp_notices_file(path): appended to path, opened as
 * pp_sink_file opens. Notices already raised go to the old target first.
 * 0, or -1 with errno. */
int pp_notices_fd(int fd);
int pp_notices_file(const char *path);

/* In-memory store: bounded; records it does not keep are counted. Keeps the
 * first `capacity` records emitted (later ones are refused: the default) or
 * the last (the oldest is let go). No allocation per record. */
typedef enum { PP_KEEP_FIRST = 0, PP_KEEP_LAST = 1 } pp_store_keep;
void pp_store_enable(int on);
int pp_store_enabled(void);
void pp_store_set_capacity(size_t records);
void pp_store_set_keep(pp_store_keep keep);
pp_store_keep pp_store_get_keep(void);
size_t pp_store_count(void);
size_t pp_store_capacity(void);
uint64_t pp_store_dropped(void);
/* Copies record i (0-based, oldest kept first); -1 if out of range. */
int pp_store_get(size_t i, pp_record *out);
void pp_store_clear(void);

typedef struct {
  uint64_t emitted;       /* records emitted, all threads                  */
  uint64_t stored;        /* currently in the store                        */
  uint64_t dropped;       /* records the store did not keep                */
  uint64_t line_failures; /* lines lost to a failed write (reader gone,
                             disk full, bad descriptor)                    */
  int last_errno;         /* errno of the last failed line write           */
  uint64_t lines_written; /* lines handed to the kernel, whole             */
  uint64_t lines_dropped; /* lines not written: no room in the buffer (the
                             target not keeping up), or given up when the
                             sink was replaced or the library unloaded     */
  uint64_t lines_pending; /* lines buffered, not yet written               */
  char sink[160];         /* the line sink: "stderr", "fd 5", a path,
                             "none"                                        */
  uint64_t abandoned;     /* dispatches dropped by a pp_begin over them:
                             begun (or charged) and never emitted          */
  uint64_t bad_starts;    /* pp_charge, pp_lap, ... calls that charged
                             nothing: their start cannot be a pp_mark
                             (earlier than the clock's first reading, or
                             more than 1 ms after the call)                */
} pp_stats_t;
void pp_stats(pp_stats_t *out);

/* Calls fn(record) for each emitted record, after the sinks (same thread as
 * the emit). One hook; NULL removes it. */
typedef void (*pp_record_hook)(const pp_record *r, void *ud);
void pp_set_record_hook(pp_record_hook fn, void *ud);

/* This thread's id as printed in tid= (the kernel's thread id). */
uint64_t pp_thread_id(void);

#ifdef __cplusplus
}
#endif
#endif /* PHASEPROBE_H */
