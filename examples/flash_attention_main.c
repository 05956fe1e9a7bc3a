/* flash_attention_main.c - the flagship end to end: load
 * examples/flash_attention.tile through libtilert (compiled for the GPU when
 * there is one, else for the CPU), run it on random inputs, and check the
 * result against a double-precision reference softmax(Q K^T / sqrt(dim)) V.
 *
 *   flash_attention [--batch N] [--heads N] [--seq-len N] [--dim N] [--causal]
 *                   [--dtype f16|bf16] [--device auto|cpu|cuda] [--iters N]
 *                   [--tile PATH]
 *
 * dim, is_causal and dtype are bound at compile time (-D); batch, heads and
 * seq_len stay dynamic, so one compiled kernel serves every length. On the GPU
 * the output is also compared with the CPU backend's on the same inputs.
 * Exit status: 0 correct, 1 wrong result or runtime error, 2 bad usage. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host_util.h"
#include "tilert.h"

/* Error bound, relative to max |ref|. The inputs are exactly representable
 * (the reference reads the rounded values), S = Q K^T and the softmax run in
 * f32, so the error comes from two roundings to the input dtype: P before the
 * P V gemm and the output itself, each at most u = unit roundoff (2^-11 f16,
 * 2^-8 bf16) relative. The rounding errors of P are independent and average
 * out over the keys, so the error is about u * max|ref| (measured: 3e-4..5e-4
 * for f16, 2.5e-3..3e-3 for bf16). The bounds are 10u (f16) and 5u (bf16):
 * margin enough, and tight enough to catch an unmasked tail key block (one
 * padded key in 64 already shifts every output by ~1.6%). */
static double attention_bound(DLDataType t) {
  return t.code == kDLBfloat ? 2e-2 : 5e-3;
}

#define USAGE                                                                              \
  "[--batch N] [--heads N] [--seq-len N] [--dim N] [--causal]\n"                           \
  "          [--dtype f16|bf16] [--device auto|cpu|cuda] [--iters N] [--tile PATH]\n"     \
  "Runs examples/flash_attention.tile on random inputs and checks it against a\n"          \
  "double-precision reference. $TILEC_SEED fixes the random seed;\n"                      \
  "$TILEC_EXAMPLES_DIR says where the .tile files are (default: the source tree)."

typedef struct Problem {
  long batch, heads, seq_len, dim;
  bool causal;
  DLDataType dtype;
  const char *dtype_name;
  const char *tile;
} Problem;

/* Loads the module for `device`, runs it once on (q, k, v) into o (poisoned
 * first). Returns false (message printed) on any runtime error. *ms gets the
 * time of the launch, *load_ms the compile/load time. */
static bool run_on(TilertContext *ctx, const Problem *p, HostTensor *q, HostTensor *k,
                   HostTensor *v, HostTensor *o, long iters, double *load_ms, double *ms) {
  char dim_s[32];
  snprintf(dim_s, sizeof dim_s, "%ld", p->dim);
  TilecDefine defs[] = {
      {"dim", dim_s}, {"is_causal", p->causal ? "true" : "false"}, {"dtype", p->dtype_name}};
  TilertModule *mod = NULL;
  double t0 = host_now_ms();
  TilertKernel *kern = host_load_kernel(ctx, p->tile, defs, 3, "flash_attention", &mod);
  if (!kern) return false;
  *load_ms = host_now_ms() - t0;
  if (tilert_module_from_cache(mod)) printf("  (kernel binary from the disk cache)\n");

  /* scale = 1/sqrt(dim) * log2(e): the kernel works in base 2 (exp2). */
  double scale = 1.0 / sqrt((double)p->dim) * 1.4426950408889634;
  TilertArg args[] = {tilert_arg_tensor(&q->dl), tilert_arg_tensor(&k->dl),
                      tilert_arg_tensor(&v->dl), tilert_arg_tensor(&o->dl),
                      tilert_arg_f32(scale)};
  host_tensor_poison(o);
  HostTensor *tensors[] = {q, k, v, o};
  bool ok = host_launch_timed(ctx, kern, args, 5, tensors, 4, o, iters, ms);
  tilert_module_destroy(mod);
  return ok;
}

