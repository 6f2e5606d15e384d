/* A CUDA-runtime-like shim for the Jetson scenario: built as libcudart.so.12 with the
   cuda_compat directory in its DT_RUNPATH, it dlopens libcuda.so.1 like the real runtime
   and refuses a driver older than the runtime needs.  */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#define REQUIRED_DRIVER 12020

/* 0 when the driver is usable; else writes why not into MSG.  */
int
cudart_init (char *msg, size_t size, int *driver, const char **role,
             const char **mem, const char **gpu)
{
  void *cuda = dlopen ("libcuda.so.1", RTLD_NOW);
  if (cuda == NULL)
    {
      snprintf (msg, size, "cannot load the CUDA driver: %s", dlerror ());
      return 1;
    }
  int (*version) (int *) = (int (*) (int *)) dlsym (cuda, "cuDriverGetVersion");
  const char *(*get_role) (void) = (const char *(*) (void)) dlsym (cuda, "marker_role");
  const char *(*get_mem) (void) = (const char *(*) (void)) dlsym (cuda, "marker_nvrm_mem");
  const char *(*get_gpu) (void) = (const char *(*) (void)) dlsym (cuda, "marker_nvrm_gpu");
  if (version == NULL || get_role == NULL || get_mem == NULL || get_gpu == NULL)
    {
      snprintf (msg, size, "libcuda.so.1 lacks the driver API");
      return 1;
    }
  version (driver);
  *role = get_role ();
  *mem = get_mem ();
  *gpu = get_gpu ();
  if (*driver < REQUIRED_DRIVER)
    {
      snprintf (msg, size,
                "CUDA driver version is insufficient for CUDA runtime version "
                "(driver %d < %d)", *driver, REQUIRED_DRIVER);
      return 1;
    }
  if (strcmp (*mem, "missing") == 0 || strcmp (*gpu, "missing") == 0)
    {
      snprintf (msg, size, "libcuda.so.1 could not load libnvrm_mem.so/libnvrm_gpu.so");
      return 1;
    }
  return 0;
}
