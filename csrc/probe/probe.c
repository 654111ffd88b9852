/*
 * probe.c: the enable flag, the per-thread accumulator and the charging
 * entry points. The accumulator becomes a record at pp_emit (record.c).
 *
 * Every entry point starts with one relaxed load of pp_enabled_flag and
 * returns at once when it is clear. Enabled, a charge is one clock read,
 * one subtraction, one multiply-shift and a saturating add into this
 * thread's accumulator: no lock, no allocation, no write to anything shared.
 */
#include "pp_internal.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

PP_EXPORT int pp_enabled_flag;

static __thread pp_acc *tls_acc __attribute__((tls_model("initial-exec")));
static pthread_key_t acc_key;
static pthread_once_t acc_key_once = PTHREAD_ONCE_INIT;
static uint64_t next_acc_id;
static uint64_t abandoned; /* dispatches dropped by a pp_begin over them */
static int abandoned_said; /* the first drop is said (a notice), once */
static uint64_t bad_starts; /* charges refused: a start no mark can be */

/* A scope's identity: the thread's accumulator id in the top 24 bits, then
 * a count, so a scope of one thread never matches one of another. */
#define SCOPE_ID_SHIFT 40

static void acc_free(void *p) { free(p); }
static int acc_key_made;
static void acc_key_init(void) {
  acc_key_made = pthread_key_create(&acc_key, acc_free) == 0;
}

/* On unload: a thread exiting later must not call into unmapped code, so the
 * key goes; this thread's accumulator goes with it. Other threads' (still
 * alive at unload) are leaked, which is the lesser harm. */
__attribute__((destructor)) static void acc_fini(void) {
  if (acc_key_made) {
    pthread_setspecific(acc_key, NULL);
    pthread_key_delete(acc_key);
  }
  free(tls_acc);
  tls_acc = NULL;
}

static pp_acc *acc_new(void) {
  pthread_once(&acc_key_once, acc_key_init);
  pp_acc *a = calloc(1, sizeof *a);
  if (!a)
    return NULL;
  a->tid = (uint64_t)syscall(SYS_gettid);
  uint64_t id = __atomic_add_fetch(&next_acc_id, 1, __ATOMIC_RELAXED);
  a->next_serial = (id & ((1u << (64 - SCOPE_ID_SHIFT)) - 1)) << SCOPE_ID_SHIFT;
  if (!a->next_serial)
    a->next_serial = (pp_scope)1 << SCOPE_ID_SHIFT;
  pthread_setspecific(acc_key, a);
  tls_acc = a;
  return a;
}

pp_acc *pp_acc_get(void) {
  pp_acc *a = tls_acc;
  return __builtin_expect(a != NULL, 1) ? a : acc_new();
}

pp_acc *pp_acc_peek(void) { return tls_acc; }

/* The accumulator of an open dispatch, opening one implicitly (as the
 * reference's always-present accumulator does) when charges arrive before
 * pp_begin. NULL only if allocation failed: the charge is then dropped. */
static inline pp_acc *open_acc(void) {
  pp_acc *a = pp_acc_get();
  if (__builtin_expect(a && !a->open, 0)) {
    a->schema = pp_schema_current();
    a->open = 1;
  }
  return a;
}

/* open_acc for a charge or a setting: NULL while the probe is off (it is
 * dropped then, as when allocation failed). */
static inline pp_acc *charge_acc(void) {
  return pp_enabled() ? open_acc() : NULL;
}

/* Empties an accumulator for the next dispatch: the record part and the
 * open scopes. What is kept (pp_acc, from `kept` on) stays: the tags (set
 * per thread, not per dispatch), the thread id, the scope identities. */
void pp_acc_clear(pp_acc *a) {
  memset(a, 0, offsetof(pp_acc, kept));
  a->gen++;
}

uint64_t pp_abandoned_count(void) {
  return __atomic_load_n(&abandoned, __ATOMIC_RELAXED);
}

static __thread int tls_bad_start __attribute__((tls_model("initial-exec")));

