/* replay.c - runs the fuzz entry point over saved inputs, without libFuzzer.
 *
 *   fuzz_replay [--no-fork] PATH...   each PATH a file or a directory (its
 *                                      regular files, not recursive, name order)
 *
 * How it works: every file is read whole and handed to LLVMFuzzerTestOneInput
 * (fuzz_tilec.c), exactly as libFuzzer would, in a child process of its own,
 * so one crashing input does not hide the others: each failure is listed with
 * its file name and the signal or exit status (the sanitizer report, if any,
 * is on stderr just above). The limits of a libFuzzer run hold here too:
 * the child is killed by SIGALRM after TILEC_REPLAY_SECONDS (default 20 s;
 * sanitizers are slow, so looser than the fuzzer's -timeout=5) and fails when
 * its peak RSS (wait4's rusage) is over TILEC_REPLAY_RSS_MB (default 2048,
 * the fuzzer's -rss_limit_mb). --no-fork runs everything in this process
 * (for a debugger; the first crash ends the run, no memory check).
 *
 * Exit 0 when every input ran clean and within the limits; 1 when one did
 * not, when a path could not be read, or when no input was found (a replay of
 * nothing must not pass). */
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static long replay_rss_limit_mb = 2048;
static long replay_time_limit_s = 20;
static int replay_fork = 1;

typedef struct Tally {
  int ran, failed;
} Tally;

static long env_long(const char *name, long dflt) {
  const char *v = getenv(name);
  char *end;
  long n = v ? strtol(v, &end, 10) : 0;
  return v && *v && !*end && n > 0 ? n : dflt;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The whole file in a malloc'ed buffer of exactly its size (so ASan sees any
 * read past the end), or NULL. */
static uint8_t *read_all(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  uint8_t *buf = malloc(cap);
  for (;;) {
    if (!buf) abort();
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap) break;
    cap *= 2;
    buf = realloc(buf, cap);
  }
  int err = ferror(f);
  fclose(f);
  if (err) {
    free(buf);
    return NULL;
  }
  uint8_t *exact = malloc(n ? n : 1);
  if (!exact) abort();
  memcpy(exact, buf, n);
  free(buf);
  *len = n;
  return exact;
}

static void replay_file(const char *path, Tally *t) {
  size_t n = 0;
  uint8_t *buf = read_all(path, &n);
  if (!buf) {
    fprintf(stderr, "fuzz_replay: cannot read %s\n", path);
    t->failed++;
    return;
  }
  fflush(NULL);
  t->ran++;
  if (!replay_fork) {
    fprintf(stderr, "fuzz_replay: %s (%zu bytes)\n", path, n);
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return;
  }
  double t0 = now_s();
  pid_t pid = fork();
  if (pid < 0) {
    perror("fuzz_replay: fork");
    exit(1);
  }
  if (pid == 0) {
    alarm((unsigned)replay_time_limit_s);
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    exit(0); /* not _exit: LeakSanitizer runs from an exit handler */
  }
  free(buf);
  int status = 0;
  struct rusage ru;
  while (wait4(pid, &status, 0, &ru) < 0) {}
  double dt = now_s() - t0;
  long rss_mb = ru.ru_maxrss / 1024; /* KiB on Linux */
  const char *why = NULL;
  char msg[128];
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
    snprintf(msg, sizeof msg, "timeout: over %ld s (TILEC_REPLAY_SECONDS)", replay_time_limit_s);
    why = msg;
  } else if (WIFSIGNALED(status)) {
    snprintf(msg, sizeof msg, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    why = msg;
  } else if (WEXITSTATUS(status) != 0) {
    snprintf(msg, sizeof msg, "exit status %d (sanitizer report above)", WEXITSTATUS(status));
    why = msg;
  } else if (rss_mb > replay_rss_limit_mb) {
    snprintf(msg, sizeof msg, "peak RSS %ld MB, over %ld MB (TILEC_REPLAY_RSS_MB)", rss_mb, replay_rss_limit_mb);
    why = msg;
  }
  if (why) {
    fprintf(stderr, "fuzz_replay: FAIL %s (%zu bytes, %.2f s): %s\n", path, n, dt, why);
    t->failed++;
  }
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void replay_path(const char *path, Tally *t) {
  struct stat st;
  if (stat(path, &st) != 0) {
    fprintf(stderr, "fuzz_replay: no such file or directory: %s\n", path);
    t->failed++;
    return;
  }
  if (!S_ISDIR(st.st_mode)) {
    replay_file(path, t);
    return;
  }
  DIR *d = opendir(path);
  if (!d) {
    fprintf(stderr, "fuzz_replay: cannot open directory %s\n", path);
    t->failed++;
    return;
  }
  char **names = NULL;
  size_t count = 0, cap = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue; /* ., .., hidden files such as .gitkeep */
    size_t len = strlen(path) + strlen(e->d_name) + 2;
    char *full = malloc(len);
    if (!full) abort();
    snprintf(full, len, "%s/%s", path, e->d_name);
    if (stat(full, &st) != 0 || !S_ISREG(st.st_mode)) {
      free(full);
      continue;
    }
    if (count == cap) {
      cap = cap ? cap * 2 : 64;
      names = realloc(names, cap * sizeof *names);
      if (!names) abort();
    }
    names[count++] = full;
  }
  closedir(d);
  if (count) qsort(names, count, sizeof *names, cmp_names);
  for (size_t i = 0; i < count; i++) {
    replay_file(names[i], t);
    free(names[i]);
  }
  free(names);
}

int main(int argc, char **argv) {
  replay_rss_limit_mb = env_long("TILEC_REPLAY_RSS_MB", 2048);
  replay_time_limit_s = env_long("TILEC_REPLAY_SECONDS", 20);
  Tally t = {0, 0};
  int npaths = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--no-fork") == 0) {
      replay_fork = 0;
      continue;
    }
    npaths++;
    replay_path(argv[i], &t);
  }
  if (npaths == 0) {
    fprintf(stderr, "usage: fuzz_replay [--no-fork] FILE-OR-DIR...\n");
    return 2;
  }
  printf("fuzz_replay: %d inputs replayed, %d failed\n", t.ran, t.failed);
  if (t.ran == 0) {
    fprintf(stderr, "fuzz_replay: no input found\n");
    return 1;
  }
  return t.failed ? 1 : 0;
}
