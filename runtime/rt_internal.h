/* rt_internal.h - every internal header of libtilert at once, for the
 * white-box tests (tests/runtime/). The library's own files never include
 * it: each includes the header of its floor (rt_base.h, rt_cpu.h, rt_gpu.h;
 * see rt_base.h), which tests/runtime/check_layers.sh checks. */
#ifndef RT_INTERNAL_H
#define RT_INTERNAL_H

#include "cuda_driver.h"
#include "rt_base.h"
#include "rt_cpu.h"
#include "rt_gpu.h"

#endif
