/* rt_cache.c - the on-disk cache of compiled kernels.
 *
 * An entry is two files in the cache directory, named by the key (64 hex
 * digits of a SHA-256 over everything that decides the binary):
 *     <key>.so   the shared object the C compiler produced
 *     <key>.sum  "tilert-sum 1\nsize <bytes>\nsha256 <hex>\n" of the .so
 * Both are written to a temp file in the same directory and rename()d, so a
 * reader sees a whole file or none. The .so is trusted only when the .sum
 * names its exact size and hash; anything else is a miss and gets rebuilt. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_internal.h"

/* Bumped when the entry format or the key's ingredients change. */
#define RT_CACHE_FORMAT "tilert-cache 1"

static void key_field(RtSha256 *s, const char *tag, const void *data, size_t len) {
  /* Tag and length before each field, so no two inputs hash the same stream. */
  char head[64];
  int n = snprintf(head, sizeof head, "%s %zu:", tag, len);
  rt_sha256_update(s, head, (size_t)n);
  rt_sha256_update(s, data, len);
}

void rt_cache_key(const char *cc, const char *ir, const char *c_src, size_t c_len, char out[65]) {
  RtSha256 s;
  unsigned char d[32];
  const char *version = tilec_version();
  const char *flags = RT_CC_FLAGS " " RT_CC_LIBS;
  rt_sha256_init(&s);
  key_field(&s, "format", RT_CACHE_FORMAT, strlen(RT_CACHE_FORMAT));
  key_field(&s, "version", version, strlen(version));
  key_field(&s, "target", "cpu", 3);
  key_field(&s, "cc", cc, strlen(cc));
  key_field(&s, "flags", flags, strlen(flags));
  key_field(&s, "ir", ir ? ir : "", ir ? strlen(ir) : 0);
  /* The C text too: a compiler change that keeps its version string but
   * emits different code must not hit an old entry. */
  key_field(&s, "c", c_src, c_len);
  rt_sha256_final(&s, d);
  rt_hex(d, 32, out);
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

bool rt_cache_entry_valid(const char *dir, const char *key) {
  char *so = entry_path(dir, key, "so"), *sum = entry_path(dir, key, "sum");
  bool ok = false;
  FILE *f = so && sum ? fopen(sum, "r") : NULL;
  if (f) {
    unsigned long long want_size;
    char want_hex[65], have_hex[65];
    uint64_t have_size;
    if (fscanf(f, "tilert-sum 1\nsize %llu\nsha256 %64[0-9a-f]\n", &want_size, want_hex) == 2 &&
        strlen(want_hex) == 64 && rt_file_digest(so, &have_size, have_hex) == 0)
      ok = have_size == want_size && strcmp(have_hex, want_hex) == 0;
    fclose(f);
  }
  free(so);
  free(sum);
  return ok;
}

/* Writes `text` to a fresh temp file beside `final` and renames it there. */
static int write_atomic(const char *dir, const char *final, const char *text) {
  size_t n = strlen(dir) + 32;
  char *tmp = malloc(n);
  if (!tmp) return ENOMEM;
  snprintf(tmp, n, "%s/.tmp-sum-XXXXXX", dir);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    int err = errno;
    free(tmp);
    return err;
  }
  size_t len = strlen(text), done = 0;
  int err = 0;
  while (done < len) {
    ssize_t w = write(fd, text + done, len - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      err = w < 0 ? errno : EIO;
      break;
    }
    done += (size_t)w;
  }
  if (close(fd) != 0 && !err) err = errno;
  if (!err && chmod(tmp, 0644) != 0) err = errno;
  if (!err && rename(tmp, final) != 0) err = errno;
  if (err) unlink(tmp);
  free(tmp);
  return err;
}

int rt_cache_publish(const char *dir, const char *key, const char *so_tmp) {
  uint64_t size;
  char hex[65];
  int err = rt_file_digest(so_tmp, &size, hex);
  if (err) return err;
  char *so = entry_path(dir, key, "so"), *sum = entry_path(dir, key, "sum");
  if (!so || !sum) err = ENOMEM;
  /* .so first: a reader between the two renames sees a new .so with an old
   * (or no) .sum, which is a miss, never a wrong hit. */
  if (!err && chmod(so_tmp, 0755) != 0) err = errno;
  if (!err && rename(so_tmp, so) != 0) err = errno;
  if (!err) {
    char text[128];
    snprintf(text, sizeof text, "tilert-sum 1\nsize %llu\nsha256 %s\n", (unsigned long long)size,
             hex);
    err = write_atomic(dir, sum, text);
  }
  free(so);
  free(sum);
  return err;
}