void pp_note_bad_start(int why) {
  __atomic_fetch_add(&bad_starts, 1, __ATOMIC_RELAXED);
  tls_bad_start = why;
}

int pp_take_bad_start(void) {
  int why = tls_bad_start;
  tls_bad_start = 0;
  return why;
}

uint64_t pp_bad_start_count(void) {
  return __atomic_load_n(&bad_starts, __ATOMIC_RELAXED);
}

PP_EXPORT void pp_set_enabled(int on) {
  if (on)
    pp_clock_choose("enable");
  __atomic_store_n(&pp_enabled_flag, on ? 1 : 0, __ATOMIC_RELAXED);
}

static int env_on(const char *name) {
  const char *v = getenv(name);
  return v && strcmp(v, "0") != 0 && strcmp(v, "") != 0;
}

PP_EXPORT void pp_enable_from_env(void) {
  /* The reference enables on the presence of its variable. PHASEPROBE=0 (or
   * empty) switches the probe off even when that variable is set. */
  const char *ours = getenv("PHASEPROBE");
  if (ours)
    pp_set_enabled(env_on("PHASEPROBE"));
  else if (getenv("VYRE_CUDA_DISPATCH_PHASE_PROBE"))
    pp_set_enabled(1);
}

__attribute__((constructor)) static void pp_init_from_env(void) {
  pp_enable_from_env();
}

/* The device layer's hooks (csrc/cuda/cupti.c sets them when it starts;
 * they stay: the module is kept mapped from then on). */
static const pp_device_hooks *device_hooks;

void pp_set_device_hooks(const pp_device_hooks *h) {
  __atomic_store_n(&device_hooks, h, __ATOMIC_RELEASE);
}

const pp_device_hooks *pp_device_hooks_get(void) {
  return __atomic_load_n(&device_hooks, __ATOMIC_ACQUIRE);
}

int pp_acc_link_device(uint64_t span) {
  pp_acc *a = tls_acc;
  if (!a || !a->open)
    return -1;
  a->device_span = span;
  return 0;
}

/* Appends " name=value" to buf (cap bytes, NUL-terminated) while it fits. */
static void held_add(char *buf, size_t cap, const char *name, uint64_t v) {
  size_t n = strlen(buf);
  if (n < cap)
    snprintf(buf + n, cap - n, " %s=%llu", name, (unsigned long long)v);
}

/* What a dropped dispatch held, as its line would have printed it. */
static void held_text(const pp_acc *a, char *buf, size_t cap) {
  const pp_schema *s = a->schema;
  buf[0] = 0;
  for (size_t i = 0; s && i < s->nphases; i++)
    if (a->phase_ns[i])
      held_add(buf, cap, s->phase_label[i], a->phase_ns[i]);
  for (size_t i = 0; s && i < s->nnested; i++)
    if (a->nested_ns[i])
      held_add(buf, cap, s->nested_label[i], a->nested_ns[i]);
  for (size_t i = 0; s && i < s->ncounts; i++)
    if (a->count[i])
      held_add(buf, cap, s->count[i], a->count[i]);
  static const char *const outcome[] = {"hits", "misses", "disk_hits"};
  for (size_t i = 0; s && i < s->ncaches; i++)
    for (int k = 0; k < 3; k++)
      if (a->cache[i][k]) {
        char name[PP_NAME_MAX + 24];
        snprintf(name, sizeof name, "%s_cache_%s", s->cache[i], outcome[k]);
        held_add(buf, cap, name, a->cache[i][k]);
      }
  if (a->kernel_ns)
    held_add(buf, cap, "kernel_ns", a->kernel_ns);
  if (a->has_window)
    held_add(buf, cap, "device_window_ns", a->device_window_ns);
  if (a->depth)
    held_add(buf, cap, "open_scopes", a->depth);
  if (a->device_span)
    held_add(buf, cap, "device_spans", 1);
  if (!buf[0])
    snprintf(buf, cap, " nothing charged");
}

/* The first dispatch a pp_begin drops, said once per process: a record is
 * lost, and charges made before pp_begin do not reach the new dispatch. */
