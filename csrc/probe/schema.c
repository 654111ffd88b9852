/*
 * schema.c: what a record holds and how its line is spelled.
 *
 * A schema is validated once, at declaration, and is immutable after: the
 * reference guarded its phase table with tests (indices inside the
 * accumulator, distinct labels); here a bad table cannot be declared at all.
 */
#include "pp_internal.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define PP_MAX_SCHEMAS 32

static pp_schema schemas[PP_MAX_SCHEMAS];
static int nschemas;
static pthread_mutex_t schema_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t default_once = PTHREAD_ONCE_INIT;
/* The schema this thread's next dispatch opens under; NULL: the default.
 * Per thread, so that one thread's choice never reaches another's
 * dispatches. */
static __thread const pp_schema *current __attribute__((tls_model("initial-exec")));

static const char *const default_phases[] = {
    "prepare", "ptx", "modkey", "stage", "resolve",
    "lease", "launch", "release", "readback"};
static const char *const default_nested[] = {"ptx_digest", "ptx_vsa"};
static const char *const default_counts[] = {
    "nodes", "ptx_bytes", "buffers", "bindings", "fixpoint", "grid_blocks"};
static const char *const default_caches[] = {"ptx"};

/* Lower-case identifier: [a-z][a-z0-9_]*. */
static int good_name(const char *s) {
  if (!s || !islower((unsigned char)s[0]))
    return 0;
  for (const char *p = s; *p; p++)
    if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_'))
      return 0;
  return 1;
}

