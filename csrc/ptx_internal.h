/* ptx_internal.h: shared by ptx_scan.c and ptx_count.c; not installed. */
#ifndef PP_PTX_INTERNAL_H
#define PP_PTX_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* Called with the offset of each (non-overlapping) match, in text order. */
typedef void (*pp_ptx_match_fn)(void *ud, size_t pos);

/* pp_ptx_count_bytes that also reports each match to fn (may be NULL). */
uint64_t pp_ptx_find_all(const char *text, size_t len, const char *marker,
                         size_t mlen, pp_ptx_match_fn fn, void *ud);

#endif
