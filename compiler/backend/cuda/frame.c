/* frame.c - the CUDA backend's frame: GPU-pass IR in, CUDA C++ out.
 *
 * Input: the IR after insert-barriers. Layouts are decided (fragments spread
 * over threads, swizzled shared tiles, pipeline stages, barriers), so the
 * backend only translates. This file writes the module (one include of our
 * device headers: tilec_wgmma.cuh where a kernel uses wgmma, else
 * tilec_tile.cuh) and each kernel's frame: `extern "C" __global__ void
 * tilec_<name>(tensors..., scalars..., dynamic symbols as long long)`, the
 * thread/warp/lane indices, the block indices (rasterized in panels when
 * use_swizzle asked for it) and the allocations (shared buffers carved out of
 * one dynamic shared-memory array (its base 1 KB-aligned) at 128-byte
 * aligned offsets, 1 KB in kernels with wgmma; fragments as per-thread
 * register arrays). The statement
 * dispatcher (cuda_emit_stmt) writes the structured statements itself and
 * hands tile ops to fragment.c, copy.c and gemm.c (cuda_emit.h lists them).
 * Anything the GPU path cannot map is reported with the statement's location. */
#include <stdarg.h>
#include <string.h>

#include "cuda_emit.h"

void cuda_fail(Cuda *C, SrcLoc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void cuda_fail(Cuda *C, SrcLoc loc, const char *fmt, ...) {
  if (C->failed) return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  diag_error(C->diag, loc, "CUDA backend: %s", msg);
  C->failed = true;
}

void cuda_indent(Cuda *C, int depth) { sb_indent(C->out, depth + 1); }

void cuda_open_unrolled_for(Cuda *C, int depth, const char *var, int begin, int end, int step, const char *comment) {
  cuda_indent(C, depth);
  sb_puts(C->out, "#pragma unroll\n");
  cuda_indent(C, depth);
  if (step == 1) sb_printf(C->out, "for (int %s = %d; %s < %d; ++%s) {", var, begin, var, end, var);
  else sb_printf(C->out, "for (int %s = %d; %s < %d; %s += %d) {", var, begin, var, end, var, step);
  sb_printf(C->out, "%s%s\n", comment ? "  // " : "", comment ? comment : "");
}

const char *cuda_storage_type(DType t) {
  switch (t) {
  case DTYPE_BOOL: return "bool";
  case DTYPE_I32: return "int";
  case DTYPE_I64: return "long long";
  case DTYPE_F16: return "tc_half";
  case DTYPE_BF16: return "tc_bf16";
  case DTYPE_F32: return "float";
  case DTYPE_F64: return "double";
  case DTYPE_I8: return "signed char";
  case DTYPE_U8: return "unsigned char";
  case DTYPE_I16: return "short";
  case DTYPE_U16: return "unsigned short";
  case DTYPE_U32: return "unsigned int";
  case DTYPE_F8E4M3: return "tc_fp8_e4m3";
  case DTYPE_F8E5M2: return "tc_fp8_e5m2";
  default: return "float";
  }
}

bool cuda_is_16bit(DType t) { return t == DTYPE_F16 || t == DTYPE_BF16; }
bool cuda_is_low_float(DType t) { return dtype_is_low_float(t); }

const char *cuda_to_f32(DType t) {
  switch (t) {
  case DTYPE_F16: return "tc_f16_to_f32";
  case DTYPE_BF16: return "tc_bf16_to_f32";
  case DTYPE_F8E4M3: return "tc_e4m3_to_f32";
  default: return "tc_e5m2_to_f32";
  }
}

const char *cuda_from_f32(DType t) {
  switch (t) {
  case DTYPE_F16: return "tc_f32_to_f16";
  case DTYPE_BF16: return "tc_f32_to_bf16";
  case DTYPE_F8E4M3: return "tc_f32_to_e4m3";
  default: return "tc_f32_to_e5m2";
  }
}

/* The type arithmetic on a value of t happens in. */
const char *cuda_value_type(DType t) {
  return dtype_is_low_float(t) ? "float" : cuda_storage_type(t);
}

void cuda_note_wgmma_n(Cuda *C, int n) {
  /* N is a multiple of 16 up to 256 wherever wgmma was chosen (infer-layout);
   * anything else is left to the header's static_assert. */
  if (n >= 16 && n <= 256 && n % 16 == 0) C->wgmma_ns |= 1u << (n / 16 - 1);
}

int64_t cuda_const(const IrExpr *e) {
  int64_t v = 0;
  ir_expr_is_int_const(e, &v);
  return v;
}

static int elems_of(const IrBuffer *b) {
  int64_t n = 1;
  for (int d = 0; d < b->rank; d++) n *= cuda_const(b->shape[d]);
  return (int)n;
}

/* ---- statements --------------------------------------------------------------- */

static void emit_fp8_pair_loop(Cuda *C, const IrStmt *s, const IrStmt *wait, int depth);

/* The drain (WGMMA_WAIT) of the in-flight FP8 gemm g right after loop s,
 * or NULL: emit_fp8_pair_loop then writes the loop. */
static const IrStmt *fp8_pair_drain(const IrStmt *s, const IrStmt *next) {
  if (s->kind != IR_STMT_FOR || (s->u.for_.kind != IR_FOR_SERIAL && s->u.for_.kind != IR_FOR_PIPELINED) || !next ||
      next->kind != IR_STMT_WGMMA_WAIT || next->u.wgmma_wait.pending || next->u.wgmma_wait.npinned)
    return NULL;
  const IrStmt *g = cuda_fp8_alternating(s->u.for_.body);
  return g && g->u.gemm.c.buf == next->u.wgmma_wait.acc ? next : NULL;
}

void cuda_emit_seq(Cuda *C, const IrStmt *seq, int depth) {
  for (int i = 0; i < seq->u.seq.n && !C->failed; i++) {
    const IrStmt *s = seq->u.seq.items[i];
    const IrStmt *drain = fp8_pair_drain(s, i + 1 < seq->u.seq.n ? seq->u.seq.items[i + 1] : NULL);
    if (drain) {
      emit_fp8_pair_loop(C, s, drain, depth);
      i++;
    } else {
      cuda_emit_stmt(C, s, depth);
    }
  }
}

static void emit_alloc(Cuda *C, const IrBuffer *b, int depth) {
  const char *t = cuda_storage_type(b->dtype);
  switch (b->scope) {
  case IR_SCOPE_SHARED: {
    if (b->alias_of) {
      cuda_indent(C, depth);
      sb_printf(C->out, "%s *const %s = (%s *)%s;  // reuses %s (dead by now)\n", t, b->name, t, b->alias_of->name,
                b->alias_of->name);
      return;
    }
    /* Data buffers from offset 0, mbarriers in the area after them (ir_shared_bytes). */
    int *offset = b->is_mbarrier ? &C->mbar_offset : &C->smem_offset;
    cuda_indent(C, depth);
    sb_printf(C->out, "%s *const %s = (%s *)(tc_smem + %d);  // [", t, b->name, t, *offset);
    for (int d = 0; d < b->rank; d++) sb_printf(C->out, "%s%lld", d ? ", " : "", (long long)cuda_const(b->shape[d]));
    if (b->layout.panel_cols && !b->is_mbarrier)
      sb_printf(C->out, "] %d-column panels\n", b->layout.panel_cols);
    else
      sb_printf(C->out, "] %s\n",
                b->is_mbarrier                         ? "mbarriers"
                : b->layout.kind == IR_LAYOUT_SWIZZLED ? "swizzled"
                                                       : "row-major");
    *offset += (int)ir_buffer_bytes_aligned(b);
    if (b->is_mbarrier) cuda_emit_mbarrier_init(C, b, depth);
    return;
  }
  case IR_SCOPE_FRAGMENT: {
    const IrLayout *l = &b->layout;
    if (l->kind != IR_LAYOUT_FRAGMENT) {
      cuda_fail(C, b->loc, "fragment '%s' has no layout (infer-layout did not run)", b->name);
      return;
    }
    cuda_indent(C, depth);
    sb_printf(C->out, "%s %s[%d];  // %s\n", t, b->name, l->rows_local * l->cols_local,
              ir_layout_str(C->m->arena, l));
    if (cuda_fp8_pending(C, b)) {
      cuda_indent(C, depth);
      sb_printf(C->out, "tc_fp8_pending<%d> tc_pend_%s;  // FP8 promotion: the chunk in flight\n", ir_layout_wgmma_n(l),
                b->name);
    }
    return;
  }
  default:
    cuda_indent(C, depth);
    sb_printf(C->out, "%s %s[%d];\n", t, b->name, elems_of(b));
    return;
  }
}


/* A loop whose in-flight FP8 gemm alternates its promotion part
 * (cuda_fp8_alternating), followed by its drain (wait): the gemm can only
 * name a register array it knows at compile time, and a run-time branch on
 * the part made ptxas serialize the wgmmas (C7514). So each trip runs two
 * iterations, the gemm in part 0 then in part 1; an odd last iteration
 * (part 0) follows, and the drain is written on both paths out of it:
 * ptxas also serialized every form tried in which two paths with different
 * wgmma registers in flight merge (a `break` between the two bodies, the
 * drain after the odd iteration's branch, a first iteration peeled before
 * the loop). */
static void emit_fp8_pair_loop(Cuda *C, const IrStmt *s, const IrStmt *wait, int depth) {
  StrBuf *o = C->out;
  const char *v = s->u.for_.var->name, *acc = wait->u.wgmma_wait.acc->name;
  const IrStmt *outer = C->fp8_gemm;
  const int outer_part = C->fp8_part;
  C->fp8_gemm = cuda_fp8_alternating(s->u.for_.body);
  const int n = ir_layout_wgmma_n(&wait->u.wgmma_wait.acc->layout);
  cuda_note_wgmma_n(C, n);
  cuda_indent(C, depth);
  sb_printf(o, "{  // FP8 promotion parts alternate: two iterations per trip, then the drain\n");
  cuda_indent(C, depth + 1);
  sb_printf(o, "long long %s = 0;\n", v);
  /* A trip count nvcc can see (K bound with -D) also made ptxas serialize:
   * it is hidden (tc_opaque_ll). */
  cuda_indent(C, depth + 1);
  sb_puts(o, "const long long tc_fp8_trips = tc_opaque_ll(");
  cuda_emit_expr(C, o, s->u.for_.extent);
  sb_puts(o, ");\n");
  cuda_indent(C, depth + 1);
  sb_printf(o, "for (; %s + 1 < tc_fp8_trips; ++%s) {", v, v);
  if (s->u.for_.kind == IR_FOR_PIPELINED) sb_printf(o, "  // pipelined, %d stages", s->u.for_.num_stages);
  sb_puts(o, "\n");
  for (int part = 0; part < 2; part++) {
    if (part) {
      cuda_indent(C, depth + 2);
      sb_printf(o, "++%s;\n", v);
    }
    C->fp8_part = part;
    cuda_emit_stmt(C, s->u.for_.body, depth + 2);
  }
  cuda_indent(C, depth + 1);
  sb_puts(o, "}\n");
  cuda_indent(C, depth + 1);
  sb_printf(o, "if (%s < tc_fp8_trips) {\n", v);
  C->fp8_part = 0;
  cuda_emit_seq(C, s->u.for_.body, depth + 2);
  C->fp8_gemm = outer;
  C->fp8_part = outer_part;
  cuda_indent(C, depth + 2);
  sb_printf(o, "tc_wgmma_fp8_drain<%d>(%s, tc_pend_%s);\n", n, acc, acc);
  cuda_indent(C, depth + 1);
  sb_puts(o, "} else {\n");
  cuda_indent(C, depth + 2);
  sb_printf(o, "tc_wgmma_fp8_drain<%d>(%s, tc_pend_%s);\n", n, acc, acc);
  cuda_indent(C, depth + 1);
  sb_puts(o, "}\n");
  cuda_indent(C, depth);
  sb_puts(o, "}\n");
}

void cuda_emit_tile_thread_ids(Cuda *C, int depth) {
  cuda_indent(C, depth);
  sb_puts(C->out, "const int tc_tid_tile = tc_opaque_tid(tc_tid);\n");
  cuda_indent(C, depth);
  sb_puts(C->out, "const int tc_tid = tc_tid_tile, tc_warp = tc_tid / 32, tc_lane = tc_tid % 32;\n");
  cuda_indent(C, depth);
  sb_puts(C->out, "(void)tc_warp; (void)tc_lane;\n");
}

void cuda_emit_stmt(Cuda *C, const IrStmt *s, int depth) {
  StrBuf *o = C->out;
  if (s->kind != IR_STMT_ALLOC && s->kind != IR_STMT_SEQ) cuda_emit_setup_sync(C, depth);
  switch (s->kind) {
  case IR_STMT_SEQ:
    cuda_indent(C, depth);
    sb_puts(o, "{\n");
    cuda_emit_seq(C, s, depth + 1);
    cuda_indent(C, depth);
    sb_puts(o, "}\n");
    return;
  case IR_STMT_ALLOC:
    emit_alloc(C, s->u.alloc, depth);
    return;
  case IR_STMT_LET:
    cuda_indent(C, depth);
    /* A ring counter is unsigned: C++'s conversions then make every stage
     * and parity expression on it unsigned too (a mask and a shift, where
     * signed 64-bit % and / need sign fix-ups). */
    sb_printf(o, "const %s %s = ",
              s->u.let.var->counter && s->u.let.var->dtype == DTYPE_I64 ? "unsigned long long"
                                                                       : cuda_value_type(s->u.let.var->dtype),
              s->u.let.var->name);
    cuda_emit_expr(C, o, s->u.let.value);
    sb_puts(o, ";\n");
    return;
  case IR_STMT_STORE:
    if (s->u.store.atomic) {
      cuda_emit_atomic_store(C, s, depth);
      return;
    }
    cuda_indent(C, depth);
    cuda_emit_element(C, o, s->u.store.buf, s->u.store.idx, s->u.store.nidx, s->loc);
    sb_puts(o, " = ");
    cuda_emit_stored_value(C, o, s->u.store.buf->dtype, s->u.store.value);
    sb_puts(o, ";\n");
    return;
  case IR_STMT_FOR:
    if (s->u.for_.kind == IR_FOR_PARALLEL) {
      cuda_emit_parallel(C, s, depth);
      return;
    }
    if (s->u.for_.kind == IR_FOR_STREAM_K) {
      cuda_emit_stream_k_loop(C, s, depth);
      return;
    }
    if (s->u.for_.kind == IR_FOR_UNROLLED) {
      cuda_indent(C, depth);
      sb_puts(o, "#pragma unroll\n");
    }
    cuda_indent(C, depth);
    if (s->u.for_.kind == IR_FOR_PERSISTENT) {
      sb_printf(o, "for (long long %s = blockIdx.x; %s < ", s->u.for_.var->name, s->u.for_.var->name);
      cuda_emit_expr(C, o, s->u.for_.extent);
      sb_printf(o, "; %s += gridDim.x) {  // persistent: this block's tiles\n", s->u.for_.var->name);
      cuda_emit_tile_thread_ids(C, depth + 1);
      cuda_emit_seq(C, s->u.for_.body, depth + 1);
      cuda_indent(C, depth);
      sb_puts(o, "}\n");
      return;
    }
    sb_printf(o, "for (long long %s = 0; %s < ", s->u.for_.var->name, s->u.for_.var->name);
    cuda_emit_expr(C, o, s->u.for_.extent);
    sb_printf(o, "; ++%s) {", s->u.for_.var->name);
    if (s->u.for_.kind == IR_FOR_PIPELINED) sb_printf(o, "  // pipelined, %d stages", s->u.for_.num_stages);
    sb_puts(o, "\n");
    cuda_emit_seq(C, s->u.for_.body, depth + 1);
    cuda_indent(C, depth);
    sb_puts(o, "}\n");
    return;
  case IR_STMT_EXIT: /* block-uniform (pass early-exit): the whole block leaves */
    cuda_indent(C, depth);
    sb_puts(o, "if (");
    cuda_emit_expr(C, o, s->u.exit_.cond);
    sb_puts(o, ") return;  // nothing left for this block\n");
    return;
  case IR_STMT_IF:
    cuda_indent(C, depth);
    sb_puts(o, s->u.if_.opaque ? "if (tc_opaque(" : "if (");
    cuda_emit_expr(C, o, s->u.if_.cond);
    sb_puts(o, s->u.if_.opaque ? ")) {\n" : ") {\n");
    cuda_emit_seq(C, s->u.if_.then_, depth + 1);
    cuda_indent(C, depth);
    if (s->u.if_.else_) {
      sb_puts(o, "} else {\n");
      cuda_emit_seq(C, s->u.if_.else_, depth + 1);
      cuda_indent(C, depth);
    }
    sb_puts(o, "}\n");
    return;
  case IR_STMT_COPY:
    cuda_emit_copy(C, s, depth);
    return;
  case IR_STMT_ATOMIC_ADD:
    cuda_emit_atomic_add(C, s, depth);
    return;
  case IR_STMT_ATOMIC_FETCH_ADD:
    cuda_emit_atomic_fetch(C, s, depth);
    return;
  case IR_STMT_FILL:
    cuda_emit_fill(C, s, depth);
    return;
  case IR_STMT_GEMM:
    cuda_emit_gemm(C, s, depth);
    return;
  case IR_STMT_REDUCE:
    cuda_emit_reduce(C, s, depth);
    return;
  case IR_STMT_BARRIER:
    cuda_emit_barrier(C, depth);
    return;
  case IR_STMT_WG_TURN:
    cuda_emit_turn(C, s, depth);
    return;
  case IR_STMT_WARP_ROLES:
    cuda_emit_warp_roles(C, s, depth);
    return;
  case IR_STMT_MBAR_ARRIVE:
    cuda_emit_mbar_arrive(C, s, depth);
    return;
  case IR_STMT_ASYNC_COMMIT:
    cuda_indent(C, depth);
    sb_puts(o, "tc_cp_async_commit();\n");
    return;
  case IR_STMT_ASYNC_WAIT:
    cuda_indent(C, depth);
    sb_printf(o, "tc_cp_async_wait<%d>();\n", s->u.async_pending);
    return;
  case IR_STMT_WGMMA_WAIT: {
    cuda_indent(C, depth);
    for (int i = 0; i < s->u.wgmma_wait.npinned; i++) {
      const IrBuffer *b = s->u.wgmma_wait.pinned[i];
      sb_printf(o, "tc_pin_regs<%d>(%s);\n", b->layout.rows_local * b->layout.cols_local, b->name);
      cuda_indent(C, depth);
    }
    const int n = ir_layout_wgmma_n(&s->u.wgmma_wait.acc->layout); /* one warpgroup's share */
    const int blocks = ir_layout_wgmma_blocks(&s->u.wgmma_wait.acc->layout);
    cuda_note_wgmma_n(C, n);
    if (cuda_fp8_pending(C, s->u.wgmma_wait.acc)) {
      /* The FP8 gemm's last chunk is in its part, not yet in acc. */
      if (s->u.wgmma_wait.pending) {
        cuda_fail(C, s->loc, "an in-flight FP8 gemm on '%s' can only be waited for completely",
                  s->u.wgmma_wait.acc->name);
        return;
      }
      sb_printf(o, "tc_wgmma_fp8_drain<%d>(%s, tc_pend_%s);\n", n, s->u.wgmma_wait.acc->name,
                s->u.wgmma_wait.acc->name);
    } else if (s->u.wgmma_wait.pending == 0)
      sb_printf(o, "tc_wgmma_drain<%d%s>(%s);\n", n, blocks == 2 ? ", 2" : "", s->u.wgmma_wait.acc->name);
    else
      sb_printf(o, "tc_wgmma_wait_acc<%d, %d%s>(%s);\n", s->u.wgmma_wait.pending, n, blocks == 2 ? ", 2" : "",
                s->u.wgmma_wait.acc->name);
    return;
  }
  case IR_STMT_MBAR_WAIT:
    cuda_emit_mbar_wait(C, s, depth);
    return;
  case IR_STMT_STREAM_K_FIXUP:
    cuda_emit_stream_k_fixup(C, s, depth);
    return;
  case IR_STMT_ANNOTATE_LAYOUT:
  case IR_STMT_USE_SWIZZLE:
    return; /* consumed by swizzle-layout / rasterize */
  default:
    cuda_fail(C, s->loc, "statement '%s' is not supported", ir_stmt_kind_name(s->kind));
    return;
  }
}

/* ---- kernels ---------------------------------------------------------------------- */

static void emit_block_indices(Cuda *C, const IrKernel *k) {
  StrBuf *o = C->out;
  if (k->raster_panel) {
    /* Walk blocks in panels of `P` rows (cols) of the 2-D grid so that
     * blocks running together share tiles in L2. */
    const char *major = k->raster_column_major ? "x" : "y", *minor = k->raster_column_major ? "y" : "x";
    sb_printf(o,
              "  const long long tc_linear = (long long)blockIdx.x + (long long)blockIdx.y * gridDim.x;\n"
              "  const long long tc_panel_span = %dLL * gridDim.%s;\n"
              "  const long long tc_panel = tc_linear / tc_panel_span;\n"
              "  const long long tc_in_panel = tc_linear - tc_panel * tc_panel_span;\n"
              "  const long long tc_panel_rows = min(%dLL, (long long)gridDim.%s - tc_panel * %d);\n"
              "  const long long tc_block_%s = tc_panel * %d + tc_in_panel %% tc_panel_rows;\n"
              "  const long long tc_block_%s = tc_in_panel / tc_panel_rows;\n",
              k->raster_panel, minor, k->raster_panel, major, k->raster_panel, major, k->raster_panel, minor);
  }
  for (int g = 0; g < k->ngrid; g++) {
    const char *axis = g == 0 ? "x" : g == 1 ? "y" : "z";
    if (k->raster_panel && g < 2)
      sb_printf(o, "  [[maybe_unused]] const long long %s = tc_block_%s;\n", k->block_vars[g]->name, axis);
    else
      sb_printf(o, "  [[maybe_unused]] const long long %s = blockIdx.%s;\n", k->block_vars[g]->name, axis);
  }
}

static void emit_kernel(Cuda *C, const IrKernel *k) {
  StrBuf *o = C->out;
  C->k = k;
  C->smem_offset = 0;
  C->mbar_offset = (int)ir_shared_bytes(k->body, IR_SHARED_DATA);
  int64_t threads = cuda_const(k->threads);
  C->threads = (int)threads;
  ir_print_kernel_config(o, "//", k); /* which target_sm-dependent defaults were chosen */
  cuda_stream_k_declare(C, k);
  /* Warp-specialized: one block per SM at most (setmaxnreg needs the
   * register cap the bound gives); the code outside the producer's role is
   * written for the consumer warps. */
  if (k->producer_warp) {
    C->threads = k->producer_warp * 32;
    C->consumers_only = false;
    /* Pairs of blocks sharing multicast TMA loads (pass persistent). */
    const char *cluster = k->cluster > 1 ? "__cluster_dims__(2, 1, 1) " : "";
    sb_printf(o, "extern \"C\" __global__ void %s__launch_bounds__(%d, 1) tilec_%s(", cluster, (int)threads, k->name);
  } else {
    sb_printf(o, "extern \"C\" __global__ void __launch_bounds__(%d) tilec_%s(", (int)threads, k->name);
  }
  bool first = true;
  for (int i = 0; i < k->nparams; i++) {
    const IrParam *p = &k->params[i];
    if (p->is_tensor) sb_printf(o, "%s%s *__restrict__ %s", first ? "" : ", ", cuda_storage_type(p->buffer->dtype), p->name);
    else sb_printf(o, "%s%s %s", first ? "" : ", ", cuda_storage_type(p->scalar->dtype), p->name);
    first = false;
  }
  for (int i = 0; i < k->nsymbols; i++)
    if (!k->symbols[i]->bound) {
      sb_printf(o, "%slong long %s", first ? "" : ", ", k->symbols[i]->name);
      first = false;
    }
  /* TMA descriptors (lower-tma), encoded by the runtime at launch. */
  for (int i = 0; i < k->ntma_maps; i++) {
    sb_printf(o, "%sconst __grid_constant__ tc_tensor_map tc_tmap_%d", first ? "" : ", ", i);
    first = false;
  }
  sb_puts(o, ") {\n");
  /* 1024 in every kernel, wgmma or not: the extern array is one symbol per
   * module and NVRTC keeps a single alignment for it (the last kernel's:
   * `.align 128` in the PTX of examples/flash_attention_bwd.tile when its
   * non-wgmma kernels said 128), so a wgmma kernel's swizzled tiles are
   * 1024-aligned only while no static shared memory sits before the array. */
  sb_puts(o, "  extern __shared__ __align__(1024) unsigned char tc_smem[];\n");
  sb_puts(o, "  const int tc_tid = threadIdx.x, tc_warp = tc_tid / 32, tc_lane = tc_tid % 32;\n");
  sb_puts(o, "  (void)tc_warp; (void)tc_lane; (void)tc_smem;\n");
  /* Programmatic dependent launch (sema sets these on sm_90a only): before
   * any statement, so every thread waits before its first global access. */
  if (k->pdl_sync) sb_puts(o, "  tc_pdl_wait();  // pdl_sync: the previous kernel's writes are visible\n");
  if (k->pdl_trigger) sb_puts(o, "  tc_pdl_trigger();  // pdl_trigger: the next kernel may start\n");
  /* The TMA descriptors into the descriptor cache before the first copy
   * needs them (a block's first load otherwise waits for that fetch too). */
  if (k->ntma_maps > 0) {
    sb_puts(o, "  if (tc_tid == 0) {\n");
    for (int i = 0; i < k->ntma_maps; i++) sb_printf(o, "    tc_tma_prefetch_desc(&tc_tmap_%d);\n", i);
    sb_puts(o, "  }\n");
  }
  if (!k->persistent) emit_block_indices(C, k); /* persistent: the tile loop defines them */
  if (k->grid_size) sb_printf(o, "  const long long %s = gridDim.x;  // the tile loops' step\n", k->grid_size->name);
  cuda_fastdiv_declare(C, k);
  cuda_emit_seq(C, k->body, 0);
  cuda_emit_setup_sync(C, 0);
  C->nfastdiv = 0;
  sb_puts(o, "}\n\n");
}

bool emit_cuda_module(const IrModule *m, StrBuf *out, Diag *diag, bool fast_division) {
  StrBuf body;
  sb_init(&body);
  Cuda C = {.m = m, .out = &body, .diag = diag, .fast_division = fast_division};
  sb_printf(&body, "// Generated by tilec %s from %s. Do not edit.\n", "0.1.0", m->file ? m->file : "<input>");
  sb_puts(&body, "// Kernel parameters: tensors (device pointers), scalars, then the dynamic\n"
                 "// shape symbols as long long. Launch with the dynamic shared memory the\n"
                 "// runtime reports (tilert) or TilecKernelInfo.shared_bytes.\n");
  bool wgmma = false, tma = false, roles = false;
  for (int i = 0; i < m->nkernels; i++)
    wgmma |= m->kernels[i]->wgmma, tma |= m->kernels[i]->ntma_maps > 0, roles |= m->kernels[i]->producer_warp > 0;
  StrBuf kernels; /* after the includes, which depend on what they use */
  sb_init(&kernels);
  C.out = &kernels;
  for (int i = 0; i < m->nkernels && !C.failed; i++) emit_kernel(&C, m->kernels[i]);
  /* The wgmma header (a superset) only where needed: it is large for NVRTC.
   * Its instructions come per N (m64nNk16): the module names the N's its
   * gemms use and NVRTC parses only those (tilec_wgmma_ops.cuh). */
  if (wgmma) {
    sb_puts(&body, "#define TC_WGMMA_NS_LISTED 1\n");
    for (int n = 16; n <= 256; n += 16)
      if (C.wgmma_ns & (1u << (n / 16 - 1))) sb_printf(&body, "#define TC_WGMMA_N%d 1\n", n);
  }
  sb_puts(&body, wgmma ? "#include \"tilec_wgmma.cuh\"\n" : "#include \"tilec_tile.cuh\"\n");
  if (tma) sb_puts(&body, "#include \"tilec_tma.cuh\"\n");
  if (roles) sb_puts(&body, "#include \"tilec_warp_roles.cuh\"\n");
  if (C.fastdiv_used) sb_puts(&body, "#include \"tilec_fastdiv.cuh\"\n");
  if (C.stream_k_used) sb_puts(&body, "#include \"tilec_stream_k.cuh\"\n");
  /* Every FP8 type and conversion the kernels name has _e4m3 or _e5m2 in it
   * (cuda_storage_type, cuda_to_f32, cuda_from_f32); a user name with it
   * only adds an unused include. */
  bool fp8 = kernels.data && (strstr(kernels.data, "_e4m3") || strstr(kernels.data, "_e5m2"));
  sb_puts(&body, fp8 ? "#include \"tilec_fp8.cuh\"\n\n" : "\n");
  if (kernels.len) sb_putn(&body, kernels.data, kernels.len);
  sb_free(&kernels);
  if (!C.failed) sb_puts(out, body.data);
  sb_free(&body);
  return !C.failed;
}
