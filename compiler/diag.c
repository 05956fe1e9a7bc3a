/* diag.c - formats diagnostics (see diag.h). The source line is printed with
 * tabs kept, so the caret lines up under the column in any terminal. */
#include "diag.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct DiagSource {
  char *file;
  char *text;
  size_t len;
} DiagSource;

struct Diag {
  FILE *echo;
  int errors, warnings;
  char *buf;
  size_t len, cap;
  DiagSource *sources;
  int nsources;
};

Diag *diag_create(FILE *echo) {
  Diag *d = calloc(1, sizeof(Diag));
  if (!d) abort();
  d->echo = echo;
  d->cap = 256;
  d->buf = calloc(1, d->cap);
  if (!d->buf) abort();
  return d;
}

void diag_destroy(Diag *d) {
  if (!d) return;
  for (int i = 0; i < d->nsources; i++) {
    free(d->sources[i].file);
    free(d->sources[i].text);
  }
  free(d->sources);
  free(d->buf);
  free(d);
}

void diag_add_source(Diag *d, const char *file, const char *text, size_t len) {
  DiagSource *s = realloc(d->sources, sizeof(DiagSource) * (size_t)(d->nsources + 1));
  if (!s) abort();
  d->sources = s;
  DiagSource *src = &d->sources[d->nsources++];
  src->file = strdup(file ? file : "<input>");
  src->text = malloc(len + 1);
  if (!src->file || !src->text) abort();
  memcpy(src->text, text, len);
  src->text[len] = '\0';
  src->len = len;
}

static void append(Diag *d, const char *s, size_t n) {
  if (d->len + n + 1 > d->cap) {
    while (d->len + n + 1 > d->cap) d->cap *= 2;
    d->buf = realloc(d->buf, d->cap);
    if (!d->buf) abort();
  }
  memcpy(d->buf + d->len, s, n);
  d->len += n;
  d->buf[d->len] = '\0';
  if (d->echo) fwrite(s, 1, n, d->echo);
}

static void appendf(Diag *d, const char *fmt, ...) {
  char small[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof small) {
    append(d, small, (size_t)n);
    return;
  }
  char *big = malloc((size_t)n + 1);
  if (!big) abort();
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  append(d, big, (size_t)n);
  free(big);
}

/* Prints the source line of loc and a caret under its column. Long lines are
 * cut to a window around the column so a 1 MB line does not flood the output. */
static void show_line(Diag *d, SrcLoc loc) {
  if (loc.line <= 0 || !loc.file) return;
  const DiagSource *src = NULL;
  for (int i = 0; i < d->nsources; i++)
    if (strcmp(d->sources[i].file, loc.file) == 0) src = &d->sources[i];
  if (!src) return;
  const char *p = src->text, *end = src->text + src->len;
  for (int line = 1; line < loc.line && p < end; p++)
    if (*p == '\n') line++;
  if (p >= end && loc.line > 1) return;
  const char *eol = p;
  while (eol < end && *eol != '\n') eol++;
  size_t col = loc.col > 0 ? (size_t)loc.col - 1 : 0;
  size_t width = (size_t)(eol - p);
  size_t from = 0, to = width;
  enum { WINDOW = 100 };
  if (width > 2 * WINDOW) {
    from = col > WINDOW ? col - WINDOW : 0;
    to = from + 2 * WINDOW < width ? from + 2 * WINDOW : width;
  }
  if (col > width) col = width;
  append(d, "  ", 2);
  for (size_t i = from; i < to; i++) {
    char c = p[i];
    /* Control bytes would garble the terminal; show them as '?'. */
    if ((unsigned char)c < 0x20 && c != '\t') c = '?';
    append(d, &c, 1);
  }
  append(d, "\n  ", 3);
  for (size_t i = from; i < col && i < to; i++) append(d, p[i] == '\t' ? "\t" : " ", 1);
  append(d, "^\n", 2);
}

static void report(Diag *d, SrcLoc loc, const char *kind, const char *fmt, va_list ap) {
  char msg[1024];
  vsnprintf(msg, sizeof msg, fmt, ap);
  if (loc.line > 0 && loc.file)
    appendf(d, "%s:%d:%d: %s: %s\n", loc.file, loc.line, loc.col, kind, msg);
  else
    appendf(d, "%s: %s: %s\n", loc.file ? loc.file : "tilec", kind, msg);
  show_line(d, loc);
}

void diag_error(Diag *d, SrcLoc loc, const char *fmt, ...) {
  d->errors++;
  if (d->errors > DIAG_MAX_ERRORS) {
    if (d->errors == DIAG_MAX_ERRORS + 1)
      appendf(d, "tilec: error: too many errors, stopping output\n");
    return;
  }
  va_list ap;
  va_start(ap, fmt);
  report(d, loc, "error", fmt, ap);
  va_end(ap);
}

void diag_warning(Diag *d, SrcLoc loc, const char *fmt, ...) {
  d->warnings++;
  va_list ap;
  va_start(ap, fmt);
  report(d, loc, "warning", fmt, ap);
  va_end(ap);
}

void diag_note(Diag *d, SrcLoc loc, const char *fmt, ...) {
  if (d->errors > DIAG_MAX_ERRORS) return;
  va_list ap;
  va_start(ap, fmt);
  report(d, loc, "note", fmt, ap);
  va_end(ap);
}

int diag_error_count(const Diag *d) { return d->errors; }
const char *diag_text(const Diag *d) { return d->buf; }

void diag_internal(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "tilec: internal error at %s:%d: ", file, line);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  abort();
}