static void say_abandoned(const pp_acc *a) {
  if (__atomic_exchange_n(&abandoned_said, 1, __ATOMIC_RELAXED))
    return;
  char held[200], msg[sizeof held + 320];
  held_text(a, held, sizeof held);
  snprintf(msg, sizeof msg,
           "phaseprobe: pp_begin on thread %llu dropped a dispatch never "
           "emitted (%s; it held:%s); it is not merged into the new one; "
           "this and later drops are counted in pp_stats().abandoned and "
           "not said again\n",
           (unsigned long long)a->tid,
           a->begin_ticks ? "begun" : "charged without pp_begin", held);
  pp_sink_notice(msg);
}

PP_EXPORT void pp_begin(void) {
  if (!pp_enabled())
    return;
  pp_acc *a = pp_acc_get();
  if (!a)
    return;
  /* A dispatch still pending here (begun or charged, never emitted: one
   * that raised, say) is dropped, never merged into this one, counted
   * (pp_stats: abandoned) and, the first time, said. Its open scopes go
   * with it. */
  if (a->open) {
    __atomic_fetch_add(&abandoned, 1, __ATOMIC_RELAXED);
    say_abandoned(a);
  }
  if (a->device_span) { /* a dispatch dropped before its emit */
    const pp_device_hooks *h = pp_device_hooks_get();
    if (h)
      h->orphan(a->device_span);
  }
  pp_acc_clear(a);
  a->schema = pp_schema_current();
  a->open = 1;
  a->begin_ticks = pp_now_inline();
  a->start_ns = (uint64_t)(((unsigned __int128)a->begin_ticks * pp_clk.mult) >> 32);
}

PP_EXPORT void pp_end(void) {
  if (!pp_enabled())
    return;
  pp_acc *a = pp_acc_get();
  if (!a || !a->open || !a->begin_ticks || a->ended)
    return;
  pp_ticks now = pp_now_inline();
  pp_scopes_settle(a, now);
  a->wall_ns = pp_ticks_delta_ns(a->begin_ticks, now);
  a->ended = 1;
}

PP_EXPORT int pp_is_open(void) {
  pp_acc *a = tls_acc;
  return a && a->open;
}

PP_EXPORT const pp_schema *pp_open_schema(void) {
  pp_acc *a = tls_acc;
  return a && a->open ? a->schema : NULL;
}

static inline void add_phase(pp_acc *a, int phase, uint64_t ns) {
  if ((unsigned)phase < a->schema->nphases)
    a->phase_ns[phase] = pp_sat_add(a->phase_ns[phase], ns);
}

/* ---- scopes: the nesting rule (phaseprobe.h) ------------------------------ */
void pp_scopes_settle(pp_acc *a, pp_ticks now) {
  if (a->depth) {
    pp_scope_ent *top = &a->scope[a->depth - 1];
    add_phase(a, top->phase, pp_ticks_delta_ns(top->seg, now));
    a->depth = 0;
  }
}

PP_EXPORT pp_scope pp_scope_open(int phase) {
  if (!pp_enabled())
    return 0;
  pp_ticks now = pp_now_inline();
  pp_acc *a = open_acc();
  if (!a || a->ended || (unsigned)phase >= a->schema->nphases ||
      a->depth >= PP_SCOPE_DEPTH)
    return 0;
  a->clock_reads++;
  if (a->depth) { /* the running scope pauses: charged up to now */
    pp_scope_ent *top = &a->scope[a->depth - 1];
    add_phase(a, top->phase, pp_ticks_delta_ns(top->seg, now));
  }
  pp_scope_ent *e = &a->scope[a->depth++];
  e->seg = now;
  e->phase = phase;
  return e->serial = ++a->next_serial;
}

