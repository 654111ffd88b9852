/*
 * record.c: the record, in one place: built from this thread's accumulator
 * (pp_emit), written as its line (pp_format_line; the sink's writer thread
 * writes the same bytes, pp_line_format, from the copy of the record that
 * pp_emit left in its thread's buffer), and read by field name
 * (pp_record_get).
 *
 *   probe.c (the accumulator) -> pp_emit -> pp_record -> sink.c (the
 *   threads' buffers, hook; sink_writer.c writes the lines), store.c ->
 *   Lua (lua_record.c), parsers (parse.c)
 *
 * The fields and their order are the schema's (schema.c): the record's
 * values are in line order, so the line is the schema's field names and the
 * values side by side, then the thread's tags. Saturation rules: sums of
 * phases saturate at UINT64_MAX (pp_sat_add), and unattributed_ns =
 * wall_ns - named_host_ns is 0 when the named phases exceed the wall (a
 * caller-supplied wall shorter than what was charged), never a wrapped
 * number.
 */
#include "pp_internal.h"

#include <string.h>

/* ---- assembly ------------------------------------------------------------ */
static uint64_t next_seq;

/* The form of 0.1.0, with no `given`: a field at 0 (what a designated
 * initializer leaves) or at PP_AUTO is the probe's; any other value is
 * given. So {.seq = n} after a measured dispatch keeps the measured wall
 * and the recorded device window. */
static uint32_t old_form_given(const pp_emit_args *d) {
#define PP_OLD_(v, bit) ((v) != 0 && (v) != PP_AUTO ? (bit) : 0u)
  return PP_OLD_(d->seq, PP_GIVEN_SEQ) | PP_OLD_(d->wall_ns, PP_GIVEN_WALL) |
         PP_OLD_(d->enqueue_ns, PP_GIVEN_ENQUEUE) |
         PP_OLD_(d->wait_ns, PP_GIVEN_WAIT) |
         PP_OLD_(d->device_window_ns, PP_GIVEN_WINDOW);
#undef PP_OLD_
}

PP_EXPORT int pp_emit(const pp_emit_args *args, pp_record *out) {
  if (!pp_enabled())
    return -1;
  pp_ticks now = pp_now_inline();
  /* The accumulator always exists: without pp_begin, what was charged
   * since the last emit (maybe nothing) makes the record, as in the
   * reference. */
  pp_acc *a = pp_acc_get();
  if (!a)
    return -1;
  if (!a->open) {
    a->schema = pp_schema_current();
    a->open = 1;
  }
  if (!a->ended)
    pp_scopes_settle(a, now);
  pp_emit_args d = args ? *args : PP_EMIT_ARGS_AUTO;
  uint32_t g = d.given ? d.given : old_form_given(&d);
  const pp_schema *s = a->schema;
  pp_tags_settle(a, s);
  /* built in the caller's copy when there is one (a record is 1 KiB) */
  pp_record own, *r = out ? out : &own;
  memset(r->values, 0, sizeof(uint64_t) * s->nfields);
  r->schema = s;
  memcpy(r->tags, a->tags, sizeof r->tags);
  uint64_t *v = r->values;
  v[s->f_seq] = g & PP_GIVEN_SEQ
                    ? d.seq
                    : __atomic_fetch_add(&next_seq, 1, __ATOMIC_RELAXED);
  uint64_t wall = d.wall_ns;
  if (!(g & PP_GIVEN_WALL))
    wall = a->ended ? a->wall_ns
           : a->begin_ticks ? pp_ticks_delta_ns(a->begin_ticks, now)
                            : 0;
  for (size_t i = 0; i < s->ncounts; i++)
    v[s->f_count0 + (int)i] = a->count[i];
  v[s->f_wall] = wall;
  v[s->f_enqueue] = g & PP_GIVEN_ENQUEUE ? d.enqueue_ns : 0;
  v[s->f_wait] = g & PP_GIVEN_WAIT ? d.wait_ns : 0;
  v[s->f_window] = g & PP_GIVEN_WINDOW ? d.device_window_ns
                   : a->has_window     ? a->device_window_ns
                                       : 0;
  v[s->f_kernel] = a->kernel_ns;
  uint64_t named = 0;
  for (size_t i = 0; i < s->nphases; i++) {
    v[s->f_phase0 + (int)i] = a->phase_ns[i];
    named = pp_sat_add(named, a->phase_ns[i]);
  }
  for (size_t i = 0; i < s->nnested; i++)
    v[s->f_nested0 + (int)i] = a->nested_ns[i];
  v[s->f_named] = named;
  v[s->f_unattr] = wall > named ? wall - named : 0;
  for (size_t i = 0; i < s->ncaches; i++) {
    v[s->f_cache0 + 2 * (int)i] =
        g & PP_GIVEN_HITS(i) ? d.cache_hits[i] : a->cache[i][0];
    v[s->f_cache0 + 2 * (int)i + 1] =
        g & PP_GIVEN_MISSES(i) ? d.cache_misses[i] : a->cache[i][1];
    v[s->f_disk0 + (int)i] =
        g & PP_GIVEN_DISK_HITS(i) ? d.cache_disk_hits[i] : a->cache[i][2];
  }
  v[s->f_tid] = a->tid;
  v[s->f_start] = a->start_ns;
  uint64_t est = (uint64_t)((double)a->clock_reads * pp_charge_cost_ns() + 0.5);
  v[s->f_probe] = pp_sat_add(a->probe_ns, est);
  v[s->f_ksrc] = (uint64_t)a->kernel_src;
  v[s->f_kfloor] = a->kernel_floor_ns;
  v[s->f_kerr] = a->kernel_error_ns;
  int keep_window = (g & PP_GIVEN_WINDOW) || a->has_window;
  if (a->has_timeline)
    pp_record_fill_timeline(r, &a->tl, keep_window);
  uint64_t span = a->device_span;
  pp_acc_clear(a);
  const pp_device_hooks *h = span ? pp_device_hooks_get() : NULL;
  if (h) {
    /* The device timeline comes later: the span keeps the record and
     * delivers it then; the caller's copy says so. */
    v[s->f_ksrc] = PP_KSRC_PENDING;
    if (h->defer(span, r, keep_window))
      return 0;
  }
  pp_sinks_deliver(r);
  return 0;
}

