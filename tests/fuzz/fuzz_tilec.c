/* fuzz_tilec.c - libFuzzer entry point: arbitrary bytes through the whole
 * compiler (lexer, parser, sema, every pass, the C, CUDA and IR emitters).
 *
 * How it works: the first FUZZ_HEADER bytes of the input are not source text
 * but choices, so one corpus file also fixes the target and a set of -D
 * bindings and the specialization paths get fuzzed too:
 *
 *   byte 0       mode: (b % 5) -> emit C/cpu, CUDA/sm_80, CUDA/sm_90a,
 *                IR/cpu, IR/sm_90a; (b / 5) odd: cluster_multicast on;
 *                (b / 10) odd: fast_division on; (b / 20) odd: stream_k on
 *   bytes 1..2   a 16-bit mask over fuzz_names[]: which names get a -D
 *   bytes 3..10  16 nibbles: nibble i picks the value of fuzz_names[i] from
 *                the value table of its kind (integer, bool, dtype)
 *   bytes 11..   the .tile text, any bytes (NULs and invalid UTF-8 included)
 *
 * A selected name is bound only if its spelling occurs in the text: an
 * unknown -D name is a usage error (exit 2) found before sema, and would turn
 * most runs into no-ops. Inputs shorter than the header are compiled as text
 * with mode 0 and no bindings.
 *
 * Besides "no crash, no sanitizer report", each run checks the library's
 * contract (include/tilec.h): the status is 0, 1 or 2; a failure always
 * carries a diagnostic; a success carries no error and a non-empty output
 * whose size matches its text. A broken contract aborts, so the fuzzer keeps
 * the input.
 *
 * The same function is called by replay.c (plain main(), any C compiler) for
 * the ctest fuzz/replay over corpus/ and regressions/. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tilec.h"

enum { FUZZ_HEADER = 11 };

typedef enum FuzzKind { FUZZ_INT, FUZZ_BOOL, FUZZ_DTYPE } FuzzKind;

/* The constants and shape symbols used by examples/ and tests/: block sizes,
 * dims, flags and dtypes. Sixteen, one per mask bit. */
static const struct {
  const char *name;
  FuzzKind kind;
} fuzz_names[16] = {
    {"dim", FUZZ_INT},        {"seq_len", FUZZ_INT},   {"block_M", FUZZ_INT},
    {"block_N", FUZZ_INT},    {"is_causal", FUZZ_BOOL}, {"dtype", FUZZ_DTYPE},
    {"num_stages", FUZZ_INT}, {"threads", FUZZ_INT},   {"block_K", FUZZ_INT},
    {"M", FUZZ_INT},          {"N", FUZZ_INT},         {"K", FUZZ_INT},
    {"batch", FUZZ_INT},      {"heads", FUZZ_INT},     {"panel_size", FUZZ_INT},
    {"x", FUZZ_INT},
};

/* Edge values first: zero, negative, odd, powers of two, overflow bait, and
 * values of the wrong kind. */
static const char *const fuzz_int_values[16] = {
    "0", "1", "-1", "3", "7", "16", "32", "64",
    "128", "256", "1000", "65536", "2147483648", "9223372036854775807", "1.5", "true",
};
static const char *const fuzz_bool_values[16] = {
    "true", "false", "0", "1", "2", "-1", "true", "false",
    "f16", "TRUE", "0.0", "1e9", "true", "false", "true", "false",
};
static const char *const fuzz_dtype_values[16] = {
    "f16", "bf16", "f32", "f64", "i32", "i64", "bool", "f16",
    "bf16", "f32", "1", "true", "x", "f8", "f16", "f32",
};

static const char *fuzz_value(FuzzKind kind, unsigned nibble) {
  switch (kind) {
  case FUZZ_BOOL: return fuzz_bool_values[nibble & 15];
  case FUZZ_DTYPE: return fuzz_dtype_values[nibble & 15];
  default: return fuzz_int_values[nibble & 15];
  }
}