int pp_scope_end_at(pp_scope scope, pp_ticks now, uint64_t probe_ns) {
  pp_acc *a = tls_acc;
  if (!scope || !a || !a->depth)
    return 0;
  unsigned d = a->depth - 1;
  if (__builtin_expect(a->scope[d].serial == scope, 1)) {
    a->clock_reads++;
    a->probe_ns = pp_sat_add(a->probe_ns, probe_ns);
    add_phase(a, a->scope[d].phase, pp_ticks_delta_ns(a->scope[d].seg, now));
    a->depth = d;
    if (d) /* the scope below resumes */
      a->scope[d - 1].seg = now;
    return 1;
  }
  /* Not on top: paused, its time charged already. It leaves the stack; the
   * running scope runs on. Not found: closed already (by pp_end, pp_emit or
   * pp_begin) or opened on another thread. */
  while (d-- > 0) {
    if (a->scope[d].serial == scope) {
      memmove(&a->scope[d], &a->scope[d + 1],
              (a->depth - 1 - d) * sizeof a->scope[0]);
      a->depth--;
      a->probe_ns = pp_sat_add(a->probe_ns, probe_ns);
      return 1;
    }
  }
  return 0;
}

PP_EXPORT void pp_scope_close(pp_scope scope) {
  /* No flag check: a scope opened while enabled leaves the stack even if
   * the probe was switched off since. */
  pp_scope_end_at(scope, pp_now_inline(), 0);
}

PP_EXPORT void pp_add_ns(int phase, uint64_t ns) {
  pp_acc *a = charge_acc();
  if (a)
    add_phase(a, phase, ns);
}

PP_EXPORT void pp_add_nested_ns(int nested, uint64_t ns) {
  pp_acc *a = charge_acc();
  if (a && (unsigned)nested < a->schema->nnested)
    a->nested_ns[nested] = pp_sat_add(a->nested_ns[nested], ns);
}

/* The charges of a time since `started`: reads the clock (first, so the
 * accumulator's lookup is not charged), counts the read in the open
 * dispatch, and gives the ns since started (0 backwards) and the reading.
 * NULL where no dispatch can take the charge, or where `started` cannot be
 * a mark (earlier than the clock's first reading, or well after now: a
 * number that did not come from pp_mark): that is counted (pp_stats:
 * bad_starts) and charges nothing. Inlined into each entry. */
static inline __attribute__((always_inline)) pp_acc *
charge_since(pp_ticks started, uint64_t *ns, pp_ticks *now) {
  *now = pp_now_inline();
  int why = pp_start_check(started, *now);
  if (__builtin_expect(why != PP_START_OK, 0)) {
    pp_note_bad_start(why);
    return NULL;
  }
  pp_acc *a = open_acc();
  if (!a)
    return NULL;
  a->clock_reads++;
  *ns = pp_ticks_delta_ns(started, *now);
  return a;
}

/* pp_charge and pp_lap: the time since `started` charged to phase; the
 * clock's reading, or 0 where none was taken (no start, the probe off). */
static inline __attribute__((always_inline)) pp_ticks
charge_lap(int phase, pp_ticks started) {
  if (!started || !pp_enabled())
    return 0;
  uint64_t ns;
  pp_ticks now;
  pp_acc *a = charge_since(started, &ns, &now);
  if (a)
    add_phase(a, phase, ns);
  return now;
}

PP_EXPORT void pp_charge(int phase, pp_ticks started) {
  charge_lap(phase, started);
}

PP_EXPORT void pp_charge_since(int phase, pp_ticks started) {
  if (!pp_enabled())
    return;
  pp_charge(phase, started);
}

PP_EXPORT pp_ticks pp_lap(int phase, pp_ticks started) {
  return charge_lap(phase, started);
}

PP_EXPORT void pp_charge_remainder(int outer, pp_ticks started, int inner) {
  if (!started || !pp_enabled())
    return;
  uint64_t total;
  pp_ticks now;
  pp_acc *a = charge_since(started, &total, &now);
  if (!a)
    return;
  uint64_t held = (unsigned)inner < a->schema->nphases ? a->phase_ns[inner] : 0;
  add_phase(a, outer, total > held ? total - held : 0);
}

PP_EXPORT void pp_charge_nested(int nested, pp_ticks started) {
  if (!started || !pp_enabled())
    return;
  uint64_t ns;
  pp_ticks now;
  pp_acc *a = charge_since(started, &ns, &now);
  if (a && (unsigned)nested < a->schema->nnested)
    a->nested_ns[nested] = pp_sat_add(a->nested_ns[nested], ns);
}

