/* name_table.c - the scoped hash index of name_table.h.
 *
 * Entries live in push order in one array; buckets hold the newest entry of
 * each chain and every entry links to the next older one in its bucket. A
 * pop therefore only unlinks a chain head (entries leave newest first).
 * When the entries outnumber twice the buckets, the bucket array doubles and
 * the chains are rebuilt in push order, which keeps them newest first. */
#include "name_table.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { NAME_TABLE_MIN_BUCKETS = 64 };

static unsigned hash_key(NameKeyKind kind, const void *key) {
  if (kind == NAME_KEY_POINTER) {
    uint64_t x = (uint64_t)(uintptr_t)key;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull; /* murmur3's finalizer */
    x ^= x >> 33;
    return (unsigned)x;
  }
  unsigned h = 2166136261u; /* FNV-1a */
  for (const unsigned char *p = key; *p; p++) h = (h ^ *p) * 16777619u;
  return h;
}

static bool same_key(NameKeyKind kind, const void *a, const void *b) {
  return kind == NAME_KEY_POINTER ? a == b : strcmp(a, b) == 0;
}

/* n elements of size elem, from the arena or malloc (abort on failure, as
 * arena_alloc does). */
static void *table_alloc(NameTable *t, size_t n, size_t elem) {
  if (t->arena) return arena_alloc(t->arena, n * elem);
  void *p = malloc(n * elem);
  if (!p) abort();
  return p;
}

static void table_release(NameTable *t, void *p) {
  if (!t->arena) free(p);
}

static void rebuild_buckets(NameTable *t, int nbuckets) {
  int *b = table_alloc(t, (size_t)nbuckets, sizeof(int));
  for (int i = 0; i < nbuckets; i++) b[i] = -1;
  for (int i = 0; i < t->n; i++) {
    unsigned slot = t->entries[i].hash & (unsigned)(nbuckets - 1);
    t->entries[i].next = b[slot];
    b[slot] = i;
  }
  table_release(t, t->buckets);
  t->buckets = b;
  t->nbuckets = nbuckets;
}

void name_table_init(NameTable *t, Arena *arena, NameKeyKind kind) {
  memset(t, 0, sizeof *t);
  t->arena = arena;
  t->kind = kind;
}

void name_table_free(NameTable *t) {
  if (!t) return;
  table_release(t, t->entries);
  table_release(t, t->buckets);
  t->entries = NULL;
  t->buckets = NULL;
  t->n = t->cap = t->nbuckets = 0;
}

int name_table_push(NameTable *t, const void *key) {
  if (t->n == t->cap) {
    int ncap = t->cap ? t->cap * 2 : 16;
    NameTableEntry *e = table_alloc(t, (size_t)ncap, sizeof *e);
    if (t->n) memcpy(e, t->entries, sizeof *e * (size_t)t->n);
    table_release(t, t->entries);
    t->entries = e;
    t->cap = ncap;
  }
  int i = t->n++;
  t->entries[i] = (NameTableEntry){key, hash_key(t->kind, key), -1};
  if (t->n > 2 * t->nbuckets) {
    /* Also links the new entry. */
    int nb = t->nbuckets ? t->nbuckets * 2 : NAME_TABLE_MIN_BUCKETS;
    while (t->n > 2 * nb) nb *= 2;
    rebuild_buckets(t, nb);
  } else {
    unsigned slot = t->entries[i].hash & (unsigned)(t->nbuckets - 1);
    t->entries[i].next = t->buckets[slot];
    t->buckets[slot] = i;
  }
  return i;
}

int name_table_find(const NameTable *t, const void *key) {
  if (t->n == 0) return -1;
  unsigned h = hash_key(t->kind, key);
  for (int i = t->buckets[h & (unsigned)(t->nbuckets - 1)]; i >= 0; i = t->entries[i].next)
    if (t->entries[i].hash == h && same_key(t->kind, t->entries[i].key, key)) return i;
  return -1;
}

int name_table_find_older(const NameTable *t, int i) {
  const NameTableEntry *e = &t->entries[i];
  for (int j = e->next; j >= 0; j = t->entries[j].next)
    if (t->entries[j].hash == e->hash && same_key(t->kind, t->entries[j].key, e->key)) return j;
  return -1;
}

void name_table_truncate(NameTable *t, int height) {
  if (height < 0) height = 0;
  while (t->n > height) {
    const NameTableEntry *e = &t->entries[--t->n];
    t->buckets[e->hash & (unsigned)(t->nbuckets - 1)] = e->next;
  }
}
