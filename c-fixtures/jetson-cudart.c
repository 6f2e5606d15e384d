/* libcudart.so.12 (-DRUNTIME_VERSION=12020): the app's CUDA runtime.  Like NVIDIA's, it
   dlopens libcuda.so.1 from inside itself (so its own RUNPATH is searched), refuses an older
   driver (cudaErrorInsufficientDriver), passes the driver's errors on, and loads the app's
   kernels as a module: PTX, which needs the driver's JIT helper, or with SAXPY_KERNEL=sass
   SASS, which does not.  SAXPY_HELPERS=1 then asks the driver for its other helpers.
   With SAXPY_PROBE_COMPAT=<path> and SAXPY_PROBE_VERSION=N it first probes as Julia's
   CUDA_Driver_jll does (C/CUDA/CUDA_Driver/init.jl in Yggdrasil): the system driver by bare
   name; if it is older than N, unload it, load the compat driver by absolute path and its JIT
   helper by absolute path from the same directory, and keep it if cuInit succeeds, else
   unload it and take the system driver again.  The lookup of libcuda.so.1 that follows then
   gets whichever is loaded: a loaded SONAME wins.  */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jetson.h"

#ifndef RUNTIME_VERSION
#error "build with -DRUNTIME_VERSION=N"
#endif

static const char ptx[] = ".version 6.0\n.target sm_50\n.address_size 64\n";
static const char sass[] = "sass sm_87";

/* Julia's probe, before the runtime's own lookup.  */
static void
probe_compat (const char *compat, int compat_version)
{
  void *system = dlopen ("libcuda.so.1", RTLD_NOW);
  /* No tail call: dlopen must see this library as its caller (its RUNPATH counts).  */
  __asm__ volatile ("" ::: "memory");
  if (system == NULL)
    return;
  int (*version) (int *) = (int (*) (int *)) dlsym (system, "cuDriverGetVersion");
  int system_version = 0;
  if (version == NULL || version (&system_version) != 0 || system_version >= compat_version)
    return;
  dlclose (system);
  if (dlopen ("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) != NULL)
    return;
  void *handle = dlopen (compat, RTLD_NOW);
  if (handle == NULL)
    return;
  char helper[4096];
  snprintf (helper, sizeof helper, "%s", compat);
  char *slash = strrchr (helper, '/');
  if (slash != NULL)
    snprintf (slash + 1, sizeof helper - (size_t) (slash + 1 - helper),
              "libnvidia-ptxjitcompiler.so.1");
  void *jit = dlopen (helper, RTLD_NOW);
  int (*init) (unsigned int) = (int (*) (unsigned int)) dlsym (handle, "cuInit");
  if (init != NULL && init (0) == 0)
    return;
  if (jit != NULL)
    dlclose (jit);
  dlclose (handle);
}

int
cudart_init (char *msg, size_t size)
{
  const char *probe = getenv ("SAXPY_PROBE_COMPAT");
  const char *probe_version = getenv ("SAXPY_PROBE_VERSION");
  if (probe != NULL && probe_version != NULL)
    probe_compat (probe, atoi (probe_version));
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
  int (*helper) (const char *, char *, size_t)
    = (int (*) (const char *, char *, size_t)) dlsym (cuda, "jetson_load_helper");
  if (version == NULL || init == NULL || text == NULL || load == NULL || jit == NULL
      || helper == NULL)
    {
      snprintf (msg, size, "no-driver libcuda.so.1 lacks the driver API");
      return CUDA_ERROR_INSUFFICIENT_DRIVER;
    }
  /* Only cuda_compat's stand-in has it: which driver this is, whatever its version.  */
  int (*is_compat) (void) = (int (*) (void)) dlsym (cuda, "jetson_is_compat");
  int compat = is_compat != NULL ? is_compat () : 0;
  int driver = 0;
  int rc = version (&driver);
  if (rc == CUDA_ERROR_STUB_LIBRARY)
    {
      snprintf (msg, size, "stub code=%d", rc);
      return rc;
    }
  if (driver < RUNTIME_VERSION)
    {
      snprintf (msg, size, "too-old driver=%d compat=%d runtime=%d", driver, compat, RUNTIME_VERSION);
      return CUDA_ERROR_INSUFFICIENT_DRIVER;
    }
  const char *why = "?";
  rc = init (0);
  if (rc != 0)
    {
      text (rc, &why);
      snprintf (msg, size, "init driver=%d compat=%d code=%d %s", driver, compat, rc, why);
      return rc;
    }
  const char *kernel = getenv ("SAXPY_KERNEL");
  void *module = NULL;
  rc = load (&module, kernel != NULL && strcmp (kernel, "sass") == 0 ? sass : ptx);
  if (rc != 0)
    {
      text (rc, &why);
      snprintf (msg, size, "module driver=%d compat=%d code=%d %s", driver, compat, rc, why);
      return rc;
    }
  int written = snprintf (msg, size, "ok driver=%d compat=%d jit=%d", driver, compat, jit ());
  const char *helpers = getenv ("SAXPY_HELPERS");
  if (helpers != NULL && strcmp (helpers, "1") == 0)
    {
      static const char *const names[] = { "libnvidia-nvvm.so.4", "libcudadebugger.so.1" };
      for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        {
          char why_not[256];
          int v = helper (names[i], why_not, sizeof why_not);
          if (written >= 0 && (size_t) written < size)
            written += snprintf (msg + written, size - (size_t) written, " helper=%s:%d",
                                 names[i], v);
        }
    }
  return 0;
}
