/* numerics.h - shared plumbing of the numerics tests: a runtime context with a
 * private, temporary disk cache (so a test never reads or writes ~/.cache and
 * always exercises a real compile), a failure counter, the seed banner, the
 * command-line pieces every test parses (--dtype, --device, --define,
 * --shapes, comma lists) and the gemm check against a double reference.
 * Header-only (static inline) because each test is a single C file. */
#ifndef NUMERICS_H
#define NUMERICS_H

/* setenv, strdup, strtok_r; must precede every system header, so the tests
 * include this file first. */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_util.h"
#include "tilert.h"

/* ctest's SKIP_RETURN_CODE: a GPU test on a machine without a GPU. */
enum { NUM_SKIP = 77 };

static int num_failures;

#define NUM_CHECK(cond, ...)                                     \
  do {                                                           \
    if (!(cond)) {                                               \
      fprintf(stderr, "%s:%d: FAILED: ", __FILE__, __LINE__);    \
      fprintf(stderr, __VA_ARGS__);                              \
      fputc('\n', stderr);                                       \
      num_failures++;                                            \
    }                                                            \
  } while (0)

typedef struct NumEnv {
  TilertContext *ctx;
  TilertDevice device;
  char *cache_dir;
  uint64_t seed;
  HostRng rng;
} NumEnv;

static inline void num_close(NumEnv *env);

/* Creates the context on `device` (CPU or CUDA) with a fresh cache dir.
 * Returns 0, NUM_SKIP when CUDA was asked for and there is no GPU, or 1;
 * on anything but 0 the environment is already closed (return the code). */
static inline int num_open_env(NumEnv *env, TilertDevice device);
static inline int num_open(NumEnv *env, TilertDevice device) {
  int rc = num_open_env(env, device);
  if (rc != 0) num_close(env);
  return rc;
}

static inline int num_open_env(NumEnv *env, TilertDevice device) {
  memset(env, 0, sizeof *env);
  env->cache_dir = host_make_temp_dir("tilec-numerics-cache");
  if (!env->cache_dir) {
    fprintf(stderr, "cannot create a temporary cache directory\n");
    return 1;
  }
  setenv("TILEC_CACHE_DIR", env->cache_dir, 1);
  TilertConfig cfg = {0};
  cfg.device = device;
  cfg.cache_dir = env->cache_dir;
  TilertStatus st = tilert_context_create(&cfg, &env->ctx);
  if (device == TILERT_DEVICE_CUDA && st == TILERT_NO_GPU) {
    printf("SKIP: no usable GPU (%s)\n", env->ctx ? tilert_last_error(env->ctx) : tilert_strerror(st));
    return NUM_SKIP;
  }
  if (st != TILERT_OK) {
    fprintf(stderr, "tilert_context_create: %s: %s\n", tilert_strerror(st),
            env->ctx ? tilert_last_error(env->ctx) : "");
    return 1;
  }
  env->device = tilert_context_device(env->ctx);
  env->seed = host_seed();
  host_rng_init(&env->rng, env->seed);
  printf("seed %llu (rerun with TILEC_SEED=%llu to reproduce), device %s\n",
         (unsigned long long)env->seed, (unsigned long long)env->seed,
         env->device == TILERT_DEVICE_CUDA ? "cuda" : "cpu");
  return 0;
}

static inline void num_close(NumEnv *env) {
  tilert_context_destroy(env->ctx);
  if (env->cache_dir && !host_remove_tree(env->cache_dir))
    fprintf(stderr, "warning: could not remove %s\n", env->cache_dir);
  free(env->cache_dir);
  memset(env, 0, sizeof *env);
}

/* Loads the .tile at `path` with defines; NULL (failure counted) on error. */
static inline TilertModule *num_load_path(NumEnv *env, const char *path, const TilecDefine *defs,
                                          int ndefs) {
  TilertModule *mod = NULL;
  TilertStatus st = tilert_module_load_file(env->ctx, path, defs, ndefs, &mod);
  NUM_CHECK(st == TILERT_OK, "loading %s: %s\n%s", path, tilert_strerror(st),
            tilert_last_error(env->ctx));
  if (st != TILERT_OK) {
    tilert_module_destroy(mod);
    return NULL;
  }
  return mod;
}

/* Loads an example .tile with defines; NULL (failure counted) on error. */
static inline TilertModule *num_load(NumEnv *env, const char *file, const TilecDefine *defs,
                                     int ndefs) {
  return num_load_path(env, host_example_path(file), defs, ndefs); /* honours $TILEC_EXAMPLES_DIR */
}