static int good_prefix(const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (n == 0 || n >= PP_PREFIX_MAX)
    return 0;
  for (const char *p = s; *p; p++)
    if (!(isalnum((unsigned char)*p) || strchr("_-.:/", *p)))
      return 0;
  return 1;
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Copies a short name, accepting the printed spelling too ("prepare_ns",
 * "sub_ptx_vsa_ns"). */
static int take_name(char *dst, const char *src, int nested, const char *what,
                     size_t i, char *err, size_t errlen) {
  if (!src)
    return pp_fail(err, errlen, "%s %zu: missing name", what, i + 1);
  char tmp[PP_LABEL_MAX + 8];
  if (strlen(src) >= sizeof tmp)
    return pp_fail(err, errlen, "%s %zu ('%.20s...'): name longer than %d bytes",
                what, i + 1, src, PP_NAME_MAX);
  strcpy(tmp, src);
  char *p = tmp;
  if (nested >= 0) {
    if (nested && strncmp(p, "sub_", 4) == 0)
      p += 4;
    if (ends_with(p, "_ns"))
      p[strlen(p) - 3] = 0;
  }
  if (!good_name(p))
    return pp_fail(err, errlen,
                "%s %zu ('%s'): a name is a lower-case identifier "
                "([a-z][a-z0-9_]*)",
                what, i + 1, src);
  if (strlen(p) > PP_NAME_MAX)
    return pp_fail(err, errlen, "%s %zu ('%s'): name longer than %d bytes", what,
                i + 1, src, PP_NAME_MAX);
  strcpy(dst, p);
  return 0;
}

/* Appends a field to the line's layout; returns its index. */
static int add_field(pp_schema *s, const char *name, pp_field_kind kind) {
  /* Names are at most PP_NAME_MAX bytes, so every label fits. */
  size_t n = strlen(name);
  if (n >= PP_LABEL_MAX)
    n = PP_LABEL_MAX - 1;
  memcpy(s->field[s->nfields], name, n);
  s->field[s->nfields][n] = 0;
  s->kind[s->nfields] = kind;
  return (int)s->nfields++;
}

/* Appends n u64 fields named by the strings at names, stride bytes apart
 * (a column of a char[][] table), each with suffix ("" for none); returns
 * the index of the first. */
static int add_fields(pp_schema *s, size_t n, const char *names, size_t stride,
                      const char *suffix) {
  int first = (int)s->nfields;
  char buf[PP_LABEL_MAX + 24];
  for (size_t i = 0; i < n; i++) {
    snprintf(buf, sizeof buf, "%s%s", names + i * stride, suffix);
    add_field(s, buf, PP_FIELD_U64);
  }
  return first;
}
#define ADD_LIST(s, table, n, suffix)                                          \
  add_fields(s, n, (table)[0], sizeof (table)[0], suffix)

/* The line's fields in order: the reference's, then ours. */
static void build_fields(pp_schema *s) {
  s->nfields = 0;
  s->f_seq = add_field(s, "seq", PP_FIELD_U64);
  s->f_count0 = ADD_LIST(s, s->count, s->ncounts, "");
  s->f_wall = add_field(s, "wall_ns", PP_FIELD_U64);
  s->f_enqueue = add_field(s, "enqueue_ns", PP_FIELD_U64);
  s->f_wait = add_field(s, "wait_ns", PP_FIELD_U64);
  s->f_window = add_field(s, "device_window_ns", PP_FIELD_U64);
  s->f_kernel = add_field(s, "kernel_ns", PP_FIELD_U64);
  s->f_phase0 = ADD_LIST(s, s->phase_label, s->nphases, "");
  s->f_nested0 = ADD_LIST(s, s->nested_label, s->nnested, "");
  s->f_named = add_field(s, "named_host_ns", PP_FIELD_U64);
  s->f_unattr = add_field(s, "unattributed_ns", PP_FIELD_U64);
  s->f_cache0 = (int)s->nfields; /* hits and misses, cache by cache */
  for (size_t i = 0; i < s->ncaches; i++) {
    add_fields(s, 1, s->cache[i], 0, "_cache_hits");
    add_fields(s, 1, s->cache[i], 0, "_cache_misses");
  }
  /* Everything below is ours; the reference's line ends above. */
  s->f_disk0 = ADD_LIST(s, s->cache, s->ncaches, "_cache_disk_hits");
  s->f_tid = add_field(s, "tid", PP_FIELD_U64);
  s->f_start = add_field(s, "start_ns", PP_FIELD_U64);
  s->f_probe = add_field(s, "probe_ns", PP_FIELD_U64);
  s->f_ksrc = add_field(s, "kernel_src", PP_FIELD_KERNEL_SRC);
  s->f_kfloor = add_field(s, "kernel_floor_ns", PP_FIELD_U64);
  s->f_kerr = add_field(s, "kernel_error_ns", PP_FIELD_EVENT_ERROR);
  s->f_kernels = add_field(s, "kernels", PP_FIELD_DEVICE);
  s->f_launch_at = add_field(s, "launch_at_ns", PP_FIELD_DEVICE);
  s->f_kfirst = add_field(s, "kernel_first_ns", PP_FIELD_DEVICE);
  s->f_klast = add_field(s, "kernel_last_ns", PP_FIELD_DEVICE);
  s->f_latency = add_field(s, "launch_latency_ns", PP_FIELD_DEVICE);
  s->f_hostgap = add_field(s, "host_gap_ns", PP_FIELD_DEVICE);
}

static int fill(pp_schema *s, const pp_schema_def *d, char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  if (!d)
    return pp_fail(err, errlen, "no schema definition");
  if (!good_prefix(d->prefix))
    return pp_fail(err, errlen,
                "prefix '%s': 1 to %d characters of letters, digits and _-.:/",
                d->prefix ? d->prefix : "(null)", PP_PREFIX_MAX - 1);
  snprintf(s->prefix, sizeof s->prefix, "%s", d->prefix);
  if (d->nphases == 0)
    return pp_fail(err, errlen, "phases: a schema needs at least one phase");
  if (d->nphases > PP_MAX_PHASES)
    return pp_fail(err, errlen, "phases: %zu given, at most %d", d->nphases,
                PP_MAX_PHASES);
  if (d->nnested > PP_MAX_NESTED)
    return pp_fail(err, errlen, "nested: %zu given, at most %d", d->nnested,
                PP_MAX_NESTED);
  if (d->ncounts > PP_MAX_COUNTS)
    return pp_fail(err, errlen, "counts: %zu given, at most %d", d->ncounts,
                PP_MAX_COUNTS);
  if (d->ncaches > PP_MAX_CACHES)
    return pp_fail(err, errlen, "caches: %zu given, at most %d", d->ncaches,
                PP_MAX_CACHES);
  s->nphases = d->nphases;
  s->nnested = d->nnested;
  s->ncounts = d->ncounts;
  s->ncaches = d->ncaches;
  for (size_t i = 0; i < d->nphases; i++) {
    if (take_name(s->phase[i], d->phases[i], 0, "phase", i, err, errlen))
      return -1;
    snprintf(s->phase_label[i], PP_LABEL_MAX, "%s_ns", s->phase[i]);
  }
  for (size_t i = 0; i < d->nnested; i++) {
    if (take_name(s->nested[i], d->nested[i], 1, "nested region", i, err, errlen))
      return -1;
    snprintf(s->nested_label[i], PP_LABEL_MAX, "sub_%s_ns", s->nested[i]);
  }
  for (size_t i = 0; i < d->ncounts; i++)
    if (take_name(s->count[i], d->counts[i], -1, "count", i, err, errlen))
      return -1;
  for (size_t i = 0; i < d->ncaches; i++)
    if (take_name(s->cache[i], d->caches[i], -1, "cache", i, err, errlen))
      return -1;
  /* A phase and a nested region with the same short name would be read as
   * one by anyone grepping the names, even though the labels differ. */
  for (size_t i = 0; i < s->nphases; i++)
    for (size_t j = 0; j < s->nnested; j++)
      if (strcmp(s->phase[i], s->nested[j]) == 0)
        return pp_fail(err, errlen,
                    "nested region '%s' clashes with phase '%s': a nested "
                    "region is measured inside a phase and must not share "
                    "its name",
                    s->nested[j], s->phase[i]);
  build_fields(s);
  for (size_t i = 0; i < s->nfields; i++)
    for (size_t j = i + 1; j < s->nfields; j++)
      if (strcmp(s->field[i], s->field[j]) == 0)
        return pp_fail(err, errlen,
                    "label '%s' appears twice in the record (fields %zu and "
                    "%zu): two entries printing one name would be merged by "
                    "every reader",
                    s->field[i], i + 1, j + 1);
  return 0;
}

static void init_default(void) {
  pp_schema_def d = {
      .prefix = "vyre-cuda-dispatch-phase",
      .phases = default_phases, .nphases = 9,
      .nested = default_nested, .nnested = 2,
      .counts = default_counts, .ncounts = 6,
      .caches = default_caches, .ncaches = 1,
  };
  char err[256];
  if (fill(&schemas[0], &d, err, sizeof err) != 0)
    __builtin_trap(); /* the built-in table is checked by the tests */
  schemas[0].id = 0;
  nschemas = 1;
}

PP_EXPORT const pp_schema *pp_schema_default(void) {
  pthread_once(&default_once, init_default);
  return &schemas[0];
}

PP_EXPORT const pp_schema *pp_schema_declare(const pp_schema_def *def,
                                             char *err, size_t errlen) {
  pp_schema_default();
  pp_schema tmp;
  if (fill(&tmp, def, err, errlen) != 0)
    return NULL;
  for (size_t i = 0; i < tmp.nfields; i++)
    if (pp_tag_has_key(tmp.field[i])) {
      pp_fail(err, errlen,
           "field '%s' is the tag '%s' of this thread: a record would carry "
           "the name twice (remove the tag first)",
           tmp.field[i], tmp.field[i]);
      return NULL;
    }
  pthread_mutex_lock(&schema_lock);
  /* An identical declaration returns the schema already registered. */
  for (int i = 0; i < nschemas; i++) {
    tmp.id = i;
    if (memcmp(&schemas[i], &tmp, sizeof tmp) == 0) {
      pthread_mutex_unlock(&schema_lock);
      return &schemas[i];
    }
  }
  if (nschemas >= PP_MAX_SCHEMAS) {
    pthread_mutex_unlock(&schema_lock);
    pp_fail(err, errlen, "too many schemas: at most %d per process",
         PP_MAX_SCHEMAS);
    return NULL;
  }
  tmp.id = nschemas;
  schemas[nschemas] = tmp;
  const pp_schema *s = &schemas[nschemas];
  __atomic_store_n(&nschemas, nschemas + 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&schema_lock);
  return s;
}

const pp_schema *pp_schema_with_field(const char *name) {
  pp_schema_default();
  int n = __atomic_load_n(&nschemas, __ATOMIC_ACQUIRE);
  for (int i = 0; i < n; i++)
    if (pp_schema_field_index(&schemas[i], name) >= 0)
      return &schemas[i];
  return NULL;
}

PP_EXPORT void pp_schema_use(const pp_schema *s) {
  pp_schema_default();
  current = s;
}

PP_EXPORT const pp_schema *pp_schema_current(void) {
  const pp_schema *s = current;
  return s ? s : pp_schema_default();
}

PP_EXPORT const char *pp_schema_prefix(const pp_schema *s) { return s->prefix; }
PP_EXPORT size_t pp_schema_nphases(const pp_schema *s) { return s->nphases; }
PP_EXPORT size_t pp_schema_nnested(const pp_schema *s) { return s->nnested; }
PP_EXPORT size_t pp_schema_ncounts(const pp_schema *s) { return s->ncounts; }
PP_EXPORT size_t pp_schema_ncaches(const pp_schema *s) { return s->ncaches; }
PP_EXPORT size_t pp_schema_nfields(const pp_schema *s) { return s->nfields; }

#define GETTER(fn, arr, n)                                                     \
  PP_EXPORT const char *fn(const pp_schema *s, size_t i) {                     \
    return i < s->n ? s->arr[i] : NULL;                                        \
  }
GETTER(pp_schema_phase_name, phase, nphases)
GETTER(pp_schema_phase_label, phase_label, nphases)
GETTER(pp_schema_nested_name, nested, nnested)
GETTER(pp_schema_nested_label, nested_label, nnested)
GETTER(pp_schema_count_name, count, ncounts)
GETTER(pp_schema_cache_name, cache, ncaches)
GETTER(pp_schema_field_name, field, nfields)
#undef GETTER

PP_EXPORT pp_field_kind pp_schema_field_kind(const pp_schema *s, size_t i) {
  return i < s->nfields ? s->kind[i] : PP_FIELD_U64;
}

static int find2(const char (*names)[PP_NAME_MAX + 1],
                 const char (*labels)[PP_LABEL_MAX], size_t n,
                 const char *name) {
  if (!name)
    return -1;
  for (size_t i = 0; i < n; i++)
    if (strcmp(names[i], name) == 0 || (labels && strcmp(labels[i], name) == 0))
      return (int)i;
  return -1;
}

PP_EXPORT int pp_schema_phase_index(const pp_schema *s, const char *name) {
  return find2(s->phase, s->phase_label, s->nphases, name);
}
PP_EXPORT int pp_schema_nested_index(const pp_schema *s, const char *name) {
  return find2(s->nested, s->nested_label, s->nnested, name);
}
PP_EXPORT int pp_schema_count_index(const pp_schema *s, const char *name) {
  return find2(s->count, NULL, s->ncounts, name);
}
PP_EXPORT int pp_schema_cache_index(const pp_schema *s, const char *name) {
  return find2(s->cache, NULL, s->ncaches, name);
}
PP_EXPORT int pp_schema_field_index(const pp_schema *s, const char *name) {
  if (!name)
    return -1;
  for (size_t i = 0; i < s->nfields; i++)
    if (strcmp(s->field[i], name) == 0)
      return (int)i;
  return -1;
}
