/* rt_gpu_nvrtc.c - the NVRTC version for a cubin cache lookup without
 * opening libnvrtc (floor 2, GPU column; rt_gpu.h).
 *
 * A cubin's cache key holds the NVRTC version (another NVRTC may generate
 * other code), but libnvrtc is ~100 MB to map and relocate (5-7 ms) and a
 * load that hits the cache needs nothing else from it. So the cache
 * directory keeps a stamp of the libnvrtc last opened for it,
 *     <dir>/nvrtc-<env>.id   (<env>: 16 hex digits of a SHA-256 over
 *                             $TILEC_NVRTC_LIB and $LD_LIBRARY_PATH)
 *     tilert-nvrtc 1
 *     path /usr/local/cuda/lib64/libnvrtc.so.13   (dladdr: what the loader opened)
 *     file <dev> <ino> <size> <mtime s> <mtime ns>   (stat of that path)
 *     ldcache <dev> <ino> <size> <mtime s> <mtime ns>   (/etc/ld.so.cache, or "none")
 *     version 13000
 * and a lookup trusts its version while everything that decides which file
 * the dynamic loader would open, and that file itself, is unchanged: the
 * same two variables (the file name), the same /etc/ld.so.cache (ldconfig
 * rewrites it when a library is installed) and the same file at the path
 * (a new inode, size or mtime after an upgrade, a symlink pointed
 * elsewhere). Anything else opens libnvrtc and rewrites the stamp. A stamp
 * that cannot be read, parsed or written costs only that dlopen: it is
 * never an error. It is written to a temp file and renamed, like the cache's
 * entries. Where libnvrtc cannot be opened at all (a deployment that ships
 * a cache filled ahead of time and no CUDA toolkit), the newest stamp's
 * version is taken as it stands: its cubins still hit, nothing else builds. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cuda_driver.h"
#include "rt_gpu.h"

#define RT_NVRTC_STAMP_MAGIC "tilert-nvrtc 1"

/* <dir>/nvrtc-<16 hex>.id for this process's loader environment. */
static void stamp_path(const char *dir, char *out, size_t cap) {
  RtSha256 s;
  rt_sha256_init(&s);
  const char *vars[] = {"TILEC_NVRTC_LIB", "LD_LIBRARY_PATH"};
  for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
    const char *v = getenv(vars[i]);
    /* Unset and empty are the same to the loader; the NUL separates fields. */
    rt_sha256_update(&s, vars[i], strlen(vars[i]) + 1);
    rt_sha256_update(&s, v ? v : "", v ? strlen(v) + 1 : 1);
  }
  unsigned char d[32];
  rt_sha256_final(&s, d);
  char hex[17];
  rt_hex(d, 8, hex);
  snprintf(out, cap, "%s/nvrtc-%s.id", dir, hex);
}

/* "dev ino size mtime_s mtime_ns" of path (stat follows symlinks), or "none". */
static void file_identity(const char *path, char *out, size_t cap) {
  struct stat st;
  if (stat(path, &st) != 0) {
    snprintf(out, cap, "none");
    return;
  }
  snprintf(out, cap, "%llu %llu %llu %lld %ld", (unsigned long long)st.st_dev,
           (unsigned long long)st.st_ino, (unsigned long long)st.st_size,
           (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec);
}

/* The stamp's text for libnvrtc at `path`, version `version`. */
static int stamp_text(const char *path, int version, char *out, size_t cap) {
  char file[128], ldcache[128];
  file_identity(path, file, sizeof file);
  file_identity("/etc/ld.so.cache", ldcache, sizeof ldcache);
  return snprintf(out, cap, RT_NVRTC_STAMP_MAGIC "\npath %s\nfile %s\nldcache %s\nversion %d\n",
                  path, file, ldcache, version);
}

/* The version a still-true stamp in dir records, else 0. A stamp is true
 * when the text made now from its path and version is the same, byte for
 * byte (same loader environment, same ld.so.cache, same file). */
static int stamp_version(const char *dir) {
  char sp[1100];
  stamp_path(dir, sp, sizeof sp);
  void *data = NULL;
  size_t size = 0;
  if (rt_read_file(sp, &data, &size) != 0) return 0;
  char buf[4096], expect[4096];
  int version = 0;
  if (size < sizeof buf) {
    memcpy(buf, data, size);
    buf[size] = '\0';
    const char *path = NULL;
    long v = 0;
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
      if (strncmp(line, "path ", 5) == 0) path = line + 5;
      else if (strncmp(line, "version ", 8) == 0) v = strtol(line + 8, NULL, 10);
    }
    int len = path && v > 0 && v < 1000000 ? stamp_text(path, (int)v, expect, sizeof expect) : 0;
    if (len > 0 && (size_t)len == size && memcmp(expect, data, size) == 0) version = (int)v;
  }
  free(data);
  return version;
}

