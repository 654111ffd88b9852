/*
 * store.c: the in-memory record store, the second sink after the line
 * (pp_emit -> pp_sinks_deliver -> here). Bounded to `capacity` records,
 * keeping either the first N emitted (later ones are refused) or the last N
 * (the oldest is let go); either way what is not kept is counted in
 * `dropped`, so stored + dropped == emitted while the store is on.
 *
 * No allocation per record: a record is copied, compact (its schema's fields
 * and its tags only), into 64 KiB blocks filled in emit order; a ring of
 * pointers indexes them in emit order. Records leave in emit order too (the
 * oldest, in "last" mode), so a block is released (one spare is kept for
 * reuse) as soon as its last live record has gone. The lock is held only
 * for the copy: nothing in here makes a system call, except the allocation
 * of a block or of the ring (amortised over hundreds of records).
 */
#include "pp_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK_BYTES 65536

typedef struct block {
  struct block *next; /* the next younger block */
  size_t used, live;
  _Alignas(8) char data[BLOCK_BYTES];
} block;

typedef struct {
  const pp_schema *schema;
  block *home;
  uint32_t ntags; /* bytes of tag text that follow the values */
  uint32_t pad;
  uint64_t values[];
} entry;

static pthread_mutex_t store_lock = PTHREAD_MUTEX_INITIALIZER;
static block *oldest, *youngest, *spare;
static entry **ring;
static size_t ring_alloc, ring_head, ring_n;
static size_t capacity = 100000;
static pp_store_keep keep = PP_KEEP_FIRST;
static int store_on = 1; /* also read without the lock, as a hint */
static uint64_t dropped;
static int said_full;

static size_t entry_size(size_t nfields, size_t ntags) {
  size_t n = sizeof(entry) + nfields * sizeof(uint64_t) + ntags;
  return (n + 7) & ~(size_t)7;
}

static void block_release(block *b) {
  if (!spare) {
    spare = b;
  } else {
    free(b);
  }
}

/* Lets the oldest record go. */
static void drop_oldest(void) {
  entry *e = ring[ring_head];
  ring_head = (ring_head + 1) % ring_alloc;
  ring_n--;
  block *b = e->home;
  if (--b->live == 0 && b != youngest) {
    /* records leave in emit order: the block is the oldest one */
    oldest = b->next;
    block_release(b);
  }
}

/* Lets the youngest record go ("first" mode, capacity lowered). */
static void drop_youngest(void) {
  entry *e = ring[(ring_head + ring_n - 1) % ring_alloc];
  ring_n--;
  block *b = e->home;
  if (--b->live == 0) {
    /* b is the youngest block: unlink it from the end of the list */
    block **pp = &oldest;
    while (*pp != b)
      pp = &(*pp)->next;
    *pp = NULL;
    youngest = NULL;
    for (block *x = oldest; x; x = x->next)
      youngest = x;
    block_release(b);
  }
}

/* Room for one more index entry: the ring grows by doubling, up to the
 * capacity. 0 or -1 (allocation failed). */
static int ring_grow(void) {
  if (ring_n < ring_alloc)
    return 0;
  size_t na = ring_alloc ? ring_alloc * 2 : 1024;
  if (na > capacity)
    na = capacity > ring_n ? capacity : ring_n + 1;
  entry **nr = malloc(na * sizeof *nr);
  if (!nr)
    return -1;
  for (size_t i = 0; i < ring_n; i++)
    nr[i] = ring[(ring_head + i) % ring_alloc];
  free(ring);
  ring = nr;
  ring_alloc = na;
  ring_head = 0;
  return 0;
}

static void say_full(void) {
  if (said_full)
    return;
  said_full = 1;
  char msg[200];
  snprintf(msg, sizeof msg,
           keep == PP_KEEP_LAST
               ? "phaseprobe: record store full (%zu records): keeping the "
                 "last %zu, older records are dropped and counted\n"
               : "phaseprobe: record store full (%zu records); further "
                 "records are dropped and counted\n",
           capacity, capacity);
  pp_sink_notice(msg);
}

