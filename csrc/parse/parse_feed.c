/*
 * parse_feed.c: how input reaches the record-line parser, and what it
 * gives back. Input comes from named sources (pp_parser_source; _resume
 * goes back to an earlier one), fed in chunks of any size that are cut into
 * lines here (a line split across chunks waits in the parser's carry), as
 * single lines, or read from a file in 1 MiB chunks with progress; each
 * line goes to pp_parse_process_line (parse.c), which checks it and stores
 * its record. The flow: bytes -> lines (here) -> tokens, checks, columns
 * (parse.c) -> the store, taken with its counts and errors (here).
 */
#include "pp_parse_internal.h"
#include "pp_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define READ_CHUNK (1u << 20)
#define PROGRESS_EVERY (16u << 20)

/* ---- sources ------------------------------------------------------------- */
static source_t *cur_src(pp_parser *p) {
  if (p->nsrc == 0)
    pp_parser_source(p, "(input)");
  return p->nsrc ? &p->src[p->cur] : NULL;
}

PP_EXPORT void pp_parser_source(pp_parser *p, const char *name) {
  if (p->nsrc) {
    pp_parser_end(p);
    p->src[p->cur].lineno = p->lineno;
  }
  if (p->nsrc == p->src_alloc) {
    size_t na = p->src_alloc ? p->src_alloc * 2 : 4;
    source_t *ns = realloc(p->src, na * sizeof *ns);
    if (!ns) {
      p->oom = 1;
      return;
    }
    p->src = ns;
    p->src_alloc = na;
  }
  source_t *s = &p->src[p->nsrc];
  memset(s, 0, sizeof *s);
  s->name = dup_n(name ? name : "(input)", strlen(name ? name : "(input)"));
  if (!s->name) {
    p->oom = 1;
    return;
  }
  s->str_id = UINT32_MAX;
  p->cur = p->nsrc++;
  p->lineno = 0;
}

PP_EXPORT size_t pp_parser_current(const pp_parser *p) {
  return p->nsrc ? p->cur : SIZE_MAX;
}

PP_EXPORT int pp_parser_resume(pp_parser *p, size_t i) {
  if (i >= p->nsrc)
    return -1;
  if (i == p->cur)
    return 0;
  pp_parser_end(p); /* the other source's pending line */
  p->src[p->cur].lineno = p->lineno;
  p->cur = i;
  p->lineno = p->src[i].lineno;
  return 0;
}

/* ---- feeding ------------------------------------------------------------- */
/* Adds to the pending partial line; past PP_PARSE_MAX_LINE + 1 bytes the
 * rest of the line is dropped (pp_parse_process_line then sees an overlong
 * line). */
static int carry_add(pp_parser *p, const char *s, size_t n) {
  if (p->carry_len > PP_PARSE_MAX_LINE)
    return 0;
  if (n > PP_PARSE_MAX_LINE + 1 - p->carry_len)
    n = PP_PARSE_MAX_LINE + 1 - p->carry_len;
  if (p->carry_len + n > p->carry_cap) {
    size_t na = p->carry_cap ? p->carry_cap : 4096;
    while (na < p->carry_len + n)
      na *= 2;
    char *nc = realloc(p->carry, na);
    if (!nc)
      return -1;
    p->carry = nc;
    p->carry_cap = na;
  }
  memcpy(p->carry + p->carry_len, s, n);
  p->carry_len += n;
  return 0;
}

/* Whether len more bytes stay within the source's cap (errno EFBIG if
 * not). */
static int within_cap(const pp_parser *p, const source_t *s, size_t len) {
  if (s->st.bytes > p->max_bytes || len > p->max_bytes - s->st.bytes) {
    errno = EFBIG;
    return 0;
  }
  return 1;
}

PP_EXPORT int pp_parser_feed(pp_parser *p, const char *buf, size_t len) {
  source_t *s = cur_src(p);
  if (!s || p->oom)
    return errno = ENOMEM, -1;
  if (!within_cap(p, s, len))
    return -1;
  p->st.bytes += len;
  s->st.bytes += len;
  while (len) {
    const char *nl = memchr(buf, '\n', len);
    if (!nl)
      return carry_add(p, buf, len) == 0 ? 0 : (p->oom = 1, errno = ENOMEM, -1);
    size_t n = (size_t)(nl - buf);
    if (p->carry_len) {
      if (carry_add(p, buf, n) != 0)
        return p->oom = 1, errno = ENOMEM, -1;
      pp_parse_process_line(p, p->carry, p->carry_len);
      p->carry_len = 0;
    } else {
      pp_parse_process_line(p, buf, n);
    }
    buf = nl + 1;
    len -= n + 1;
  }
  return p->oom ? (errno = ENOMEM, -1) : 0;
}

