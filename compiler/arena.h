/* arena.h - bump allocator owning every node of one compilation.
 *
 * The AST, the IR and every string they point to live in one Arena; nothing
 * is freed node by node. arena_destroy() releases the whole compilation at
 * once, which keeps passes free of ownership bookkeeping and runs leak-free
 * under LeakSanitizer. */
#ifndef TILEC_ARENA_H
#define TILEC_ARENA_H

#include <stddef.h>

typedef struct Arena Arena;

Arena *arena_create(void);
void arena_destroy(Arena *arena); /* accepts NULL */

/* Zero-filled, aligned for any scalar type. Aborts on out-of-memory (an
 * internal failure, not a user error). */
void *arena_alloc(Arena *arena, size_t size);
char *arena_strdup(Arena *arena, const char *s);
char *arena_strndup(Arena *arena, const char *s, size_t n);
char *arena_printf(Arena *arena, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Grows an arena-owned array of element size `elem` from *cap to at least
 * need elements, copying the old contents (old storage is left to the arena). */
void *arena_grow(Arena *arena, void *items, int *cap, int need, size_t elem);

#define ARENA_NEW(arena, type) ((type *)arena_alloc((arena), sizeof(type)))
#define ARENA_NEW_ARRAY(arena, type, n) \
  ((type *)arena_alloc((arena), sizeof(type) * (size_t)(n)))

#endif
