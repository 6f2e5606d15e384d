/* libcudart.so.12 (-DRUNTIME_VERSION=12020): the app's CUDA runtime.  Like NVIDIA's, it
   dlopens libcuda.so.1 from inside itself (so its own RUNPATH is searched), refuses a driver
   older than it needs (cudaErrorInsufficientDriver), passes cuInit's error on, and loads the
   app's kernels as a PTX module (which needs the driver's JIT helper).  */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include "jetson.h"

#ifndef RUNTIME_VERSION
#error "build with -DRUNTIME_VERSION=N"
#endif

static const char ptx[] = ".version 6.0\n.target sm_50\n.address_size 64\n";

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
  int (*load) (void **, const void *)
    = (int (*) (void **, const void *)) dlsym (cuda, "cuModuleLoadData");
  int (*jit) (void) = (int (*) (void)) dlsym (cuda, "jetson_jit_version");
  if (version == NULL || init == NULL || text == NULL || load == NULL || jit == NULL)
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
  const char *why = "?";
  int rc = init (0);
  if (rc != 0)
    {
      text (rc, &why);
      snprintf (msg, size, "init driver=%d code=%d %s", driver, rc, why);
      return rc;
    }
  void *module = NULL;
  rc = load (&module, ptx);
  if (rc != 0)
    {
      text (rc, &why);
      snprintf (msg, size, "module driver=%d code=%d %s", driver, rc, why);
      return rc;
    }
  snprintf (msg, size, "ok driver=%d jit=%d", driver, jit ());
  return 0;
}
