/*
 * sink.c: where emitted records go. A line writer (stderr by default, a
 * file, or off) and a bounded in-memory store. Both run after the record was
 * captured, never inside a measured region. A failing line write never fails
 * the dispatch: it is counted, and reported once on stderr.
 */
#include "pp_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const ksrc_names[] = {"none", "event", "cupti", "user"};

static char *put_u64(char *p, uint64_t v) {
  char tmp[20];
  int n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  while (n)
    *p++ = tmp[--n];
  return p;
}

PP_EXPORT size_t pp_format_line(const pp_record *r, char *buf, size_t cap) {
  /* Built in a scratch buffer big enough for any record, then copied, so
   * the length returned is the full line's. */
  char line[PP_PREFIX_MAX + PP_MAX_FIELDS * (PP_LABEL_MAX + 22) + PP_TAGS_MAX];
  const pp_schema *s = r->schema;
  char *p = line;
  size_t n = strlen(s->prefix);
  memcpy(p, s->prefix, n);
  p += n;
  for (size_t i = 0; i < s->nfields; i++) {
    *p++ = ' ';
    n = strlen(s->field[i]);
    memcpy(p, s->field[i], n);
    p += n;
    *p++ = '=';
    if (s->kind[i] == PP_FIELD_KERNEL_SRC) {
      uint64_t k = r->values[i];
      const char *name = k < 4 ? ksrc_names[k] : "none";
      n = strlen(name);
      memcpy(p, name, n);
      p += n;
    } else {
      p = put_u64(p, r->values[i]);
    }
  }
  n = strnlen(r->tags, PP_TAGS_MAX - 1);
  memcpy(p, r->tags, n);
  p += n;
  size_t len = (size_t)(p - line);
  if (cap) {
    size_t c = len < cap - 1 ? len : cap - 1;
    memcpy(buf, line, c);
    buf[c] = 0;
  }
  return len;
}

PP_EXPORT uint64_t pp_record_get(const pp_record *r, const char *field,
                                 int *found) {
  int i = pp_schema_field_index(r->schema, field);
  if (found)
    *found = i >= 0;
  return i >= 0 ? r->values[i] : 0;
}

/* ---- line sink ----------------------------------------------------------- */
static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;
static int line_fd = 2;
static int line_fd_owned;
static uint64_t line_failures;
static int line_errno;
static int failure_reported;

PP_EXPORT void pp_sink_fd(int fd) {
  pthread_mutex_lock(&sink_lock);
  if (line_fd_owned && line_fd >= 0)
    close(line_fd);
  line_fd = fd;
  line_fd_owned = 0;
  failure_reported = 0;
  pthread_mutex_unlock(&sink_lock);
}

PP_EXPORT int pp_sink_file(const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    return -1;
  pp_sink_fd(fd);
  pthread_mutex_lock(&sink_lock);
  line_fd_owned = 1;
  pthread_mutex_unlock(&sink_lock);
  return 0;
}

static void write_line(const char *buf, size_t len) {
  if (line_fd < 0)
    return;
  size_t off = 0;
  while (off < len) {
    ssize_t w = write(line_fd, buf + off, len - off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      line_failures++;
      line_errno = w < 0 ? errno : EIO;
      if (!failure_reported) {
        failure_reported = 1;
        char msg[200];
        int m = snprintf(msg, sizeof msg,
                         "phaseprobe: writing a record line to fd %d failed: "
                         "%s; further failures are counted, not reported\n",
                         line_fd, strerror(line_errno));
        if (m > 0 && line_fd != 2) {
          ssize_t ignored = write(2, msg, (size_t)m);
          (void)ignored;
        }
      }
      return;
    }
    off += (size_t)w;
  }
}

/* ---- store --------------------------------------------------------------- */
/* Compact: each stored record keeps only its schema's fields. */
typedef struct {
  const pp_schema *schema;
  char *tags; /* NULL when none */
  uint64_t values[];
} stored_rec;

static stored_rec **store;
static size_t store_n, store_alloc;
static size_t store_cap = 100000;
static int store_on = 1;
static uint64_t store_dropped, emitted;
static int drop_reported;

static pp_record_hook hook;
static void *hook_ud;

PP_EXPORT void pp_store_enable(int on) {
  pthread_mutex_lock(&sink_lock);
  store_on = on;
  pthread_mutex_unlock(&sink_lock);
}

