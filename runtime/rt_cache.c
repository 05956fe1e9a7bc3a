/* rt_cache.c - the on-disk cache of compiled kernels.
 *
 * An entry is two files in the cache directory, named by the key (64 hex
 * digits of a SHA-256 over everything that decides the binary):
 *     <key>.so     the shared object the C compiler produced (CPU), or
 *     <key>.cubin  the cubin NVRTC produced (CUDA; the key differs)
 *     <key>.sum    "tilert-sum 1\nsize <bytes>\nsha256 <hex>\n" of the binary
 *     <key>.log    CUDA only, when NVRTC's log of the build is not empty: its
 *                  text, for tilert_module_compile_log on a later hit
 * All are written in full to temp files in the same directory and only then
 * rename()d, log first and .sum last, so a reader sees a whole file or none,
 * an entry that is a hit already has its log, and a write that fails (a
 * full disk: ENOSPC) leaves nothing behind. The binary is trusted only when
 * the .sum names its exact size and hash; anything else is a miss and gets
 * rebuilt. The log is advice, not code: no .sum covers it, a missing or
 * unreadable one reads as "" (caches from before logs were kept have none),
 * and no more than RT_CACHE_LOG_MAX bytes of it are read back. Every byte
 * written into the cache directory goes through rt_cache_write_fd, where
 * the tests inject write failures (rt_cache_fault_errno).
 *
 * Floor 1 (rt_base.h): the store and the key's framing. What goes into a
 * key is each path's business (rt_cpu_cache_key, rt_gpu_cache_key); the
 * format, tilec's version and the target start every key here, and the
 * generated code and IR go in through rt_cache_key_code, which leaves out
 * only the words saying which way a build took each shape choice (a
 * comment, and an IR header line): shape classes of one module whose code
 * is the same share an entry. rt_code_digest is the same view of a compile
 * result, for the runtime's own comparison of a module's class builds. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_base.h"

/* Bumped when the entry format or the key's ingredients change. (Not for
 * rt_cache_key_code leaving out the way each shape choice went: the
 * compiler always wrote those words, so no older entry sits under a key
 * made without them, and a text with no shape choices keeps its key.) */
#define RT_CACHE_FORMAT "tilert-cache 1"

void rt_cache_key_field(RtSha256 *s, const char *tag, const void *data, size_t len) {
  /* Tag and length before each field, so no two inputs hash the same stream. */
  char head[64];
  int n = snprintf(head, sizeof head, "%s %zu:", tag, len);
  rt_sha256_update(s, head, (size_t)n);
  rt_sha256_update(s, data, len);
}

/* The lines on which the compiler says which way this build took each shape
 * choice (compiler/ir_print.c): the generated code's comment "// <kernel>:
 * shape choices (...): #0: <condition> -> true, ..." and the IR's
 * "  shape_choices(#0: <condition> -> true, ...)". A line comment that ends
 * in a backslash would swallow the next line: such a line is left alone. */
static bool shape_choice_line(const char *line, size_t n) {
  static const char code[] = ": shape choices (", ir[] = "  shape_choices(";
  if (n >= sizeof ir - 1 && memcmp(line, ir, sizeof ir - 1) == 0) return true;
  if (n < 2 || memcmp(line, "//", 2) != 0 || line[n - 1] == '\\') return false;
  for (size_t i = 2; i + sizeof code - 1 <= n; i++)
    if (memcmp(line + i, code, sizeof code - 1) == 0) return true;
  return false;
}

/* Copies line[0, n) to out less every " -> true" and " -> false"; returns
 * the bytes written. */
static size_t drop_ways(const char *line, size_t n, char *out) {
  static const char *const ways[] = {" -> true", " -> false"};
  size_t w = 0;
  for (size_t i = 0; i < n;) {
    size_t skip = 0;
    for (int k = 0; k < 2 && !skip; k++) {
      size_t len = strlen(ways[k]);
      if (i + len <= n && memcmp(line + i, ways[k], len) == 0) skip = len;
    }
    if (skip) i += skip;
    else out[w++] = line[i++];
  }
  return w;
}