void rt_gpu_nvrtc_stamp(RtCuda *cu, const char *dir) {
  const char *path = rt_cuda_nvrtc_path(cu);
  int version = rt_cuda_nvrtc_version(cu);
  if (!dir || !*path || version <= 0 || stamp_version(dir) == version) return;
  char sp[1100], text[4096], tmp[1120];
  stamp_path(dir, sp, sizeof sp);
  int len = stamp_text(path, version, text, sizeof text);
  if (len <= 0 || (size_t)len >= sizeof text) return;
  snprintf(tmp, sizeof tmp, "%s.XXXXXX", sp);
  int fd = mkstemp(tmp);
  if (fd < 0) return;
  int err = rt_cache_write_fd(fd, text, (size_t)len);
  if (close(fd) != 0 && !err) err = errno;
  if (!err) chmod(tmp, 0644);
  if (err || rename(tmp, sp) != 0) unlink(tmp);
}

/* The version the newest stamp in dir records, true or not, else 0. */
static int newest_stamp_version(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int version = 0;
  struct timespec newest = {0, 0};
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    size_t n = strlen(e->d_name);
    if (strncmp(e->d_name, "nvrtc-", 6) != 0 || n < 9 || strcmp(e->d_name + n - 3, ".id") != 0) continue;
    char path[1100];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat st;
    void *data = NULL;
    size_t size = 0;
    if (stat(path, &st) != 0 || rt_read_file(path, &data, &size) != 0) continue;
    char buf[4096];
    size_t len = size < sizeof buf - 1 ? size : sizeof buf - 1;
    memcpy(buf, data, len);
    buf[len] = '\0';
    free(data);
    const char *v = strstr(buf, "\nversion ");
    long value = v ? strtol(v + 9, NULL, 10) : 0;
    bool newer = st.st_mtim.tv_sec > newest.tv_sec ||
                 (st.st_mtim.tv_sec == newest.tv_sec && st.st_mtim.tv_nsec > newest.tv_nsec);
    if (strncmp(buf, RT_NVRTC_STAMP_MAGIC "\n", sizeof RT_NVRTC_STAMP_MAGIC) == 0 && value > 0 &&
        value < 1000000 && (version == 0 || newer)) {
      version = (int)value;
      newest = st.st_mtim;
    }
  }
  closedir(d);
  return version;
}

int rt_gpu_nvrtc_version(RtCuda *cu, const char *dir) {
  if (rt_cuda_nvrtc_loaded(cu)) return rt_cuda_nvrtc_version(cu);
  int v = dir ? stamp_version(dir) : 0;
  if (v > 0) return v;
  if (!rt_cuda_nvrtc_load(cu)) {
    /* No libnvrtc here at all: a cache filled elsewhere (tilec --emit=cubin
     * --cache-dir on a build machine) still serves its cubins, under the
     * version of the NVRTC that built them. Nothing can be rebuilt anyway. */
    return dir ? newest_stamp_version(dir) : 0;
  }
  rt_gpu_nvrtc_stamp(cu, dir);
  return rt_cuda_nvrtc_version(cu);
}
