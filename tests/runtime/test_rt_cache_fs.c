/* test_rt_cache_fs.c - the CPU cache on a real filesystem that is full or
 * read-only, end to end through libtilert.so and a .tile source.
 *
 * Each case runs in a forked child that enters a private mount namespace
 * (and a user namespace when not root) and mounts a small tmpfs as the cache
 * directory, so nothing is mounted outside the child and no root is needed
 * where unprivileged user namespaces are allowed. Where neither works the
 * test exits 77 (ctest: skipped); runtime_hand covers the same fallback with
 * an injected ENOSPC (rt_cache_fault_errno), which always works.
 *
 *   full         tmpfs filled to the last page: the .so cannot be staged
 *   nearly full  8 KB left: the .so is half written, then ENOSPC
 *   read-only    an empty read-only tmpfs (EROFS)
 *   read-only, with an entry: a tmpfs filled by one load, remounted
 *                read-only: the next load is a hit and warns nothing
 * In every case the launch succeeds with correct results, the runtime
 * warns exactly once naming the directory, and the directory holds no
 * partial entry or temp file afterwards (rt_scenario_unwritable_dir). */
#include <errno.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_test.h"

enum { CASE_FULL, CASE_NEARLY_FULL, CASE_READ_ONLY, CASE_READ_ONLY_HIT };
static const char *const case_name[] = {"full", "nearly full", "read-only", "read-only with an entry"};

/* The child: 77 when the mount cannot be made, else 0 or 1. */
static int run_case(int which, const char *dir) {
  int err = rt_test_private_tmpfs(dir, which == CASE_READ_ONLY ? "ro" : "size=256k");
  if (err) {
    printf("skipped: %s: cannot mount a private tmpfs on %s: %s\n", case_name[which], dir,
           strerror(err));
    return 77;
  }
  if (which == CASE_FULL || which == CASE_NEARLY_FULL) {
    long filled = rt_test_fill_fs(dir, which == CASE_FULL ? 0 : 8192);
    CHECK(filled > 0, "could not fill %s", dir);
    rt_scenario_unwritable_dir(rt_test_load_tile, dir, case_name[which]);
  } else if (which == CASE_READ_ONLY) {
    rt_scenario_unwritable_dir(rt_test_load_tile, dir, case_name[which]);
  } else {
    /* Fill the cache, then make it read-only: a hit needs no write. */
    TilertConfig cfg = {TILERT_DEVICE_CPU, dir, false, NULL};
    TilertContext *ctx = NULL;
    TilertModule *mod = NULL;
    tilert_context_create(&cfg, &ctx);
    CHECK_STATUS(rt_test_load_tile(ctx, &mod), TILERT_OK, ctx);
    tilert_module_destroy(mod);
    tilert_context_destroy(ctx);
    CHECK(rt_test_count(dir, ".so") == 1, "no entry to start from");
    if (mount(NULL, dir, NULL, MS_REMOUNT | MS_RDONLY, NULL) != 0) {
      printf("skipped: %s: remount read-only: %s\n", case_name[which], strerror(errno));
      return 77;
    }
    rt_test_stderr_begin();
    tilert_context_create(&cfg, &ctx);
    mod = NULL;
    CHECK_STATUS(rt_test_load_tile(ctx, &mod), TILERT_OK, ctx);
    CHECK(tilert_module_from_cache(mod), "a read-only cache with a good entry missed");
    tilert_module_destroy(mod);
    tilert_context_destroy(ctx);
    char *text = rt_test_stderr_end();
    CHECK(text[0] == '\0', "a cache hit on a read-only directory printed:\n%s", text);
    free(text);
  }
  return rt_test_failures != 0;
}

int main(void) {
  rt_test_init();
  int skipped = 0, failed = 0;
  for (int which = CASE_FULL; which <= CASE_READ_ONLY_HIT; which++) {
    char *dir = rt_test_mkdtemp("cache-fs");
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
      int rc = run_case(which, dir);
      fflush(stdout), fflush(stderr);
      _exit(rc);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (rc == 77) skipped++;
    else if (rc != 0) failed++;
    printf("%s: %s\n", case_name[which], rc == 0 ? "ok" : rc == 77 ? "skipped" : "FAILED");
    free(dir);
  }
  CHECK(rt_test_no_stray_temp(), "temp files left in $TMPDIR");
  if (failed || rt_test_failures) {
    fprintf(stderr, "test_rt_cache_fs: %d case(s) failed\n", failed + rt_test_failures);
    return 1;
  }
  if (skipped == 4) return 77;
  printf("test_rt_cache_fs: all passed%s\n", skipped ? " (some skipped)" : "");
  return 0;
}