static int fuzz_is_word_byte(uint8_t c) {
  return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Whole-word occurrence of `word` in the (non NUL-terminated) text. */
static int fuzz_mentions(const uint8_t *text, size_t len, const char *word) {
  size_t w = strlen(word);
  for (size_t i = 0; i + w <= len; i++) {
    if (memcmp(text + i, word, w) != 0) continue;
    if ((i == 0 || !fuzz_is_word_byte(text[i - 1])) && (i + w == len || !fuzz_is_word_byte(text[i + w])))
      return 1;
  }
  return 0;
}

static void fuzz_fail(const char *what, int rc, const TilecResult *r) {
  fprintf(stderr, "fuzz_tilec: contract broken: %s (status %d)\ndiagnostics:\n%s\n", what, rc,
          tilec_result_diagnostics(r));
  abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  TilecOptions o;
  tilec_options_init(&o);
  TilecDefine defines[16];
  int ndefines = 0;
  unsigned mode = 0;
  const uint8_t *text = data;
  size_t len = size;

  if (size >= FUZZ_HEADER) {
    mode = data[0] % 5u;
    o.cluster_multicast = (data[0] / 5u) % 2u == 1u;
    o.fast_division = (data[0] / 10u) % 2u == 1u;
    o.stream_k = (data[0] / 20u) % 2u == 1u;
    unsigned mask = (unsigned)data[1] | (unsigned)data[2] << 8;
    text = data + FUZZ_HEADER;
    len = size - FUZZ_HEADER;
    for (int i = 0; i < 16; i++) {
      if (!(mask >> i & 1u) || !fuzz_mentions(text, len, fuzz_names[i].name)) continue;
      unsigned nibble = (unsigned)data[3 + i / 2] >> (4 * (i % 2)) & 15u;
      defines[ndefines].name = fuzz_names[i].name;
      defines[ndefines].value = fuzz_value(fuzz_names[i].kind, nibble);
      ndefines++;
    }
  }
  static const struct {
    TilecEmit emit;
    TilecTarget target;
  } modes[5] = {
      {TILEC_EMIT_C, TILEC_TARGET_CPU},      {TILEC_EMIT_CUDA, TILEC_TARGET_SM80},
      {TILEC_EMIT_CUDA, TILEC_TARGET_SM90A}, {TILEC_EMIT_IR, TILEC_TARGET_CPU},
      {TILEC_EMIT_IR, TILEC_TARGET_SM90A},
  };
  o.emit = modes[mode].emit;
  o.target = modes[mode].target;
  o.defines = defines;
  o.ndefines = ndefines;

  /* A private copy of exactly `len` bytes, so ASan sees any read past the
   * end (libFuzzer's buffer is exact too; replay's is not). */
  char *copy = malloc(len ? len : 1);
  if (!copy) abort();
  if (len) memcpy(copy, text, len);

  TilecResult *r = NULL;
  int rc = tilec_compile("fuzz.tile", copy, len, &o, &r);
  if (!r) fuzz_fail("no result object", rc, r);
  const char *diags = tilec_result_diagnostics(r);
  if (rc < 0 || rc > 2) fuzz_fail("status outside 0..2", rc, r);
  if (rc != 0 && (!diags || !strstr(diags, "error"))) fuzz_fail("failure without an error diagnostic", rc, r);
  if (rc == 0) {
    if (diags && strstr(diags, "error:")) fuzz_fail("success with an error diagnostic", rc, r);
    const char *out = tilec_result_output(r);
    size_t n = tilec_result_output_size(r);
    if (n == 0 || !out || strlen(out) != n) fuzz_fail("empty output or size mismatch", rc, r);
    /* Every kernel's signature must be readable (the runtime walks it). */
    for (int k = 0; k < tilec_result_num_kernels(r); k++) {
      const TilecKernelInfo *ki = tilec_result_kernel(r, k);
      if (!ki || !ki->name || ki->nparams < 0 || ki->ndynamic < 0) fuzz_fail("bad kernel info", rc, r);
      for (int p = 0; p < ki->nparams; p++)
        if (ki->params[p].rank < 0 || ki->params[p].rank > TILEC_MAX_RANK) fuzz_fail("bad rank", rc, r);
      int64_t dyn[16] = {0}, grid[3];
      for (int d = 0; d < ki->ndynamic && d < 16; d++) dyn[d] = 1 + d;
      if (ki->ndynamic <= 16) tilec_result_grid(r, k, dyn, grid);
    }
  }
  tilec_result_destroy(r);
  free(copy);
  return 0;
}
