/* name_table.h - a scoped hash index over names or pointers.
 *
 * Keys (C strings compared by content, or pointers compared by address) are
 * pushed on a stack; name_table_find returns the newest entry with a key in
 * expected constant time, and name_table_truncate pops back to an earlier
 * height, so one table serves a scope stack (sema's entities, the verifier's
 * visible variables, the emitters' C names) as well as a plain map. The table
 * holds only keys and their order: the caller keeps what goes with entry i in
 * an array of its own, indexed alike. Each bucket chains its entries newest
 * first and the bucket array doubles as entries are added, so a lookup stays
 * O(1) at any count (finding F6 in docs/robustness.md: linear scans made
 * 30000 names take seconds).
 *
 * Storage comes from an arena (released with it) or, with a NULL arena, from
 * malloc, released by name_table_free. Keys are not copied: they must
 * outlive the table. */
#ifndef TILEC_NAME_TABLE_H
#define TILEC_NAME_TABLE_H

#include "arena.h"

typedef enum NameKeyKind {
  NAME_KEY_STRING,  /* const char *, compared with strcmp */
  NAME_KEY_POINTER, /* any pointer, compared by address */
} NameKeyKind;

typedef struct NameTableEntry {
  const void *key;
  unsigned hash;
  int next; /* older entry in the same bucket, or -1 */
} NameTableEntry;

typedef struct NameTable {
  Arena *arena; /* NULL: malloc'd storage, released by name_table_free */
  NameKeyKind kind;
  NameTableEntry *entries;
  int n, cap;
  int *buckets; /* newest entry per bucket, or -1; a power of two of them */
  int nbuckets;
} NameTable;

void name_table_init(NameTable *t, Arena *arena, NameKeyKind kind);
/* Releases malloc'd storage (a no-op for an arena table); accepts a table
 * that was zero-filled or already freed. */
void name_table_free(NameTable *t);

/* Pushes key and returns its entry index (the old height, t->n before). */
int name_table_push(NameTable *t, const void *key);
/* The newest entry with key, or -1. */
int name_table_find(const NameTable *t, const void *key);
/* The next older entry with the same key as entry i, or -1. */
int name_table_find_older(const NameTable *t, int i);
/* Pops entries until t->n == height (no-op if it is already lower). */
void name_table_truncate(NameTable *t, int height);

#endif