PP_EXPORT int pp_parser_line(pp_parser *p, const char *line, size_t len) {
  source_t *s = cur_src(p);
  if (!s || p->oom)
    return errno = ENOMEM, -1;
  if (len && line[len - 1] == '\n')
    len--;
  if (!within_cap(p, s, len + 1))
    return -1;
  if (p->carry_len) /* a pending partial line from _feed ends here */
    pp_parser_end(p);
  p->st.bytes += len + 1;
  s->st.bytes += len + 1;
  /* a '\n' inside splits it into several lines, as a file would */
  const char *nl;
  while ((nl = memchr(line, '\n', len)) != NULL) {
    pp_parse_process_line(p, line, (size_t)(nl - line));
    len -= (size_t)(nl - line) + 1;
    line = nl + 1;
  }
  pp_parse_process_line(p, line, len);
  return p->oom ? (errno = ENOMEM, -1) : 0;
}

PP_EXPORT int pp_parser_end(pp_parser *p) {
  if (!p->nsrc)
    return 0;
  if (p->carry_len) {
    p->src[p->cur].st.unterminated = 1;
    p->st.unterminated = 1;
    pp_parse_process_line(p, p->carry, p->carry_len);
    p->carry_len = 0;
  }
  return p->oom ? -1 : 0;
}

PP_EXPORT int pp_parser_file(pp_parser *p, const char *path, pp_parse_progress progress,
                   void *ud) {
  int is_stdin = strcmp(path, "-") == 0;
  int fd = is_stdin ? 0 : open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  char *buf = malloc(READ_CHUNK);
  if (!buf) {
    if (!is_stdin)
      close(fd);
    errno = ENOMEM;
    return -1;
  }
  pp_parser_source(p, is_stdin ? "(stdin)" : path);
  uint64_t done = 0, next = PROGRESS_EVERY;
  int rc = 0, saved = 0;
  for (;;) {
    ssize_t r = read(fd, buf, READ_CHUNK);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      rc = -1;
      saved = errno;
      break;
    }
    if (r == 0)
      break;
    if (pp_parser_feed(p, buf, (size_t)r) != 0) {
      rc = -1;
      saved = errno;
      break;
    }
    done += (uint64_t)r;
    if (progress && done >= next) {
      if (progress(ud, done, p->st.parsed) != 0) {
        rc = -1;
        saved = ECANCELED;
        break;
      }
      next = done + PROGRESS_EVERY;
    }
  }
  free(buf);
  if (!is_stdin)
    close(fd);
  if (pp_parser_end(p) != 0 && rc == 0) {
    rc = -1;
    saved = ENOMEM;
  }
  if (rc)
    errno = saved;
  return rc;
}

PP_EXPORT void pp_parser_reset(pp_parser *p) {
  pp_cols *fresh = pp_cols_new();
  if (fresh) {
    pp_cols_free(p->cols);
    p->cols = fresh;
    p->oom = 0;
  } else {
    p->oom = 1;
  }
  for (size_t i = 0; i < p->nsrc; i++)
    free(p->src[i].name);
  p->nsrc = 0;
  p->cur = 0;
  for (size_t i = 0; i < p->nerr; i++)
    free((char *)p->err[i].what);
  p->nerr = 0;
  memset(&p->st, 0, sizeof p->st);
  p->carry_len = 0;
  p->lineno = 0;
  p->prev_ok = 0;
}

/* ---- results ------------------------------------------------------------- */
PP_EXPORT const pp_parse_stats *pp_parser_stats(const pp_parser *p) { return &p->st; }
PP_EXPORT size_t pp_parser_nsources(const pp_parser *p) { return p->nsrc; }
PP_EXPORT const char *pp_parser_source_name(const pp_parser *p, size_t i) {
  return i < p->nsrc ? p->src[i].name : NULL;
}
PP_EXPORT const pp_parse_stats *pp_parser_source_stats(const pp_parser *p, size_t i) {
  return i < p->nsrc ? &p->src[i].st : NULL;
}
PP_EXPORT size_t pp_parser_nerrors(const pp_parser *p) { return p->nerr; }
PP_EXPORT const pp_parse_error *pp_parser_error(const pp_parser *p, size_t i) {
  return i < p->nerr ? &p->err[i] : NULL;
}

PP_EXPORT pp_cols *pp_parser_take(pp_parser *p) {
  pp_cols *fresh = pp_cols_new();
  if (!fresh)
    return NULL;
  pp_cols *c = p->cols;
  p->cols = fresh;
  p->prev_ok = 0;
  for (size_t i = 0; i < p->nsrc; i++)
    p->src[i].str_id = UINT32_MAX;
  return c;
}