PP_EXPORT void pp_store_set_capacity(size_t records) {
  pthread_mutex_lock(&sink_lock);
  store_cap = records;
  drop_reported = 0;
  pthread_mutex_unlock(&sink_lock);
}

PP_EXPORT size_t pp_store_capacity(void) { return store_cap; }

PP_EXPORT size_t pp_store_count(void) {
  pthread_mutex_lock(&sink_lock);
  size_t n = store_n;
  pthread_mutex_unlock(&sink_lock);
  return n;
}

PP_EXPORT uint64_t pp_store_dropped(void) {
  pthread_mutex_lock(&sink_lock);
  uint64_t d = store_dropped;
  pthread_mutex_unlock(&sink_lock);
  return d;
}

PP_EXPORT int pp_store_get(size_t i, pp_record *out) {
  pthread_mutex_lock(&sink_lock);
  if (i >= store_n) {
    pthread_mutex_unlock(&sink_lock);
    return -1;
  }
  const stored_rec *sr = store[i];
  out->schema = sr->schema;
  memcpy(out->values, sr->values, sizeof(uint64_t) * sr->schema->nfields);
  out->tags[0] = 0;
  if (sr->tags)
    snprintf(out->tags, sizeof out->tags, "%s", sr->tags);
  pthread_mutex_unlock(&sink_lock);
  return 0;
}

PP_EXPORT void pp_store_clear(void) {
  pthread_mutex_lock(&sink_lock);
  for (size_t i = 0; i < store_n; i++) {
    free(store[i]->tags);
    free(store[i]);
  }
  store_n = 0;
  store_dropped = 0;
  drop_reported = 0;
  pthread_mutex_unlock(&sink_lock);
}

/* The module can be unloaded (lua_close dlcloses it): release the store so
 * nothing it allocated outlives the code that owns it. */
__attribute__((destructor)) static void store_fini(void) {
  pp_store_clear();
  free(store);
  store = NULL;
  store_alloc = 0;
}

/* Called with sink_lock held. */
static void store_add(const pp_record *r) {
  if (store_n >= store_cap) {
    store_dropped++;
    if (!drop_reported) {
      drop_reported = 1;
      char msg[160];
      int m = snprintf(msg, sizeof msg,
                       "phaseprobe: record store full (%zu records); further "
                       "records are dropped and counted\n",
                       store_cap);
      if (m > 0) {
        ssize_t ignored = write(2, msg, (size_t)m);
        (void)ignored;
      }
    }
    return;
  }
  if (store_n == store_alloc) {
    size_t na = store_alloc ? store_alloc * 2 : 1024;
    stored_rec **ns = realloc(store, na * sizeof *ns);
    if (!ns) {
      store_dropped++;
      return;
    }
    store = ns;
    store_alloc = na;
  }
  size_t nf = r->schema->nfields;
  stored_rec *sr = malloc(sizeof *sr + nf * sizeof(uint64_t));
  if (!sr) {
    store_dropped++;
    return;
  }
  sr->schema = r->schema;
  memcpy(sr->values, r->values, nf * sizeof(uint64_t));
  sr->tags = r->tags[0] ? strdup(r->tags) : NULL;
  store[store_n++] = sr;
}

void pp_sinks_deliver(const pp_record *r) {
  char line[PP_PREFIX_MAX + PP_MAX_FIELDS * (PP_LABEL_MAX + 22) + PP_TAGS_MAX + 2];
  size_t len = 0;
  int fd;
  __atomic_load(&line_fd, &fd, __ATOMIC_RELAXED);
  if (fd >= 0) {
    len = pp_format_line(r, line, sizeof line - 1);
    line[len++] = '\n';
  }
  pthread_mutex_lock(&sink_lock);
  emitted++;
  if (len)
    write_line(line, len);
  if (store_on)
    store_add(r);
  pp_record_hook h = hook;
  void *ud = hook_ud;
  pthread_mutex_unlock(&sink_lock);
  if (h)
    h(r, ud);
}

PP_EXPORT void pp_set_record_hook(pp_record_hook fn, void *ud) {
  pthread_mutex_lock(&sink_lock);
  hook = fn;
  hook_ud = ud;
  pthread_mutex_unlock(&sink_lock);
}

PP_EXPORT void pp_stats(pp_stats_t *out) {
  pthread_mutex_lock(&sink_lock);
  out->emitted = emitted;
  out->stored = store_n;
  out->dropped = store_dropped;
  out->line_failures = line_failures;
  out->last_errno = line_errno;
  pthread_mutex_unlock(&sink_lock);
}
