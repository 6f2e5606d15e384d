/* libcudart.so.12 (-DRUNTIME_VERSION=12020): the app's CUDA runtime.  Like NVIDIA's, it
   dlopens libcuda.so.1 from inside itself (so its own RUNPATH is searched), refuses a driver
   older than it needs (cudaErrorInsufficientDriver), and passes cuInit's error on.  */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include "jetson.h"

#ifndef RUNTIME_VERSION
#error "build with -DRUNTIME_VERSION=N"
#endif

int
cudart_init (char *msg, size_t size)
{
  void *cuda = dlopen ("libcuda.so.1", RTLD_NOW);
  /* No tail call: dlopen must see this library as its caller (its RUNPATH counts).  */
  __asm__ volatile ("" ::: "memory");
  if (cuda == NULL)
    {
      snprintf (msg, size, "no-driver %s", dlerror ());
      return CUDA_ERROR_INSUFFICIENT_DRIVER;
    }
  int (*version) (int *) = (int (*) (int *)) dlsym (cuda, "cuDriverGetVersion");
  int (*init) (unsigned int) = (int (*) (unsigned int)) dlsym (cuda, "cuInit");
  int (*text) (int, const char **) = (int (*) (int, const char **)) dlsym (cuda, "cuGetErrorString");
  if (version == NULL || init == NULL || text == NULL)
    {
      snprintf (msg, size, "no-driver libcuda.so.1 lacks the driver API");
      return CUDA_ERROR_INSUFFICIENT_DRIVER;
    }
  int driver = 0;
  version (&driver);
  if (driver < RUNTIME_VERSION)
    {
      snprintf (msg, size, "too-old driver=%d runtime=%d", driver, RUNTIME_VERSION);
      return CUDA_ERROR_INSUFFICIENT_DRIVER;
    }
  int rc = init (0);
  if (rc != 0)
    {
      const char *why = "?";
      text (rc, &why);
      snprintf (msg, size, "init driver=%d code=%d %s", driver, rc, why);
      return rc;
    }
  snprintf (msg, size, "ok driver=%d", driver);
  return 0;
}
