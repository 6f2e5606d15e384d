/* The Jetson replay's fake CUDA stack (cargo xtask jetson-replay, loader-tests/src/replay/):
   libraries that behave, as far as the loader and the outcome are concerned, like the real
   thing.  Every build says what it is through compile-time defines; what went wrong travels
   as a code plus one line "kind detail..." that the harness classifies.  docs/jetson.md
   ("The closure") cites the source of every edge and lists the ones nobody has confirmed.

   The board's driver directory, per L4T release (-DL4T_RELEASE=35, 36, 38 or 39), no RUNPATH:
     libnvsocsys.so, libnvtegrahv.so (R36 on), libnvrm_chip.so, libnvrm_host1x.so
                           (jetson-l4t.c)     small libraries of the directory
     libnvos.so            (jetson-nvos.c)    reads the running kernel's L4T release from
                                               /etc/nv_tegra_release
     libnvrm_mem.so, libnvrm_gpu.so, libnvdla_runtime.so (jetson-nvrm.c)  refuse a kernel of
                                               another release; libnvrm_gpu and
                                               libnvdla_runtime use libstdc++.so.6
     libcuda.so.1 (board)  (jetson-libcuda.c -DBOARD)  DT_NEEDED libnvrm_gpu.so libnvrm_mem.so
     libnvidia-ptxjitcompiler.so.1 (jetson-ptxjit.c)    the driver's PTX JIT helper, one per
                                               driver version, beside its libcuda.so.1
   cuda_compat:
     libcuda.so.1 (compat) (jetson-libcuda.c -DCOMPAT) accepts one L4T release and only a board
                                               driver older than itself (else
                                               CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, 803) and needs
                                               libnvrm_gpu/mem and libnvdla_runtime by DT_NEEDED
                                               (as nixpkgs links it) or, -DNVRM_DLOPEN, by dlopen
                                               in cuInit
   Every libcuda.so.1 dlopens libnvidia-ptxjitcompiler.so.1 by bare name when a PTX module is
   loaded (CUDA_ERROR_JIT_COMPILER_NOT_FOUND, 221, when none is found; not for SASS; with
   CUDA_DISABLE_PTX_JIT=1 it refuses, 223; PTX of a toolkit newer than the helper it got is
   CUDA_ERROR_UNSUPPORTED_PTX_VERSION, 222), and its other helpers (libnvidia-nvvm.so.4,
   libcudadebugger.so.1) by bare name when asked.  The stub (-DSTUB, cuda_cudart's
   lib/stubs/libcuda.so) answers CUDA_ERROR_STUB_LIBRARY (34) to everything.
   The board's driver version reaches the compat stand-in through /etc/jetson-replay-board
   ("driver=12060"): how the real one learns it is not known; that it refuses a driver as
   new as itself is the 803 rule of docs/jetson.md.
     libcudart.so.11, .12, .13 (jetson-cudart.c)  dlopens libcuda.so.1 from inside itself,
                                               refuses a driver of an older CUDA major version
                                               (an older minor one runs: NVIDIA's minor-version
                                               compatibility), initialises it and loads a PTX
                                               module made by its own toolkit
     saxpy                 (jetson-saxpy.c)   the app; -DCXX_APP: links libstdc++.so.6, as a
                                               C++ CUDA program does                          */
#ifndef LD_FALLBACK_JETSON_H
#define LD_FALLBACK_JETSON_H

#include <stddef.h>

/* The small libraries of the driver directory (jetson-l4t.c): each returns its release.  */
int l4t_nvsocsys (void);
int l4t_nvtegrahv (void);
int l4t_nvrm_chip (void);
int l4t_nvrm_host1x (void);

/* libnvos.so */
int nvos_kernel_release (void);

/* libnvrm_gpu.so, libnvrm_mem.so, libnvdla_runtime.so: 0 when usable, else writes why into
   MSG.  */
int nvrm_gpu_open (char *msg, size_t size);
int nvrm_mem_open (char *msg, size_t size);
int nvdla_runtime_open (char *msg, size_t size);

/* libnvidia-ptxjitcompiler.so.1: the driver version it was shipped with.  */
int nvptxjit_version (void);

/* The driver API subset the runtime uses.  */
int cuDriverGetVersion (int *version);
int cuInit (unsigned int flags);
int cuGetErrorString (int error, const char **text);
int cuModuleLoadData (void **module, const void *image);
/* Not NVIDIA's: the version of the JIT helper the last module load used (0: none needed).  */
int jetson_jit_version (void);
/* Not NVIDIA's: dlopens the driver helper SONAME by bare name, as the driver does, and
   returns the version of the driver it was shipped with (-1: not found, why in MSG).  */
int jetson_load_helper (const char *soname, char *msg, size_t size);

/* libcudart.so.11/.12/.13: 0 when CUDA is usable, else a cudaError_t and "kind detail" in MSG.  */
int cudart_init (char *msg, size_t size);

/* libstdc++.so.6's operator new and delete, called from C as a C++ library would.  */
void *_Znwm (unsigned long size);
void _ZdlPv (void *pointer);

#define CUDA_ERROR_SYSTEM_DRIVER_MISMATCH 803
#define CUDA_ERROR_JIT_COMPILER_NOT_FOUND 221
#define CUDA_ERROR_UNSUPPORTED_PTX_VERSION 222
#define CUDA_ERROR_UNKNOWN 999
#define CUDA_ERROR_INSUFFICIENT_DRIVER 35
#define CUDA_ERROR_STUB_LIBRARY 34
#define CUDA_ERROR_JIT_COMPILATION_DISABLED 223

#endif