/* ---- Command-line pieces. Each parser prints what it wants on a bad
 * value and returns false; the caller exits with 2. */

/* --dtype NAME: *dtype and *name (NAME, pointing into argv). */
static inline bool num_arg_dtype(const char *v, DLDataType *dtype, const char **name) {
  if (!host_dtype_parse(v, dtype)) {
    fprintf(stderr, "bad --dtype %s\n", v);
    return false;
  }
  *name = v;
  return true;
}

/* --device cpu|cuda. */
static inline bool num_arg_device(const char *v, TilertDevice *device) {
  if (strcmp(v, "cuda") != 0 && strcmp(v, "cpu") != 0) {
    fprintf(stderr, "bad --device %s (cpu or cuda)\n", v);
    return false;
  }
  *device = strcmp(v, "cuda") == 0 ? TILERT_DEVICE_CUDA : TILERT_DEVICE_CPU;
  return true;
}

/* --define NAME=VALUE, repeated: the names copied, the values in argv. */
enum { NUM_MAX_DEFINES = 8 };
typedef struct NumDefines {
  char names[NUM_MAX_DEFINES][64];
  TilecDefine defs[NUM_MAX_DEFINES];
  int n;
} NumDefines;

static inline bool num_arg_define(const char *v, NumDefines *d) {
  const char *eq = strchr(v, '=');
  if (!eq || eq == v || (size_t)(eq - v) >= sizeof d->names[0] || d->n == NUM_MAX_DEFINES) {
    fprintf(stderr, "bad --define %s (want NAME=VALUE, at most %d)\n", v, NUM_MAX_DEFINES);
    return false;
  }
  snprintf(d->names[d->n], sizeof d->names[0], "%.*s", (int)(eq - v), v);
  d->defs[d->n] = (TilecDefine){d->names[d->n], eq + 1};
  d->n++;
  return true;
}

/* Appends the defines to defs[*n...]. */
static inline void num_add_defines(const NumDefines *d, TilecDefine *defs, int *n) {
  for (int i = 0; i < d->n; i++) defs[(*n)++] = d->defs[i];
}

/* ", -D NAME=VALUE" for each define (the banners' tail). */
static inline void num_print_defines(const NumDefines *d) {
  for (int i = 0; i < d->n; i++) printf(", -D %s=%s", d->defs[i].name, d->defs[i].value);
}

/* The options most tests share: --dtype, --define, --device (a NULL
 * destination: not an option of this test). True when argv[*i] was one of
 * them (its value consumed); a bad value exits with status 2, as
 * host_parse_long does. */
static inline bool num_arg_common(int argc, char **argv, int *i, DLDataType *dtype, const char **dtype_name,
                                  NumDefines *defines, TilertDevice *device) {
  const char *v;
  bool ok = true;
  if (dtype && host_opt(argc, argv, i, "--dtype", &v)) ok = num_arg_dtype(v, dtype, dtype_name);
  else if (defines && host_opt(argc, argv, i, "--define", &v)) ok = num_arg_define(v, defines);
  else if (device && host_opt(argc, argv, i, "--device", &v)) ok = num_arg_device(v, device);
  else return false;
  if (!ok) exit(2);
  return true;
}

/* The arguments of a test that runs one .tile file: --file (required) and
 * --device. 0 when they parse, else 2 after a message (usage: the line to
 * print when --file is missing). */