void rt_cache_key_code(RtSha256 *s, const char *tag, const char *text, size_t len) {
  char *norm = malloc(len ? len : 1);
  if (!norm) {
    /* The whole text: still a correct key, only not shared between classes. */
    rt_cache_key_field(s, tag, text, len);
    return;
  }
  size_t w = 0;
  for (size_t i = 0; i < len;) {
    const char *nl = memchr(text + i, '\n', len - i);
    size_t n = nl ? (size_t)(nl - (text + i)) : len - i; /* the line, without its newline */
    if (shape_choice_line(text + i, n)) w += drop_ways(text + i, n, norm + w);
    else memcpy(norm + w, text + i, n), w += n;
    i += n;
    if (nl) norm[w++] = '\n', i++;
  }
  rt_cache_key_field(s, tag, norm, w);
  free(norm);
}

void rt_code_digest(const TilecResult *res, char out[65]) {
  RtSha256 s;
  const char *ir = tilec_result_specialized_ir(res);
  rt_sha256_init(&s);
  rt_cache_key_code(&s, "ir", ir, strlen(ir));
  rt_cache_key_code(&s, "code", tilec_result_output(res), tilec_result_output_size(res));
  rt_cache_key_end(&s, out);
}

void rt_cache_key_begin(RtSha256 *s, const char *target) {
  const char *version = tilec_version();
  rt_sha256_init(s);
  rt_cache_key_field(s, "format", RT_CACHE_FORMAT, strlen(RT_CACHE_FORMAT));
  rt_cache_key_field(s, "version", version, strlen(version));
  rt_cache_key_field(s, "target", target, strlen(target));
}

void rt_cache_key_end(RtSha256 *s, char out[65]) {
  unsigned char d[32];
  rt_sha256_final(s, d);
  rt_hex(d, 32, out);
}

void rt_cache_warn(TilertContext *ctx, const char *dir, const char *why) {
  if (ctx->cache_warned) return;
  ctx->cache_warned = true;
  fprintf(stderr,
          "tilert: warning: cache directory '%s' is not usable (%s); building without the "
          "cache\n",
          dir, why);
}

int rt_mkdir_p(const char *path) {
  size_t n = strlen(path);
  if (n == 0) return ENOENT;
  char *p = malloc(n + 1);
  if (!p) return ENOMEM;
  memcpy(p, path, n + 1);
  int err = 0;
  /* Create each prefix ending before a '/', then the whole path. */
  for (size_t i = 1; i <= n && !err; i++) {
    if (i < n && p[i] != '/') continue;
    char saved = p[i];
    p[i] = '\0';
    if (mkdir(p, 0755) != 0 && errno != EEXIST) err = errno;
    p[i] = saved;
  }
  if (!err) {
    struct stat st;
    if (stat(path, &st) != 0) err = errno;
    else if (!S_ISDIR(st.st_mode)) err = ENOTDIR;
  }
  free(p);
  return err;
}

int rt_file_digest(const char *path, uint64_t *size, char hex[65]) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  RtSha256 s;
  rt_sha256_init(&s);
  unsigned char buf[65536];
  int err = 0;
  for (;;) {
    ssize_t r = read(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) err = errno;
    if (r <= 0) break;
    rt_sha256_update(&s, buf, (size_t)r);
  }
  close(fd);
  if (err) return err;
  *size = s.total;
  unsigned char d[32];
  rt_sha256_final(&s, d);
  rt_hex(d, 32, hex);
  return 0;
}

static char *entry_path(const char *dir, const char *key, const char *ext) {
  size_t n = strlen(dir) + strlen(key) + strlen(ext) + 3;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/%s.%s", dir, key, ext);
  return p;
}

