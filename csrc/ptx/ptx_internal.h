/* ptx_internal.h: shared by the PTX scan (ptx_scanner.h), ptx_count.c and
 * lua_ptx.c; not installed. */
#ifndef PP_PTX_INTERNAL_H
#define PP_PTX_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "pp_ptx.h"

/* Called with the offset of each (non-overlapping) match, in text order. */
typedef void (*pp_ptx_match_fn)(void *ud, size_t pos);

/* pp_ptx_count_bytes that also reports each match to fn (may be NULL). */
uint64_t pp_ptx_find_all(const char *text, size_t len, const char *marker,
                         size_t mlen, pp_ptx_match_fn fn, void *ud);

/* A marker prepared for many pp_ptx_find_needle calls. */
typedef struct pp_ptx_needle {
  const unsigned char *m; /* not copied */
  size_t mlen, a, b;      /* a, b: the marker's filter bytes */
} pp_ptx_needle;

void pp_ptx_needle_init(pp_ptx_needle *n, const char *marker, size_t mlen);
uint64_t pp_ptx_find_needle(const pp_ptx_needle *n, const char *text,
                            size_t len, pp_ptx_match_fn fn, void *ud);

/* ---- a scan read while it runs -------------------------------------------
 * pp_ptx_scan_feed is pp_ptx_scan for a reader that takes the entries as the
 * scan finishes them, possibly on another thread. The functions are not
 * copied into out->entries and out->funcs (both stay NULL, the counts are
 * set): they are read where the scan made them, function i of list k (0
 * entries, 1 funcs) at chunks[k][i / PP_PTX_FCHUNK][i % PP_PTX_FCHUNK],
 * memory that lives until pp_ptx_result_free(out).
 *
 * The scan stores in ready how many leading entries are final (will not
 * change any more: a declared-only entry may still be defined later, so
 * it and those after it wait for the end), and signals cv under mu when
 * waiting is set and a few more entries are ready. done is set last, after
 * rc (what pp_ptx_scan returns), ready = nentries and the funcs; then cv
 * is signalled. mu and cv are initialised by the caller, the rest zeroed. */
#define PP_PTX_FCHUNK 64

typedef struct pp_ptx_feed {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  _Atomic size_t ready;
  _Atomic int done, waiting;
  int rc;
  pp_ptx_func **chunks[2];
  /* For tests: called (on the scanning thread) after each publication;
   * plain_lines reads every line with the statement loop, not the faster
   * line reader (their results must be the same). */
  void (*published)(struct pp_ptx_feed *, size_t ready);
  void *ud;
  int plain_lines;
  /* The reader computes out->digest itself (pp_ptx_digest), e.g. while
   * the scan's thread starts; the scan leaves it 0. */
  int no_digest;
} pp_ptx_feed;

int pp_ptx_scan_feed(const char *text, size_t len, const pp_ptx_opts *opts,
                     pp_ptx_result *out, pp_ptx_feed *feed);

static inline pp_ptx_func *pp_ptx_feed_func(const pp_ptx_feed *fd, int k,
                                            size_t i) {
  return &fd->chunks[k][i / PP_PTX_FCHUNK][i % PP_PTX_FCHUNK];
}

#endif
