/* strbuf.h - a growable text buffer for emitters and printers. */
#ifndef TILEC_STRBUF_H
#define TILEC_STRBUF_H

#include <stddef.h>

typedef struct StrBuf {
  char *data; /* NUL-terminated; NULL until the first append */
  size_t len, cap;
} StrBuf;

void sb_init(StrBuf *sb);
void sb_free(StrBuf *sb);
void sb_puts(StrBuf *sb, const char *s);
void sb_putn(StrBuf *sb, const char *s, size_t n);
void sb_printf(StrBuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_indent(StrBuf *sb, int level); /* two spaces per level */
/* Hands the malloc'd text to the caller and resets sb. Never NULL. */
char *sb_take(StrBuf *sb);

#endif