static inline int num_args_file_device(int argc, char **argv, const char *usage, const char **file,
                                       TilertDevice *device) {
  *file = NULL;
  *device = TILERT_DEVICE_CPU;
  for (int i = 1; i < argc; i++) {
    const char *v;
    if (host_opt(argc, argv, &i, "--file", &v)) {
      *file = v;
    } else if (!num_arg_common(argc, argv, &i, NULL, NULL, NULL, device)) {
      fprintf(stderr, "unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  if (!*file) {
    fprintf(stderr, "usage: %s\n", usage);
    return 2;
  }
  return 0;
}

/* A comma list of at most 16 integers in [1, max] (host_parse_long exits
 * with 2 on garbage); replaces *n entries of out. */
static inline void num_arg_list(const char *name, const char *v, long *out, int *n, long max) {
  *n = 0;
  char *copy = strdup(v), *save = NULL;
  for (char *tok = strtok_r(copy, ",", &save); tok && *n < 16; tok = strtok_r(NULL, ",", &save))
    out[(*n)++] = host_parse_long(name, tok, 1, max);
  free(copy);
}

/* The attention examples' defines: dim, dtype, is_causal, then the
 * --define ones; dim_s holds dim's text. Returns how many. */
static inline int num_attention_defines(TilecDefine *defs, char dim_s[32], long dim, const char *dtype_name,
                                        bool causal, const NumDefines *extra) {
  int n = 0;
  snprintf(dim_s, 32, "%ld", dim);
  defs[n++] = (TilecDefine){"dim", dim_s};
  defs[n++] = (TilecDefine){"dtype", dtype_name};
  defs[n++] = (TilecDefine){"is_causal", causal ? "true" : "false"};
  num_add_defines(extra, defs, &n);
  return n;
}

/* A gemm's sizes: C [m, n] = A [m, k] @ B [k, n]. */
typedef struct NumShape {
  long m, n, k;
} NumShape;

/* --shapes MxNxK,...: at most 16, replacing *n entries of shapes. */
static inline bool num_arg_shapes(const char *v, NumShape *shapes, int *n) {
  const char *p = v;
  int used = 0;
  *n = 0;
  while (*n < 16 && sscanf(p, "%ldx%ldx%ld%n", &shapes[*n].m, &shapes[*n].n, &shapes[*n].k, &used) == 3) {
    (*n)++;
    p += used;
    if (*p != ',') break;
    p++;
  }
  if (*p != '\0' || *n == 0) {
    fprintf(stderr, "bad --shapes %s (want MxNxK,...)\n", v);
    return false;
  }
  return true;
}

/* --blocks BM,BN,BK: the three values as define strings. */
typedef char NumBlocks[3][16];
static inline bool num_arg_blocks(const char *v, NumBlocks blocks) {
  if (sscanf(v, "%15[0-9],%15[0-9],%15[0-9]", blocks[0], blocks[1], blocks[2]) != 3) {
    fprintf(stderr, "bad --blocks %s (want BM,BN,BK)\n", v);
    return false;
  }
  return true;
}

/* "BM,BN,BK" as given, each part "default" where --blocks was not. */
static inline void num_print_blocks(const NumBlocks blocks) {
  printf("%s,%s,%s", blocks[0][0] ? blocks[0] : "default", blocks[1][0] ? blocks[1] : "default",
         blocks[2][0] ? blocks[2] : "default");
}

/* Appends block_M, block_N, block_K (those given) to defs[*n...]. */
static inline void num_add_blocks(const NumBlocks blocks, TilecDefine *defs, int *n) {
  static const char *const names[3] = {"block_M", "block_N", "block_K"};
  for (int b = 0; b < 3; b++)
    if (blocks[b][0]) defs[(*n)++] = (TilecDefine){names[b], blocks[b]};
}

/* Appends M, N, K bound to s (--bind) to defs[*n...]; the values live in dims. */
static inline void num_add_dims(NumShape s, char dims[3][32], TilecDefine *defs, int *n) {
  snprintf(dims[0], sizeof dims[0], "%ld", s.m);
  snprintf(dims[1], sizeof dims[1], "%ld", s.n);
  snprintf(dims[2], sizeof dims[2], "%ld", s.k);
  defs[(*n)++] = (TilecDefine){"M", dims[0]};
  defs[(*n)++] = (TilecDefine){"N", dims[1]};
  defs[(*n)++] = (TilecDefine){"K", dims[2]};
}

/* C (downloaded) against A @ B in double: prints "  LABEL: max abs ...,
 * ... ms" and counts a failure past bound (relative to max|ref|). */
static inline void num_check_gemm(const char *label, const HostTensor *a, const HostTensor *b,
                                  const HostTensor *c, double bound, double ms) {
  double *ref = malloc(c->numel * sizeof *ref);
  host_ref_gemm(a, b, ref);
  HostError e = host_compare(c, ref);
  size_t n = (size_t)c->shape[1];
  printf("  %s: max abs %.3e, rel to max|ref| %.3e (bound %.1e), %zu non-finite, %.1f ms\n", label, e.max_abs,
         e.rel_to_max, bound, e.nonfinite, ms);
  NUM_CHECK(host_error_ok(&e, bound), "%s: error %.3e (bound %.1e), %zu non-finite; worst C[%zu][%zu]: out %g ref %g",
            label, e.rel_to_max, bound, e.nonfinite, e.worst / n, e.worst % n, host_tensor_get(c, e.worst),
            ref[e.worst]);
  free(ref);
}

static inline int num_result(const char *name) {
  if (num_failures) {
    fprintf(stderr, "%s: %d check(s) failed\n", name, num_failures);
    return 1;
  }
  printf("%s: all checks passed\n", name);
  return 0;
}

#endif
