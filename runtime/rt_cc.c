/* rt_cc.c - runs the system C compiler on the C backend's output (the CPU
 * path, floor 2: rt_cpu.h; called by rt_cpu.c).
 *
 * The command (TilertConfig.cc, $TILEC_CC or "cc") may carry arguments, e.g.
 * "ccache gcc -march=native"; it is split on blanks with '...' and "..."
 * quoting, then RT_CC_FLAGS, -o OUT, IN and RT_CC_LIBS are appended. The
 * child starts with posix_spawnp (no shell), stdin from /dev/null, stdout and
 * stderr into one pipe that we read to the end, so a failure's message holds
 * exactly what the compiler said. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_cpu.h"

extern char **environ;

/* Compiler output kept for the error message; the rest is dropped. */
enum { RT_CC_OUTPUT_MAX = 256 * 1024 };

char **rt_split_command(const char *cmd, int *argc) {
  /* One block: the pointer array, then the words (never longer than cmd). */
  size_t n = strlen(cmd);
  size_t max_words = n / 2 + 2;
  char **argv = malloc(max_words * sizeof(char *) + n + 1);
  if (!argv) return NULL;
  char *w = (char *)(argv + max_words);
  int count = 0;
  const char *p = cmd;
  for (;;) {
    while (*p == ' ' || *p == '\t' || *p == '\n') p++;
    if (!*p) break;
    argv[count++] = w;
    char quote = 0;
    for (; *p; p++) {
      if (quote) {
        if (*p == quote) quote = 0;
        else *w++ = *p;
      } else if (*p == '\'' || *p == '"') {
        quote = *p;
      } else if (*p == ' ' || *p == '\t' || *p == '\n') {
        break;
      } else {
        *w++ = *p;
      }
    }
    *w++ = '\0';
  }
  argv[count] = NULL;
  *argc = count;
  return argv;
}

/* Appends the argv, space-separated, to a message buffer. */
static void join_argv(char *const *argv, char *out, size_t size) {
  size_t len = 0;
  out[0] = '\0';
  for (int i = 0; argv[i] && len + 1 < size; i++)
    len += (size_t)snprintf(out + len, size - len, "%s%s", i ? " " : "", argv[i]);
}

TilertStatus rt_cc_build(TilertContext *ctx, const char *cc, const char *c_path,
                         const char *so_path) {
  int ncc;
  char **words = rt_split_command(cc, &ncc);
  if (!words) return rt_error(ctx, TILERT_OUT_OF_MEMORY, "out of memory");
  if (ncc == 0) {
    free(words);
    return rt_error(ctx, TILERT_CC_FAILED, "the C compiler command is empty");
  }
  int nflags;
  char **flags = rt_split_command(RT_CC_FLAGS, &nflags);
  char **argv = malloc((size_t)(ncc + nflags + 5) * sizeof(char *));
  if (!flags || !argv) {
    free(words), free(flags), free(argv);
    return rt_error(ctx, TILERT_OUT_OF_MEMORY, "out of memory");
  }
  int argc = 0;
  for (int i = 0; i < ncc; i++) argv[argc++] = words[i];
  for (int i = 0; i < nflags; i++) argv[argc++] = flags[i];
  argv[argc++] = "-o";
  argv[argc++] = (char *)so_path;
  argv[argc++] = (char *)c_path;
  argv[argc++] = RT_CC_LIBS;
  argv[argc] = NULL;

  char cmdline[4096];
  join_argv(argv, cmdline, sizeof cmdline);

  TilertStatus st = TILERT_OK;
  char *out = NULL;
  int fds[2] = {-1, -1};
  posix_spawn_file_actions_t fa;
  bool fa_ok = false;
  if (pipe2(fds, O_CLOEXEC) != 0) {
    st = rt_error(ctx, TILERT_IO_ERROR, "cannot create a pipe for the C compiler: %s",
                  strerror(errno));
    goto done;
  }
  if (posix_spawn_file_actions_init(&fa) != 0) {
    st = rt_error(ctx, TILERT_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  fa_ok = true;
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  pid_t pid;
  int err = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
  close(fds[1]);
  fds[1] = -1;
  if (err != 0) {
    st = rt_error(ctx, TILERT_CC_FAILED, "cannot run the C compiler '%s': %s\ncommand: %s",
                  argv[0], strerror(err), cmdline);
    goto done;
  }

  /* Read everything the compiler says, then reap it. */
  size_t len = 0, cap = 4096;
  out = malloc(cap);
  bool truncated = false;
  for (;;) {
    char chunk[4096];
    ssize_t r = read(fds[0], chunk, sizeof chunk);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    if (!out) continue;
    if (len + (size_t)r + 1 > RT_CC_OUTPUT_MAX) {
      truncated = true;
      continue;
    }
    if (len + (size_t)r + 1 > cap) {
      while (len + (size_t)r + 1 > cap) cap *= 2;
      char *grown = realloc(out, cap);
      if (!grown) continue;
      out = grown;
    }
    memcpy(out + len, chunk, (size_t)r);
    len += (size_t)r;
  }
  if (out) out[len] = '\0';
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    char how[64];
    if (WIFEXITED(wstatus)) snprintf(how, sizeof how, "exit status %d", WEXITSTATUS(wstatus));
    else snprintf(how, sizeof how, "signal %d", WTERMSIG(wstatus));
    st = rt_error(ctx, TILERT_CC_FAILED, "the C compiler failed (%s)\ncommand: %s\n%s%s", how,
                  cmdline, out ? out : "", truncated ? "\n... (output truncated)" : "");
  }

done:
  if (fa_ok) posix_spawn_file_actions_destroy(&fa);
  if (fds[0] >= 0) close(fds[0]);
  if (fds[1] >= 0) close(fds[1]);
  free(out);
  free(argv);
  free(flags);
  free(words);
  return st;
}
