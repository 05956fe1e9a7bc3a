/* arena.c - chunked bump allocator (see arena.h). Large requests get a chunk of
 * their own so a 1 MB string does not waste a fixed-size chunk. */
#include "arena.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ARENA_CHUNK_SIZE = 64 * 1024, ARENA_ALIGN = 16 };

typedef struct ArenaChunk {
  struct ArenaChunk *next;
  size_t used, size;
  _Alignas(16) unsigned char data[];
} ArenaChunk;

struct Arena {
  ArenaChunk *head;
};

static ArenaChunk *chunk_new(size_t size) {
  ArenaChunk *c = malloc(sizeof(ArenaChunk) + size);
  if (!c) {
    fprintf(stderr, "tilec: out of memory\n");
    abort();
  }
  c->next = NULL;
  c->used = 0;
  c->size = size;
  return c;
}

Arena *arena_create(void) {
  Arena *a = calloc(1, sizeof(Arena));
  if (!a) {
    fprintf(stderr, "tilec: out of memory\n");
    abort();
  }
  return a;
}

void arena_destroy(Arena *arena) {
  if (!arena) return;
  ArenaChunk *c = arena->head;
  while (c) {
    ArenaChunk *next = c->next;
    free(c);
    c = next;
  }
  free(arena);
}

void *arena_alloc(Arena *arena, size_t size) {
  size = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
  if (size == 0) size = ARENA_ALIGN;
  ArenaChunk *c = arena->head;
  if (!c || c->size - c->used < size) {
    if (size > ARENA_CHUNK_SIZE / 4) {
      /* Big block: own chunk, linked behind the current head so the head's
       * free space stays usable. */
      ArenaChunk *big = chunk_new(size);
      big->used = size;
      if (c) {
        big->next = c->next;
        c->next = big;
      } else {
        arena->head = big;
      }
      memset(big->data, 0, size);
      return big->data;
    }
    c = chunk_new(ARENA_CHUNK_SIZE);
    c->next = arena->head;
    arena->head = c;
  }
  void *p = c->data + c->used;
  c->used += size;
  memset(p, 0, size);
  return p;
}

char *arena_strndup(Arena *arena, const char *s, size_t n) {
  char *d = arena_alloc(arena, n + 1);
  memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

char *arena_strdup(Arena *arena, const char *s) {
  return arena_strndup(arena, s, strlen(s));
}

char *arena_printf(Arena *arena, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *d = arena_alloc(arena, (size_t)n + 1);
  va_start(ap, fmt);
  vsnprintf(d, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return d;
}

void *arena_grow(Arena *arena, void *items, int *cap, int need, size_t elem) {
  if (need <= *cap) return items;
  int ncap = *cap ? *cap * 2 : 8;
  while (ncap < need) ncap *= 2;
  void *n = arena_alloc(arena, elem * (size_t)ncap);
  if (items && *cap) memcpy(n, items, elem * (size_t)*cap);
  *cap = ncap;
  return n;
}