void pp_note_clock_reads(unsigned n) {
  pp_acc *a = tls_acc;
  if (a && a->open)
    a->clock_reads += n;
}

PP_EXPORT uint64_t pp_phase_ns(int phase) {
  pp_acc *a = tls_acc;
  if (!a || !a->open || (unsigned)phase >= a->schema->nphases)
    return 0;
  return a->phase_ns[phase];
}

/* The open dispatch's slot of count `count`, for a setting: NULL while the
 * probe is off or when the schema has no such count. */
static uint64_t *count_slot(int count) {
  pp_acc *a = charge_acc();
  return a && (unsigned)count < a->schema->ncounts ? &a->count[count] : NULL;
}

PP_EXPORT void pp_set_count(int count, uint64_t value) {
  uint64_t *slot = count_slot(count);
  if (slot)
    *slot = value;
}

PP_EXPORT void pp_add_count(int count, uint64_t delta) {
  uint64_t *slot = count_slot(count);
  if (slot)
    *slot = pp_sat_add(*slot, delta);
}

PP_EXPORT void pp_record_kernel(uint64_t ns, pp_kernel_src src,
                                uint64_t floor_ns) {
  pp_acc *a = charge_acc();
  if (!a)
    return;
  a->kernel_ns = ns;
  a->kernel_src = src;
  a->kernel_floor_ns = floor_ns;
}

PP_EXPORT void pp_record_kernel_error(uint64_t ns) {
  pp_acc *a = charge_acc();
  if (a)
    a->kernel_error_ns = ns;
}

PP_EXPORT void pp_record_device_timeline(const pp_device_timeline *t) {
  if (!pp_enabled() || !t)
    return;
  pp_acc *a = open_acc();
  if (!a)
    return;
  a->tl = *t;
  a->has_timeline = 1;
  a->kernel_ns = t->kernel_ns;
  a->kernel_src = PP_KSRC_CUPTI;
  a->kernel_floor_ns = 0;
}

PP_EXPORT void pp_record_kernel_ns(uint64_t ns) {
  pp_record_kernel(ns, PP_KSRC_USER, 0);
}

PP_EXPORT void pp_record_device_window_ns(uint64_t ns) {
  pp_acc *a = charge_acc();
  if (!a)
    return;
  a->device_window_ns = ns;
  a->has_window = 1;
}

PP_EXPORT void pp_cache_event(int cache, pp_cache_outcome outcome) {
  pp_acc *a = charge_acc();
  if (!a || (unsigned)cache >= a->schema->ncaches)
    return;
  if (outcome == PP_CACHE_MISS) {
    a->cache[cache][1] = pp_sat_add(a->cache[cache][1], 1);
  } else {
    a->cache[cache][0] = pp_sat_add(a->cache[cache][0], 1);
    if (outcome == PP_CACHE_DISK_HIT)
      a->cache[cache][2] = pp_sat_add(a->cache[cache][2], 1);
  }
}

PP_EXPORT void pp_add_probe_ns(uint64_t ns) {
  pp_acc *a = charge_acc();
  if (a)
    a->probe_ns = pp_sat_add(a->probe_ns, ns);
}

static int tag_char_ok(char c, int key) {
  if (key)
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  return c > ' ' && c < 127 && c != '=';
}

/* Whether this thread's tags hold `key`. */
static int tags_have(const char *tags, const char *key, size_t klen) {
  for (const char *p = tags; *p == ' ';) {
    const char *k = p + 1, *eq = strchr(k, '='), *end = strchr(k, ' ');
    if (!end)
      end = k + strlen(k);
    if (eq && (size_t)(eq - k) == klen && strncmp(k, key, klen) == 0)
      return 1;
    p = end;
  }
  return 0;
}

int pp_tag_has_key(const char *key) {
  pp_acc *a = tls_acc;
  return a && key && tags_have(a->tags, key, strlen(key));
}