void pp_store_add(const pp_record *r) {
  if (!__atomic_load_n(&store_on, __ATOMIC_RELAXED))
    return;
  const pp_schema *s = r->schema;
  size_t ntags = strnlen(r->tags, PP_TAGS_MAX - 1);
  size_t size = entry_size(s->nfields, ntags);
  pthread_mutex_lock(&store_lock);
  if (!store_on)
    goto out;
  if (ring_n >= capacity) {
    if (capacity == 0 || keep == PP_KEEP_FIRST) {
      dropped++;
      say_full();
      goto out;
    }
    drop_oldest();
    dropped++;
    say_full();
  }
  if (ring_grow() != 0) {
    dropped++;
    goto out;
  }
  if (!youngest || BLOCK_BYTES - youngest->used < size) {
    block *b = spare;
    if (b) {
      spare = NULL;
    } else {
      /* Allocated outside the lock would reorder records; a 64 KiB
       * allocation once per hundred records or so is the cost. */
      b = malloc(sizeof *b);
      if (!b) {
        dropped++;
        goto out;
      }
    }
    b->next = NULL;
    b->used = b->live = 0;
    if (youngest)
      youngest->next = b;
    else
      oldest = b;
    youngest = b;
  }
  entry *e = (entry *)(youngest->data + youngest->used);
  youngest->used += size;
  youngest->live++;
  e->schema = s;
  e->home = youngest;
  e->ntags = (uint32_t)ntags;
  memcpy(e->values, r->values, s->nfields * sizeof(uint64_t));
  memcpy((char *)(e->values + s->nfields), r->tags, ntags);
  ring[(ring_head + ring_n) % ring_alloc] = e;
  ring_n++;
out:
  pthread_mutex_unlock(&store_lock);
}

PP_EXPORT void pp_store_enable(int on) {
  pthread_mutex_lock(&store_lock);
  __atomic_store_n(&store_on, on ? 1 : 0, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&store_lock);
}

PP_EXPORT int pp_store_enabled(void) {
  return __atomic_load_n(&store_on, __ATOMIC_RELAXED);
}

/* Lowering the capacity below the count lets records go as the mode would
 * have: the youngest in "first" mode, the oldest in "last"; counted. */
static void trim(void) {
  while (ring_n > capacity) {
    if (keep == PP_KEEP_LAST)
      drop_oldest();
    else
      drop_youngest();
    dropped++;
  }
}

PP_EXPORT void pp_store_set_capacity(size_t records) {
  pthread_mutex_lock(&store_lock);
  capacity = records;
  trim();
  said_full = 0;
  pthread_mutex_unlock(&store_lock);
}

/* The store's settings and counts, read together under its lock. */
typedef struct {
  size_t capacity, count;
  pp_store_keep keep;
  uint64_t dropped;
} snapshot;

static snapshot snap(void) {
  pthread_mutex_lock(&store_lock);
  snapshot s = {capacity, ring_n, keep, dropped};
  pthread_mutex_unlock(&store_lock);
  return s;
}

PP_EXPORT size_t pp_store_capacity(void) { return snap().capacity; }

PP_EXPORT void pp_store_set_keep(pp_store_keep k) {
  pthread_mutex_lock(&store_lock);
  keep = k == PP_KEEP_LAST ? PP_KEEP_LAST : PP_KEEP_FIRST;
  said_full = 0;
  pthread_mutex_unlock(&store_lock);
}

PP_EXPORT pp_store_keep pp_store_get_keep(void) { return snap().keep; }

PP_EXPORT size_t pp_store_count(void) { return snap().count; }

PP_EXPORT uint64_t pp_store_dropped(void) { return snap().dropped; }

PP_EXPORT int pp_store_get(size_t i, pp_record *out) {
  pthread_mutex_lock(&store_lock);
  if (i >= ring_n) {
    pthread_mutex_unlock(&store_lock);
    return -1;
  }
  const entry *e = ring[(ring_head + i) % ring_alloc];
  out->schema = e->schema;
  memcpy(out->values, e->values, sizeof(uint64_t) * e->schema->nfields);
  memcpy(out->tags, (const char *)(e->values + e->schema->nfields), e->ntags);
  out->tags[e->ntags] = 0;
  pthread_mutex_unlock(&store_lock);
  return 0;
}

static void release_all(void) {
  for (block *b = oldest; b;) {
    block *n = b->next;
    free(b);
    b = n;
  }
  free(spare);
  free(ring);
  oldest = youngest = spare = NULL;
  ring = NULL;
  ring_alloc = ring_head = ring_n = 0;
}

PP_EXPORT void pp_store_clear(void) {
  pthread_mutex_lock(&store_lock);
  release_all();
  dropped = 0;
  said_full = 0;
  pthread_mutex_unlock(&store_lock);
}

void pp_store_stats(uint64_t *stored, uint64_t *dropped_out) {
  snapshot s = snap();
  *stored = s.count;
  *dropped_out = s.dropped;
}

/* After fork() in a child: the lock may have been held by a thread that
 * does not exist there. */
void pp_store_after_fork(void) {
  pthread_mutex_init(&store_lock, NULL);
}

/* The module can be unloaded (lua_close dlcloses it): nothing the store
 * allocated outlives the code that owns it. */
__attribute__((destructor)) static void store_fini(void) {
  pthread_mutex_lock(&store_lock);
  release_all();
  pthread_mutex_unlock(&store_lock);
}