/* Parses <dir>/<key>.sum. */
static bool read_sum(const char *dir, const char *key, unsigned long long *size, char hex[65]) {
  char *sum = entry_path(dir, key, "sum");
  FILE *f = sum ? fopen(sum, "r") : NULL;
  bool ok = false;
  if (f) {
    ok = fscanf(f, "tilert-sum 1\nsize %llu\nsha256 %64[0-9a-f]\n", size, hex) == 2 &&
         strlen(hex) == 64;
    fclose(f);
  }
  free(sum);
  return ok;
}

bool rt_cache_entry_valid(const char *dir, const char *key) {
  char *so = entry_path(dir, key, "so");
  unsigned long long want_size;
  char want_hex[65], have_hex[65];
  uint64_t have_size;
  bool ok = so && read_sum(dir, key, &want_size, want_hex) &&
            rt_file_digest(so, &have_size, have_hex) == 0 && have_size == want_size &&
            strcmp(have_hex, want_hex) == 0;
  free(so);
  return ok;
}

/* Reads up to cap bytes of fd into buf; *len says how many (fewer at the
 * end of the file). False on a read error. */
static bool read_upto(int fd, void *buf, size_t cap, size_t *len) {
  *len = 0;
  while (*len < cap) {
    ssize_t r = read(fd, (char *)buf + *len, cap - *len);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return false;
    if (r == 0) break;
    *len += (size_t)r;
  }
  return true;
}

bool rt_cache_read_entry(const char *dir, const char *key, const char *ext, void **data,
                         size_t *size) {
  *data = NULL;
  *size = 0;
  unsigned long long want_size;
  char want_hex[65], have_hex[65];
  if (!read_sum(dir, key, &want_size, want_hex) || want_size == 0 ||
      want_size > (1ull << 32)) /* no binary is that big: a garbled .sum */
    return false;
  char *path = entry_path(dir, key, ext);
  int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
  free(path);
  if (fd < 0) return false;
  /* One byte more than the .sum says, to notice a longer file. */
  size_t cap = (size_t)want_size + 1, len = 0;
  unsigned char *buf = malloc(cap);
  bool read_ok = buf && read_upto(fd, buf, cap, &len);
  close(fd);
  if (read_ok && len == want_size) {
    rt_sha256_hex(buf, len, have_hex);
    if (strcmp(have_hex, want_hex) == 0) {
      *data = buf;
      *size = len;
      return true;
    }
  }
  free(buf);
  return false;
}

int rt_cache_fault_errno;

int rt_cache_write_fd(int fd, const void *data, size_t len) {
  /* The test seam: store half, then fail the way a full disk does. */
  size_t limit = rt_cache_fault_errno ? len / 2 : len;
  for (size_t done = 0; done < limit;) {
    ssize_t w = write(fd, (const char *)data + done, limit - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return w < 0 ? errno : EIO;
    done += (size_t)w;
  }
  return rt_cache_fault_errno;
}

/* A fresh temp file <dir>/.tmp-<tag>-XXXXXX holding `data`, mode `mode`.
 * On success *out is its malloc'd path; on failure nothing is left. */
static int stage(const char *dir, const char *tag, const void *data, size_t len, unsigned mode,
                 char **out) {
  *out = NULL;
  size_t n = strlen(dir) + strlen(tag) + 16;
  char *tmp = malloc(n);
  if (!tmp) return ENOMEM;
  snprintf(tmp, n, "%s/.tmp-%s-XXXXXX", dir, tag);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    int err = errno;
    free(tmp);
    return err;
  }
  int err = rt_cache_write_fd(fd, data, len);
  if (!err && fchmod(fd, (mode_t)mode) != 0) err = errno;
  if (close(fd) != 0 && !err) err = errno; /* NFS reports ENOSPC here */
  if (err) {
    unlink(tmp);
    free(tmp);
    return err;
  }
  *out = tmp;
  return 0;
}

