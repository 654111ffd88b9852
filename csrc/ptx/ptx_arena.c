/*
 * ptx_arena.c: the memory of a scan's result (pp_ptx_result.mem).
 *
 * Names, parameter lists, body variables and the function chunks of a scan
 * are carved out of blocks chained from r->mem; pp_ptx_result_free frees
 * them with the result. A scan that meets no memory stops with a fatal
 * "out of memory" error and keeps what it had.
 */
#include "ptx_scanner.h"

#include <stdlib.h>
#include <string.h>

void pp_ptx_no_memory(scanner *s) { ERR(s, s->p, 1, "out of memory"); }

/* Names and parameter lists are carved out of blocks that grow from
 * BLOCK_MIN to BLOCK_MAX bytes (or hold one larger request), chained from
 * r->mem: thousands of small allocations become a few, written in text
 * order, and freeing the result frees the blocks. */
typedef struct block {
  struct block *next;
  size_t used, cap;
  max_align_t data[];
} block;

#define BLOCK_MIN ((size_t)16 << 10)
#define BLOCK_MAX ((size_t)1 << 20)

/* n bytes aligned to align (a power of two, at most that of max_align_t);
 * NULL (and the scan stops) without memory. */
void *pp_ptx_alloc(scanner *s, size_t n, size_t align) {
  block *b = s->r->mem;
  if (b) {
    size_t at = (b->used + align - 1) & ~(align - 1);
    if (at <= b->cap && n <= b->cap - at) {
      b->used = at + n;
      return (char *)b->data + at;
    }
  }
  size_t cap = !b ? BLOCK_MIN : b->cap < BLOCK_MAX ? b->cap * 2 : BLOCK_MAX;
  if (cap < n)
    cap = n;
  block *nb = cap <= SIZE_MAX - sizeof *nb ? malloc(sizeof *nb + cap) : NULL;
  if (!nb) {
    pp_ptx_no_memory(s);
    return NULL;
  }
  nb->next = b;
  nb->used = n;
  nb->cap = cap;
  s->r->mem = nb;
  return nb->data;
}

char *pp_ptx_dup_word(scanner *s, const char *p, size_t n) {
  char *d = n < SIZE_MAX ? pp_ptx_alloc(s, n + 1, 1) : NULL;
  if (!d)
    return NULL;
  memcpy(d, p, n);
  d[n] = 0;
  return d;
}

/* Makes room for one more element; returns 0 (and stops) without memory. */
int pp_ptx_grow(scanner *s, void **arr, size_t *cap, size_t n, size_t elem) {
  if (n < *cap)
    return 1;
  size_t nc = *cap ? *cap * 2 : 8;
  if (nc > SIZE_MAX / elem) {
    pp_ptx_no_memory(s);
    return 0;
  }
  void *a = realloc(*arr, nc * elem);
  if (!a) {
    pp_ptx_no_memory(s);
    return 0;
  }
  *arr = a;
  *cap = nc;
  return 1;
}

void pp_ptx_arena_free(pp_ptx_result *r) {
  for (block *b = r->mem, *nb; b; b = nb) {
    nb = b->next;
    free(b);
  }
  r->mem = NULL;
}