const char *pp_tag_refusal(const char *key, const char *value, char *buf,
                           size_t n) {
  if (!key || !*key)
    return "an empty key";
  if (strlen(key) > PP_NAME_MAX) {
    snprintf(buf, n, "key longer than %d bytes", PP_NAME_MAX);
    return buf;
  }
  for (const char *p = key; *p; p++)
    if (!tag_char_ok(*p, 1))
      return "keys are [a-z0-9_]";
  if (!value) /* a removal: any key that could have been set */
    return NULL;
  if (key[0] == '_')
    return "a key starts with '_' (the names of the record itself)";
  const pp_schema *s = pp_schema_with_field(key);
  if (s) {
    snprintf(buf, n, "'%s' is a field of schema '%s': a record would carry "
                     "the name twice", key, s->prefix);
    return buf;
  }
  {
    if (!*value)
      return "an empty value (nil removes a tag)";
    if (strlen(value) > 128)
      return "a value longer than 128 bytes";
    for (const char *p = value; *p; p++)
      if (!tag_char_ok(*p, 0))
        return "values are printable, without spaces or '='";
  }
  return NULL;
}

/* Tags are kept as " k1=v1 k2=v2", sorted by key, so the C line and the Lua
 * record print them in the same order. */
PP_EXPORT int pp_tag(const char *key, const char *value) {
  pp_acc *a = pp_acc_get();
  char why[160];
  if (!a || pp_tag_refusal(key, value, why, sizeof why))
    return -1;
  char out[PP_TAGS_MAX] = {0};
  size_t n = 0, klen = strlen(key);
  int placed = value == NULL;
  const char *p = a->tags;
  while (*p == ' ') {
    const char *k = p + 1, *eq = strchr(k, '='), *end = strchr(k, ' ');
    if (!end)
      end = k + strlen(k);
    size_t kl = (size_t)(eq - k);
    int cmp = strncmp(k, key, kl < klen ? kl : klen);
    if (cmp == 0)
      cmp = kl < klen ? -1 : kl > klen ? 1 : 0;
    if (!placed && cmp >= 0) {
      int w = snprintf(out + n, sizeof out - n, " %s=%s", key, value);
      if (w < 0 || (size_t)w >= sizeof out - n)
        return -1;
      n += (size_t)w;
      placed = 1;
    }
    if (cmp != 0) {
      size_t len = (size_t)(end - p);
      if (n + len >= sizeof out)
        return -1;
      memcpy(out + n, p, len);
      n += len;
    }
    p = end;
  }
  if (!placed) {
    int w = snprintf(out + n, sizeof out - n, " %s=%s", key, value);
    if (w < 0 || (size_t)w >= sizeof out - n)
      return -1;
    n += (size_t)w;
  }
  out[n] = 0;
  memcpy(a->tags, out, sizeof out);
  a->tags_checked = 0;
  return 0;
}

/* A tag set before another thread declared a schema with a field of that
 * name would print the name twice in this schema's records: such a tag is
 * removed from the thread's tags, and said once. Checked once per schema
 * and set of tags. */
void pp_tags_settle(pp_acc *a, const pp_schema *s) {
  if (!a->tags[0] || a->tags_checked == s->id + 1)
    return;
  for (size_t i = 0; i < s->nfields; i++) {
    if (tags_have(a->tags, s->field[i], strlen(s->field[i]))) {
      char key[PP_LABEL_MAX], msg[256];
      snprintf(key, sizeof key, "%s", s->field[i]);
      pp_tag(key, NULL);
      snprintf(msg, sizeof msg,
               "phaseprobe: tag '%s' removed from thread %llu: schema '%s' "
               "has a field of that name\n",
               key, (unsigned long long)a->tid, s->prefix);
      pp_sink_notice(msg);
    }
  }
  a->tags_checked = s->id + 1;
}

PP_EXPORT uint64_t pp_thread_id(void) {
  pp_acc *a = pp_acc_get();
  return a ? a->tid : 0;
}

double pp_charge_cost_ns(void) {
  const pp_clock_info *c = pp_clock();
  return c->read_ns[c->kind];
}