int rt_cache_publish_bytes(const char *dir, const char *key, const char *ext, const void *data,
                           size_t size, unsigned mode, const char *log) {
  char hex[65], text[128];
  rt_sha256_hex(data, size, hex);
  snprintf(text, sizeof text, "tilert-sum 1\nsize %llu\nsha256 %s\n", (unsigned long long)size,
           hex);
  bool with_log = log && *log;
  char *bin = entry_path(dir, key, ext), *sum = entry_path(dir, key, "sum");
  char *lg = with_log ? entry_path(dir, key, "log") : NULL;
  char *bin_tmp = NULL, *sum_tmp = NULL, *log_tmp = NULL;
  int err = bin && sum && (lg || !with_log) ? 0 : ENOMEM;
  /* Every file is written in full before any is renamed: a full disk or
   * an I/O error fails here and leaves nothing behind. */
  if (!err) err = stage(dir, key, data, size, mode, &bin_tmp);
  if (!err) err = stage(dir, "sum", text, strlen(text), 0644, &sum_tmp);
  if (!err && with_log) err = stage(dir, "log", log, strlen(log), 0644, &log_tmp);
  /* The log first, so a reader that finds the entry finds its log; then
   * the binary: a reader between the last two renames sees a new binary
   * with an old (or no) .sum, which is a miss, never a wrong hit. An empty
   * log leaves an older <key>.log alone: the key fixes the compile, and a
   * compile NVRTC served from the driver's compute cache logs no ptxas
   * lines (docs/cuda-runtime.md). */
  if (!err && log_tmp && rename(log_tmp, lg) != 0) err = errno;
  if (!err && rename(bin_tmp, bin) != 0) err = errno;
  if (!err && rename(sum_tmp, sum) != 0) err = errno;
  if (err) {
    if (bin_tmp) unlink(bin_tmp); /* already gone when renamed */
    if (sum_tmp) unlink(sum_tmp);
    if (log_tmp) unlink(log_tmp);
  }
  free(bin_tmp);
  free(sum_tmp);
  free(log_tmp);
  free(bin);
  free(sum);
  free(lg);
  return err;
}

char *rt_cache_read_log(const char *dir, const char *key) {
  static const char cut[] = "\n--- tilert: the cached log is cut here, after its first 1 MiB ---\n";
  char *path = entry_path(dir, key, "log");
  int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
  free(path);
  struct stat st;
  if (fd < 0) return NULL;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return close(fd), NULL;
  /* The file's size says how much to read (at most RT_CACHE_LOG_MAX): a
   * garbage file costs a bounded read, never the process's memory. */
  size_t want = (uint64_t)st.st_size > RT_CACHE_LOG_MAX ? RT_CACHE_LOG_MAX : (size_t)st.st_size, len = 0;
  char *text = malloc(want + sizeof cut);
  bool ok = text && read_upto(fd, text, want, &len);
  close(fd);
  if (!ok || len == 0) return free(text), NULL;
  if ((uint64_t)st.st_size > RT_CACHE_LOG_MAX) memcpy(text + len, cut, sizeof cut);
  else text[len] = '\0';
  return text;
}

int rt_read_file(const char *path, void **data, size_t *size) {
  *data = NULL;
  *size = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  size_t len = 0, cap = 65536;
  unsigned char *buf = malloc(cap);
  int err = buf ? 0 : ENOMEM;
  while (!err) {
    if (len == cap) {
      unsigned char *grown = realloc(buf, cap * 2);
      if (!grown) {
        err = ENOMEM;
        break;
      }
      buf = grown, cap *= 2;
    }
    ssize_t r = read(fd, buf + len, cap - len);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) err = errno;
    if (r <= 0) break;
    len += (size_t)r;
  }
  close(fd);
  if (err) {
    free(buf);
    return err;
  }
  *data = buf;
  *size = len;
  return 0;
}