int main(int argc, char **argv) {
  Problem p = {1, 4, 1000, 64, false, {kDLFloat, 16, 1}, "f16",
               NULL};
  const char *device_name = "auto";
  long iters = 0; /* 0: 1 on the CPU, 20 on the GPU */
  const HostOption opts[] = {
      {"--causal", HOST_OPT_FLAG, &p.causal},
      {"--batch", HOST_OPT_LONG, &p.batch, 1, 1 << 20},
      {"--heads", HOST_OPT_LONG, &p.heads, 1, 1 << 20},
      {"--seq-len", HOST_OPT_LONG, &p.seq_len, 1, 1 << 24},
      {"--dim", HOST_OPT_LONG, &p.dim, 1, 1024},
      {"--iters", HOST_OPT_LONG, &iters, 1, 100000},
      {"--tile", HOST_OPT_TEXT, &p.tile},
      {"--dtype", HOST_OPT_CHOICE, &p.dtype_name, .choices = "f16|bf16"},
  };
  int st = host_parse_options(argc, argv, USAGE, opts, HOST_NOPTS(opts), &device_name);
  if (st >= 0) return st;
  host_dtype_parse(p.dtype_name, &p.dtype);

  if (!p.tile) p.tile = host_example_path("flash_attention.tile");
  TilertConfig cfg = {0};
  TilertContext *ctx = host_context_open(device_name, &cfg);
  if (!ctx) return 1;
  TilertDevice dev = tilert_context_device(ctx);
  if (iters == 0) iters = dev == TILERT_DEVICE_CUDA ? 20 : 1;

  uint64_t seed = host_seed();
  printf("flash_attention: batch %ld, heads %ld, seq_len %ld, dim %ld, %s, %s\n", p.batch,
         p.heads, p.seq_len, p.dim, p.causal ? "causal" : "non-causal", p.dtype_name);
  printf("  device: %s", dev == TILERT_DEVICE_CUDA ? "cuda" : "cpu");
  const char *note = tilert_context_device_note(ctx);
  if (dev != TILERT_DEVICE_CUDA && note && *note) printf(" (%s)", note);
  printf("\n  seed: %llu (set TILEC_SEED to reproduce)\n", (unsigned long long)seed);

  int64_t shape[4] = {p.batch, p.seq_len, p.heads, p.dim};
  HostTensor q, k, v, o;
  memset(&q, 0, sizeof q), memset(&k, 0, sizeof k), memset(&v, 0, sizeof v), memset(&o, 0, sizeof o);
  if (!host_tensor_init(&q, p.dtype, 4, shape, ctx) || !host_tensor_init(&k, p.dtype, 4, shape, ctx) ||
      !host_tensor_init(&v, p.dtype, 4, shape, ctx) || !host_tensor_init(&o, p.dtype, 4, shape, ctx)) {
    fprintf(stderr, "error: out of memory\n");
    return 1;
  }
  HostRng rng;
  host_rng_init(&rng, seed);
  host_tensor_fill_uniform(&q, &rng, -1, 1);
  host_tensor_fill_uniform(&k, &rng, -1, 1);
  host_tensor_fill_uniform(&v, &rng, -1, 1);

  int status = 0;
  double load_ms = 0, ms = 0;
  if (!run_on(ctx, &p, &q, &k, &v, &o, iters, &load_ms, &ms)) {
    status = 1;
    goto done;
  }

  double *ref = malloc(o.numel * sizeof *ref);
  host_ref_attention(&q, &k, &v, p.causal, 1.0 / sqrt((double)p.dim), ref);
  HostError e = host_compare(&o, ref);
  free(ref);
  double bound = attention_bound(p.dtype);
  double flops = 4.0 * p.batch * p.heads * (double)p.seq_len * p.seq_len * p.dim *
                 (p.causal ? 0.5 : 1.0);
  printf("  load (compile or cache): %.1f ms\n", load_ms);
  printf("  time: %.3f ms (best of %ld), %.3f TFLOP/s\n", ms, iters, flops / (ms * 1e9));
  printf("  max abs error: %.3e\n", e.max_abs);
  printf("  max rel error: %.3e (elementwise), %.3e relative to max|ref| = %.3e (bound %.1e)\n",
         e.max_rel, e.rel_to_max, e.max_ref, bound);
  if (!host_error_ok(&e, bound)) {
    fprintf(stderr, "FAILED: %zu non-finite outputs, error %.3e > %.1e (worst at element %zu)\n",
            e.nonfinite, e.rel_to_max, bound, e.worst);
    status = 1;
  }

  /* Differential check: the GPU result against the C backend on the same
   * inputs. Both round P and the output to the input dtype, but in different
   * orders of summation, so the bound is the same as against the reference. */
  if (dev == TILERT_DEVICE_CUDA) {
    TilertConfig cpu_cfg = cfg;
    cpu_cfg.device = TILERT_DEVICE_CPU;
    TilertContext *cpu = NULL;
    HostTensor qc, kc, vc, oc;
    memset(&qc, 0, sizeof qc), memset(&kc, 0, sizeof kc), memset(&vc, 0, sizeof vc), memset(&oc, 0, sizeof oc);
    bool ok = tilert_context_create(&cpu_cfg, &cpu) == TILERT_OK &&
              host_tensor_init(&qc, p.dtype, 4, shape, NULL) &&
              host_tensor_init(&kc, p.dtype, 4, shape, NULL) &&
              host_tensor_init(&vc, p.dtype, 4, shape, NULL) &&
              host_tensor_init(&oc, p.dtype, 4, shape, NULL);
    if (ok) {
      memcpy(qc.host, q.host, q.nbytes);
      memcpy(kc.host, k.host, k.nbytes);
      memcpy(vc.host, v.host, v.nbytes);
      double cpu_load = 0, cpu_ms = 0;
      ok = run_on(cpu, &p, &qc, &kc, &vc, &oc, 1, &cpu_load, &cpu_ms);
      if (ok) {
        HostError d = host_compare_tensors(&o, &oc);
        printf("  cuda vs cpu backend: max abs diff %.3e, %.3e relative (cpu took %.1f ms)\n",
               d.max_abs, d.rel_to_max, cpu_ms);
        if (!host_error_ok(&d, bound)) {
          fprintf(stderr, "FAILED: the GPU and CPU backends disagree\n");
          status = 1;
        }
      }
    }
    if (!ok) {
      fprintf(stderr, "error: the CPU comparison run failed%s%s\n", cpu ? ": " : "",
              cpu ? tilert_last_error(cpu) : "");
      status = 1;
    }
    host_tensor_free(&qc), host_tensor_free(&kc), host_tensor_free(&vc), host_tensor_free(&oc);
    tilert_context_destroy(cpu);
  }
  if (status == 0) printf("  OK\n");

done:
  host_tensor_free(&q), host_tensor_free(&k), host_tensor_free(&v), host_tensor_free(&o);
  tilert_context_destroy(ctx);
  return status;
}
