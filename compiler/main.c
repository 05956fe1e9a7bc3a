/* main.c - the tilec command line (contract: shared design architecture.md).
 *
 *   tilec FILE.tile [--emit=cuda|c|ir] [-o PATH] [-D NAME=VALUE]...
 *         [--target=sm_80|sm_90a|cpu] [--dump-ir=DIR] [--print-ir-after=PASS|all]
 *   tilec --list-passes | --version | --help
 *
 * Exit status: 0 success; 1 the input has errors (diagnostics on stderr, no
 * output file written); 2 bad usage. The output file is written to a
 * temporary name and renamed, so it is never left half-written. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "include/tilec.h"

static const char usage[] =
    "usage: tilec FILE.tile [options]\n"
    "  --emit=cuda|c|ir       what to write (default cuda)\n"
    "  -o PATH                output file (default stdout)\n"
    "  -D NAME=VALUE          bind a constant or shape symbol (repeatable)\n"
    "  --target=sm_80|sm_90a|cpu   (default: cpu for --emit=c, sm_80 otherwise)\n"
    "  --dump-ir=DIR          write DIR/NN-<pass>.tir after every pass\n"
    "  --print-ir-after=PASS|all   the same text, to stderr\n"
    "  --list-passes          the pipeline, in order\n"
    "  --version, --help\n"
    "exit status: 0 ok, 1 the input has errors, 2 bad usage\n";

static int bad_usage(const char *fmt, const char *arg) {
  fprintf(stderr, "tilec: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, "\n(see tilec --help)\n");
  return 2;
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  for (;;) {
    if (!buf) abort();
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (n < cap) break;
    cap *= 2;
    buf = realloc(buf, cap);
  }
  bool err = ferror(f);
  if (f != stdin) fclose(f);
  if (err) {
    free(buf);
    return NULL;
  }
  *len = n;
  return buf;
}

static bool write_atomically(const char *path, const char *data, size_t len) {
  size_t n = strlen(path);
  char *tmp = malloc(n + 16);
  if (!tmp) abort();
  snprintf(tmp, n + 16, "%s.tmpXXXXXX", path);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    free(tmp);
    return false;
  }
  bool ok = true;
  for (size_t off = 0; off < len && ok;) {
    ssize_t w = write(fd, data + off, len - off);
    if (w <= 0) ok = false;
    else off += (size_t)w;
  }
  ok = close(fd) == 0 && ok;
  if (ok) ok = rename(tmp, path) == 0;
  if (!ok) unlink(tmp);
  free(tmp);
  return ok;
}

int main(int argc, char **argv) {
  TilecOptions o;
  tilec_options_init(&o);
  o.emit = TILEC_EMIT_CUDA;
  bool target_given = false;
  const char *input = NULL, *output = NULL;
  TilecDefine *defines = calloc((size_t)argc, sizeof *defines);
  if (!defines) abort();
  int ndefines = 0;

  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(usage, stdout);
      free(defines);
      return 0;
    } else if (strcmp(a, "--version") == 0) {
      printf("tilec %s\n", tilec_version());
      free(defines);
      return 0;
    } else if (strcmp(a, "--list-passes") == 0) {
      for (int p = 0; p < tilec_num_passes(); p++)
        printf("%2d  %-18s %-4s %s\n", p + 1, tilec_pass_name(p), tilec_pass_targets(p), tilec_pass_summary(p));
      free(defines);
      return 0;
    } else if (strncmp(a, "--emit=", 7) == 0) {
      const char *v = a + 7;
      if (strcmp(v, "cuda") == 0) o.emit = TILEC_EMIT_CUDA;
      else if (strcmp(v, "c") == 0) o.emit = TILEC_EMIT_C;
      else if (strcmp(v, "ir") == 0) o.emit = TILEC_EMIT_IR;
      else return bad_usage("unknown --emit value '%s' (cuda, c or ir)", v);
    } else if (strncmp(a, "--target=", 9) == 0) {
      const char *v = a + 9;
      target_given = true;
      if (strcmp(v, "sm_80") == 0) o.target = TILEC_TARGET_SM80;
      else if (strcmp(v, "sm_90a") == 0) o.target = TILEC_TARGET_SM90A;
      else if (strcmp(v, "cpu") == 0) o.target = TILEC_TARGET_CPU;
      else return bad_usage("unknown --target '%s' (sm_80, sm_90a or cpu)", v);
    } else if (strncmp(a, "--dump-ir=", 10) == 0) {
      o.dump_dir = a + 10;
      if (!*o.dump_dir) return bad_usage("%s: empty directory", a);
    } else if (strncmp(a, "--print-ir-after=", 17) == 0) {
      o.print_after = a + 17;
    } else if (strcmp(a, "-o") == 0) {
      if (++i >= argc) return bad_usage("%s needs a path", a);
      output = argv[i];
    } else if (strncmp(a, "-D", 2) == 0) {
      const char *def = a[2] ? a + 2 : (++i < argc ? argv[i] : NULL);
      if (!def) return bad_usage("%s needs NAME=VALUE", a);
      const char *eq = strchr(def, '=');
      if (!eq || eq == def || !eq[1]) return bad_usage("-D %s: expected NAME=VALUE", def);
      char *name = strndup(def, (size_t)(eq - def));
      defines[ndefines].name = name;
      defines[ndefines++].value = eq + 1;
    } else if (a[0] == '-' && a[1] != '\0') {
      return bad_usage("unknown option '%s'", a);
    } else if (input) {
      return bad_usage("more than one input file ('%s')", a);
    } else {
      input = a;
    }
  }
  if (!input) return bad_usage("%s", "no input file");
  if (!target_given) o.target = o.emit == TILEC_EMIT_CUDA ? TILEC_TARGET_SM80 : TILEC_TARGET_CPU;

  size_t len = 0;
  char *text = read_file(input, &len);
  if (!text) {
    fprintf(stderr, "tilec: cannot read %s: %s\n", input, strerror(errno));
    return 1;
  }
  o.defines = defines;
  o.ndefines = ndefines;
  o.diag_echo = stderr;
  o.print_stream = stderr;
  TilecResult *r = NULL;
  int rc = tilec_compile(input, text, len, &o, &r);
  if (rc == 0) {
    const char *out = tilec_result_output(r);
    size_t n = tilec_result_output_size(r);
    if (output) {
      if (!write_atomically(output, out, n)) {
        fprintf(stderr, "tilec: cannot write %s: %s\n", output, strerror(errno));
        rc = 1;
      }
    } else if (fwrite(out, 1, n, stdout) != n || fflush(stdout) != 0) {
      fprintf(stderr, "tilec: cannot write to stdout\n");
      rc = 1;
    }
  }
  tilec_result_destroy(r);
  for (int i = 0; i < ndefines; i++) free((char *)defines[i].name);
  free(defines);
  free(text);
  return rc;
}
