/* rt_gpu_kernels.h - .tile sources of the GPU runtime tests.
 *
 * scale_add is the kernel of the CPU tests (C = A * alpha + B) with its
 * tiles in shared memory: the GPU backend gives rank-1 fragments no thread
 * layout, so the CPU tests' alloc_fragment version does not compile for
 * the GPU. scale2d has two dynamic symbols and a 2-D grid (their order in
 * the kernel's parameters is checked by the result), scale_big 64 KB of
 * shared memory (above the 48 KB default: the opt-in attribute), mixed one
 * scalar of every other width (f16, i32, f64) and an f16 tensor. */
#ifndef RT_GPU_KERNELS_H
#define RT_GPU_KERNELS_H

/* scale_add(A, B, C: f32[n], alpha: f32):   C = A * alpha + B
 * scale2d(X, Y: f32[m, k], s: f32):         Y = X * s + 1
 * scale_big(A, C: f32[n], alpha: f32):      C = A * alpha, 64 KB shared */
static const char rt_gpu_tile_src[] =
    "kernel scale_add(A: f32[n], B: f32[n], C: f32[n], alpha: f32)\n"
    "  const (block = 64)\n"
    "  grid (ceildiv(n, block)) threads (block) as (bx)\n"
    "{\n"
    "    a = alloc_shared([block], f32);\n"
    "    b = alloc_shared([block], f32);\n"
    "    copy(A[bx*block : (bx+1)*block], a);\n"
    "    copy(B[bx*block : (bx+1)*block], b);\n"
    "    for i in parallel(block) a[i] = a[i] * alpha + b[i];\n"
    "    copy(a, C[bx*block : (bx+1)*block]);\n"
    "}\n"
    "\n"
    "kernel scale2d(X: f32[m, k], Y: f32[m, k], s: f32)\n"
    "  const (bm = 32, bk = 16)\n"
    "  grid (ceildiv(k, bk), ceildiv(m, bm)) threads (64) as (bx, by)\n"
    "{\n"
    "    x = alloc_fragment([bm, bk], f32);\n"
    "    copy(X[by*bm : (by+1)*bm, bx*bk : (bx+1)*bk], x);\n"
    "    for i, j in parallel(bm, bk) x[i, j] = x[i, j] * s + 1.0;\n"
    "    copy(x, Y[by*bm : (by+1)*bm, bx*bk : (bx+1)*bk]);\n"
    "}\n"
    "\n"
    "kernel scale_big(A: f32[n], C: f32[n], alpha: f32)\n"
    "  const (block = 16384)\n"
    "  grid (ceildiv(n, block)) threads (256) as (bx)\n"
    "{\n"
    "    a = alloc_shared([block], f32);\n"
    "    copy(A[bx*block : (bx+1)*block], a);\n"
    "    for i in parallel(block) a[i] = a[i] * alpha;\n"
    "    copy(a, C[bx*block : (bx+1)*block]);\n"
    "}\n";

/* mixed(X: f16[n], Y: f32[n], s: f16, b: i32, w: f64):  Y = X * s + b + w */
static const char rt_gpu_mixed_src[] =
    "kernel mixed(X: f16[n], Y: f32[n], s: f16, b: i32, w: f64)\n"
    "  const (block = 128)\n"
    "  grid (ceildiv(n, block)) threads (block) as (bx)\n"
    "{\n"
    "    x = alloc_shared([block], f32);\n"
    "    copy(X[bx*block : (bx+1)*block], x);\n"
    "    for i in parallel(block) x[i] = x[i] * s + b + w;\n"
    "    copy(x, Y[bx*block : (bx+1)*block]);\n"
    "}\n";

#endif
