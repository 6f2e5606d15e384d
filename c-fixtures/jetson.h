/* The Jetson replay's fake CUDA stack (cargo xtask jetson-replay, loader-tests/src/replay/):
   libraries that behave, as far as the loader and the outcome are concerned, like the real
   thing.  Every build says what it is through compile-time defines; what went wrong travels
   as a code plus one line "kind detail..." that the harness classifies.

     libnvos.so            (jetson-nvos.c)    the board's base library; reads the running
                                               kernel's L4T release from /etc/nv_tegra_release
     libnvrm_gpu.so, libnvrm_mem.so (jetson-nvrm.c)   DT_NEEDED libnvos.so, no RUNPATH, built
                                               for one L4T release and refusing another
     libcuda.so.1 (board)  (jetson-libcuda.c -DBOARD)  DT_NEEDED libnvrm_gpu.so libnvrm_mem.so
     libcuda.so.1 (compat) (jetson-libcuda.c -DCOMPAT) cuda_compat's: accepts one L4T release
                                               (else CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, 803)
                                               and needs libnvrm_* by DT_NEEDED (as nixpkgs
                                               links it) or, -DNVRM_DLOPEN, by dlopen in cuInit
     libcudart.so.12       (jetson-cudart.c)  dlopens libcuda.so.1 from inside itself and
                                               refuses a driver older than RUNTIME_VERSION
     saxpy                 (jetson-saxpy.c)   the app                                        */
#ifndef LD_FALLBACK_JETSON_H
#define LD_FALLBACK_JETSON_H

#include <stddef.h>

/* libnvos.so */
int nvos_kernel_release (void);

/* libnvrm_gpu.so and libnvrm_mem.so: 0 when usable, else writes why into MSG.  */
int nvrm_gpu_open (char *msg, size_t size);
int nvrm_mem_open (char *msg, size_t size);

/* The driver API subset the runtime uses.  */
int cuDriverGetVersion (int *version);
int cuInit (unsigned int flags);
int cuGetErrorString (int error, const char **text);

/* libcudart.so.12: 0 when CUDA is usable, else a cudaError_t and "kind detail" in MSG.  */
int cudart_init (char *msg, size_t size);

#define CUDA_ERROR_SYSTEM_DRIVER_MISMATCH 803
#define CUDA_ERROR_UNKNOWN 999
#define CUDA_ERROR_INSUFFICIENT_DRIVER 35

#endif
