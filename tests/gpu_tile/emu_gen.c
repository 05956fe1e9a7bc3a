/* emu_gen.c - writes the source the tile_emulated test compiles on the host:
 * the GPU test's kernel source (tile_source over the tile_gpu_* tables, the
 * same text test_tile_gpu hands NVRTC) followed by a table of its kernels
 * by name, which emu_driver.cpp's rt_cuda_get_function searches.
 * Usage: emu_gen OUT.cu */
#include "tile_test.h"

static void add_entry(FILE *f, const char *name) { fprintf(f, "    {\"%s\", (void *)%s},\n", name, name); }

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: emu_gen OUT.cu\n");
    return 2;
  }
  FILE *f = fopen(argv[1], "w");
  if (!f) {
    perror(argv[1]);
    return 1;
  }
  (void)test_failures; /* tile_test.h is shared with the tests */
  char *src = tile_source(tile_gpu_ss, TILE_GPU_NSS, tile_gpu_rs, TILE_GPU_NRS, tile_gpu_copy,
                          TILE_GPU_NCOPY);
  fputs(src, f);
  free(src);
  char name[128];
  fputs("\nstatic const EmuKernel emu_kernels[] = {\n", f);
  add_entry(f, "tile_misc");
  for (int i = 0; i < TILE_GPU_NCOPY; i++) {
    tile_copy_name(&tile_gpu_copy[i], name, sizeof name);
    add_entry(f, name);
  }
  for (int i = 0; i < TILE_GPU_NSS; i++) {
    tile_ss_name(&tile_gpu_ss[i], name, sizeof name);
    add_entry(f, name);
  }
  for (int i = 0; i < TILE_GPU_NRS; i++) {
    tile_rs_name(&tile_gpu_rs[i], name, sizeof name);
    add_entry(f, name);
  }
  fputs("    {0, 0},\n};\n", f);
  return fclose(f) == 0 ? 0 : 1;
}
