/* numerics.h - shared plumbing of the numerics tests: a runtime context with a
 * private, temporary disk cache (so a test never reads or writes ~/.cache and
 * always exercises a real compile), a failure counter, and the seed banner.
 * Header-only (static inline) because each test is a single C file. */
#ifndef NUMERICS_H
#define NUMERICS_H

/* setenv, strdup, strtok_r; must precede every system header, so the tests
 * include this file first. */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700
#endif

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

/* Creates the context on `device` (CPU or CUDA) with a fresh cache dir.
 * Returns 0, NUM_SKIP when CUDA was asked for and there is no GPU, or 1. */
static inline int num_open(NumEnv *env, TilertDevice device) {
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

/* Loads an example .tile with defines; NULL (failure counted) on error. */
static inline TilertModule *num_load(NumEnv *env, const char *file, const TilecDefine *defs,
                                     int ndefs) {
  const char *path = host_example_path(file); /* honours $TILEC_EXAMPLES_DIR */
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

static inline int num_result(const char *name) {
  if (num_failures) {
    fprintf(stderr, "%s: %d check(s) failed\n", name, num_failures);
    return 1;
  }
  printf("%s: all checks passed\n", name);
  return 0;
}

#endif
