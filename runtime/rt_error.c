/* rt_error.c - recording an error in the context (floor 1, rt_base.h).
 *
 * Every failing internal call formats its message into ctx->last_error
 * (what tilert_last_error returns) and hands back its status, so callers on
 * every floor can write `return rt_error(ctx, TILERT_IO_ERROR, ...)`. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "rt_base.h"

TilertStatus rt_error(TilertContext *ctx, TilertStatus s, const char *fmt, ...) {
  if (!ctx) return s;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (text) {
    va_start(ap, fmt);
    vsnprintf(text, (size_t)n + 1, fmt, ap);
    va_end(ap);
  }
  free(ctx->last_error);
  ctx->last_error = text; /* NULL (out of memory) reads as "" */
  return s;
}