void pp_record_fill_timeline(pp_record *r, const pp_device_timeline *t,
                             int keep_window) {
  const pp_schema *s = r->schema;
  uint64_t *v = r->values;
  if (!t) {
    v[s->f_ksrc] = PP_KSRC_NONE;
    v[s->f_kernel] = 0;
    return;
  }
  uint64_t origin = v[s->f_start];
#define PP_SINCE_(x) ((x) > origin ? (x) - origin : 0)
  v[s->f_ksrc] = PP_KSRC_CUPTI;
  v[s->f_kernel] = t->kernel_ns;
  v[s->f_kfloor] = 0;
  v[s->f_kerr] = 0;
  if (!keep_window)
    v[s->f_window] = t->window_ns;
  v[s->f_kernels] = t->kernels;
  v[s->f_launch_at] = PP_SINCE_(t->first_launch_ns);
  v[s->f_kfirst] = PP_SINCE_(t->first_start_ns);
  v[s->f_klast] = PP_SINCE_(t->last_end_ns);
  v[s->f_latency] = t->launch_latency_ns;
  v[s->f_hostgap] = t->host_gap_ns;
#undef PP_SINCE_
}

/* ---- the line ------------------------------------------------------------ */
static const char *const ksrc_names[] = {"none", "event", "cupti", "user",
                                         "pending"};

const char *pp_ksrc_name(uint64_t k) { return k < 5 ? ksrc_names[k] : "none"; }

PP_EXPORT const char *pp_kernel_src_name(pp_kernel_src src) {
  return pp_ksrc_name((uint64_t)src);
}

int pp_field_present(const pp_schema *s, const uint64_t *values, size_t i) {
  if (i >= s->nfields)
    return 0;
  switch (s->kind[i]) {
  case PP_FIELD_DEVICE:
    return values[s->f_ksrc] == PP_KSRC_CUPTI;
  case PP_FIELD_EVENT_ERROR:
    return values[s->f_ksrc] == PP_KSRC_EVENT && values[i] != 0;
  default:
    return 1;
  }
}

PP_EXPORT int pp_record_field_present(const pp_record *r, size_t i) {
  return pp_field_present(r->schema, r->values, i);
}

static const char digit_pairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536"
    "37383940414243444546474849505152535455565758596061626364656667686970717273"
    "7475767778798081828384858687888990919293949596979899";

/* v in decimal at p, two digits per division; returns the end. */
char *pp_put_u64(char *p, uint64_t v) {
  char tmp[20];
  char *t = tmp + sizeof tmp;
  while (v >= 100) {
    unsigned i = (unsigned)(v % 100) * 2;
    v /= 100;
    t -= 2;
    memcpy(t, digit_pairs + i, 2);
  }
  if (v >= 10) {
    t -= 2;
    memcpy(t, digit_pairs + v * 2, 2);
  } else {
    *--t = (char)('0' + v);
  }
  size_t n = (size_t)(tmp + sizeof tmp - t);
  memcpy(p, t, n);
  return p + n;
}

size_t pp_line_format(const pp_schema *s, const uint64_t *values,
                      const char *tags, size_t ntags, char *out) {
  char *p = out;
  size_t n = strlen(s->prefix);
  memcpy(p, s->prefix, n);
  p += n;
  for (size_t i = 0; i < s->nfields; i++) {
    if (s->kind[i] >= PP_FIELD_DEVICE && !pp_field_present(s, values, i))
      continue;
    *p++ = ' ';
    n = strlen(s->field[i]);
    memcpy(p, s->field[i], n);
    p += n;
    *p++ = '=';
    if (s->kind[i] == PP_FIELD_KERNEL_SRC) {
      const char *name = pp_ksrc_name(values[i]);
      n = strlen(name);
      memcpy(p, name, n);
      p += n;
    } else {
      p = pp_put_u64(p, values[i]);
    }
  }
  memcpy(p, tags, ntags);
  p += ntags;
  return (size_t)(p - out);
}

size_t pp_record_format(const pp_record *r, char *out) {
  return pp_line_format(r->schema, r->values, r->tags,
                        pp_record_tags_len(r), out);
}

PP_EXPORT size_t pp_format_line(const pp_record *r, char *buf, size_t cap) {
  if (cap >= PP_LINE_BYTES) {
    size_t len = pp_record_format(r, buf);
    buf[len] = 0;
    return len;
  }
  /* Built in a scratch buffer, then cut, so the length returned is the full
   * line's. */
  char line[PP_LINE_BYTES];
  size_t len = pp_record_format(r, line);
  if (cap) {
    size_t c = len < cap - 1 ? len : cap - 1;
    memcpy(buf, line, c);
    buf[c] = 0;
  }
  return len;
}

/* ---- field access -------------------------------------------------------- */
PP_EXPORT uint64_t pp_record_get(const pp_record *r, const char *field,
                                 int *found) {
  int i = pp_schema_field_index(r->schema, field);
  if (found)
    *found = i >= 0;
  return i >= 0 ? r->values[i] : 0;
}
