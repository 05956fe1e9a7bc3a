/* rt_test.h - a tiny harness for the runtime tests: CHECK records a failure
 * with file:line and goes on; main returns rt_test_failures != 0.
 *
 * The scenarios in rt_scenarios.c run the same cache / build / validation
 * checks against any way of making a module (a loader): hand-written C
 * through the runtime's internals (test_rt_hand.c) or a real .tile through
 * the public API and the compiler (test_rt_api.c). */
#ifndef RT_TEST_H
#define RT_TEST_H

#include <stdio.h>
#include <string.h>

#include "tilert.h"

extern int rt_test_failures;

/* A kernel whose shape classes 1, 2 and 3 generate the same code (factor 3)
 * and class 0 other code (factor 2 for 10 <= n < 50): the runtime builds
 * the three once (rt_scenarios.c). */
extern const char rt_test_same_code_src[];

#define CHECK(cond, ...)                                                    \
  do {                                                                      \
    if (!(cond)) {                                                          \
      rt_test_failures++;                                                   \
      fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                         \
      fputc('\n', stderr);                                                  \
    }                                                                       \
  } while (0)

#define CHECK_STATUS(got, want, ctx)                                                    \
  do {                                                                                  \
    TilertStatus got_ = (got), want_ = (want);                                          \
    CHECK(got_ == want_, "status %s, expected %s; last error: %s", tilert_strerror(got_), \
          tilert_strerror(want_), tilert_last_error(ctx));                              \
  } while (0)

#define CHECK_CONTAINS(text, needle) \
  CHECK(strstr((text), (needle)) != NULL, "'%s' does not contain '%s'", (text), (needle))

/* Makes a module in ctx (the kernels scale_add and scale2d, see below). */
typedef TilertStatus (*RtLoader)(TilertContext *ctx, TilertModule **out);

/* Kernels every loader provides:
 *   scale_add(A: f32[n], B: f32[n], C: f32[n], alpha: f32): C = A*alpha + B
 *   scale2d(X: f32[m, k], Y: f32[m, k], s: f32), k = 8:     Y = X*s        */

/* The two kernels above as .tile text, and an RtLoader that compiles it. */
extern const char rt_test_tile_src[];
TilertStatus rt_test_load_tile(TilertContext *ctx, TilertModule **out);
/* Exactly one runtime warning in text, and it names dir as an unusable cache. */
void rt_test_check_one_cache_warning(const char *text, const char *dir, const char *what);

/* Setup: a private $TMPDIR and no TILEC_* variables, so runs are hermetic. */
void rt_test_init(void);
/* A fresh directory under the private $TMPDIR. Caller frees. */
char *rt_test_mkdtemp(const char *tag);
/* Entries of dir whose name ends with suffix ("" for all). */
int rt_test_count(const char *dir, const char *suffix);
/* True when the private $TMPDIR holds only the directories we made. */
bool rt_test_no_stray_temp(void);

/* stderr into a file between begin and end; end returns what was written
 * (malloc'd, caller frees). Used to count the runtime's warnings. */
void rt_test_stderr_begin(void);
char *rt_test_stderr_end(void);
/* Occurrences of needle in text. */
int rt_test_occurrences(const char *text, const char *needle);
/* In the calling process: a private mount namespace (a user namespace too
 * when not root) and a tmpfs with mount options `opts` ("size=64k", "ro")
 * on dir. Returns 0, or an errno (the caller skips). Call it in a forked
 * child that has not opened CUDA: a multithreaded process cannot enter a
 * user namespace, and the mount stays private to the child. */
int rt_test_private_tmpfs(const char *dir, const char *opts);
/* Fills the filesystem holding dir (a file "filler" in it) until at most
 * `leave` bytes are free. Returns the bytes written. */
long rt_test_fill_fs(const char *dir, long leave);

/* Scenarios; `exact` says the loader's kernel info names constants (TilecDim.name). */
void rt_scenario_cache_hit(RtLoader load);
void rt_scenario_corrupt_entry(RtLoader load);
void rt_scenario_unusable_dir(RtLoader load);
void rt_scenario_cache_disabled(RtLoader load);
void rt_scenario_validation(RtLoader load, bool exact);
/* dir exists but no entry can be written into it (full, read-only, or a
 * fault injected by the caller): two loads in one context succeed with
 * correct results, the runtime warns exactly once naming dir, and dir holds
 * the same entries afterwards as before (no partial entry, no temp file). */
void rt_scenario_unwritable_dir(RtLoader load, const char *dir, const char *what);
/* Null handles and NULL out-pointers of every public call: a status, no
 * crash; every destroy accepts NULL. */
void rt_scenario_null_handles(RtLoader load);

#endif
