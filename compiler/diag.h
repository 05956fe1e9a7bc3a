/* diag.h - diagnostics: `file:line:col: error: message`, the source line, a caret.
 *
 * Every stage (lexer, parser, sema, passes, backends) reports through a Diag.
 * Messages are collected as text (so the runtime can hand them back through its
 * last-error call) and optionally echoed to a FILE* as they arrive (the CLI
 * passes stderr). Errors never abort: the stage returns false and the caller
 * stops the pipeline. Only internal bugs call diag_internal(), which aborts. */
#ifndef TILEC_DIAG_H
#define TILEC_DIAG_H

#include <stdbool.h>
#include <stdio.h>

/* A position in a .tile file; line and col are 1-based. A zero line means
 * "no location" (e.g. an error about a -D binding). */
typedef struct SrcLoc {
  const char *file;
  int line, col;
} SrcLoc;

typedef struct Diag Diag;

Diag *diag_create(FILE *echo); /* echo may be NULL */
void diag_destroy(Diag *d);    /* accepts NULL */

/* Registers the text of a file so diagnostics can show the offending line.
 * The text is copied. */
void diag_add_source(Diag *d, const char *file, const char *text, size_t len);

void diag_error(Diag *d, SrcLoc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void diag_warning(Diag *d, SrcLoc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void diag_note(Diag *d, SrcLoc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

int diag_error_count(const Diag *d);
/* All text reported so far, NUL-terminated, owned by d. */
const char *diag_text(const Diag *d);

/* Stop reporting errors after this many (later ones are counted, not shown). */
enum { DIAG_MAX_ERRORS = 20 };

_Noreturn void diag_internal(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define TILEC_UNREACHABLE(msg) diag_internal(__FILE__, __LINE__, "%s", (msg))
#define TILEC_ASSERT(cond)                                                    \
  do {                                                                        \
    if (!(cond)) diag_internal(__FILE__, __LINE__, "assertion failed: %s", #cond); \
  } while (0)

#endif
