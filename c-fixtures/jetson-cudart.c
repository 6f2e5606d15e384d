/* libcudart.so.12 (-DRUNTIME_VERSION=12020): the app's CUDA runtime.  Like NVIDIA's, it
   dlopens libcuda.so.1 from inside itself (so its own RUNPATH is searched), refuses a driver
   of an older CUDA major version (cudaErrorInsufficientDriver) and takes one of an older minor
   version of its own major (NVIDIA's minor-version compatibility), passes the driver's errors
   on, and loads the app's kernels as a module: PTX made by its own toolkit ("toolkit=N"),
   which needs a JIT helper at least that new, or with SAXPY_KERNEL=sass SASS, which needs
   none.  SAXPY_HELPERS=1 then asks the driver for its other helpers.
   With SAXPY_PROBE_COMPAT=<path> it first chooses a driver as Julia's CUDA_Driver_jll does
   (C/CUDA/CUDA_Driver/init.jl and toplevel.jl in Yggdrasil): nothing when a libcuda.so.1 is
   already loaded; else it inspects each driver in a child process, cuda_compat's after its
   helpers (the libraries beside it) and the system's by bare name, each through cuInit and
   cuDriverGetVersion, so neither is mapped here; and only when cuda_compat initialised and is
   newer than the system's driver it loads cuda_compat's helpers, then cuda_compat, by absolute
   path.  The lookup of libcuda.so.1 that follows then gets whichever is loaded: a loaded
   SONAME wins.  (Julia's inspector is a program of its own; the child here is a fork, whose
   bare-name lookup is the runtime's.)  */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "jetson.h"

#ifndef RUNTIME_VERSION
#error "build with -DRUNTIME_VERSION=N"
#endif

#define STRING(x) #x
#define VALUE(x) STRING (x)
static const char ptx[]
  = ".version 6.0\n.target sm_50\n.address_size 64\ntoolkit=" VALUE (RUNTIME_VERSION) "\n";
static const char sass[] = "sass sm_87";

/* The helpers a cuda_compat ships beside its libcuda.so.1 that Julia loads first
   (libcuda_deps in init.jl; its libnvidia-gpucomp and libnvidia-tileiras have no stand-in).  */
static const char *const compat_deps[] = {
  "libcudadebugger.so.1", "libnvidia-nvvm.so.4", "libnvidia-ptxjitcompiler.so.1",
};
#define COMPAT_DEPS (sizeof compat_deps / sizeof compat_deps[0])

/* DIR/NAME into OUT, where DIR is the directory of PATH.  */
static void
beside (const char *path, const char *name, char *out, size_t size)
{
  snprintf (out, size, "%s", path);
  char *slash = strrchr (out, '/');
  if (slash != NULL)
    snprintf (slash + 1, size - (size_t) (slash + 1 - out), "%s", name);
}

/* The version DRIVER reports after cuInit, inspected in a child process with cuda_compat's
   helpers loaded first when WITH_DEPS, or 0 when it does not load or initialise.  */
static int
inspect (const char *driver, int with_deps)
{
  int pipefd[2];
  if (pipe (pipefd) != 0)
    return 0;
  pid_t pid = fork ();
  if (pid < 0)
    {
      close (pipefd[0]);
      close (pipefd[1]);
      return 0;
    }
  if (pid == 0)
    {
      close (pipefd[0]);
      int version = 0;
      for (size_t i = 0; with_deps && i < COMPAT_DEPS; i++)
        {
          char dep[4096];
          beside (driver, compat_deps[i], dep, sizeof dep);
          if (access (dep, F_OK) == 0 && dlopen (dep, RTLD_NOW | RTLD_LOCAL) == NULL)
            _exit (1);
        }
      void *handle = dlopen (driver, RTLD_NOW | RTLD_LOCAL);
      /* No tail call: dlopen must see this library as its caller (its RUNPATH counts).  */
      __asm__ volatile ("" ::: "memory");
      if (handle != NULL)
        {
          int (*init) (unsigned int) = (int (*) (unsigned int)) dlsym (handle, "cuInit");
          int (*get) (int *) = (int (*) (int *)) dlsym (handle, "cuDriverGetVersion");
          if (init != NULL && get != NULL && init (0) == 0 && get (&version) != 0)
            version = 0;
        }
      if (write (pipefd[1], &version, sizeof version) != sizeof version)
        _exit (1);
      _exit (0);
    }
  close (pipefd[1]);
  int version = 0;
  if (read (pipefd[0], &version, sizeof version) != sizeof version)
    version = 0;
  close (pipefd[0]);
  int status;
  waitpid (pid, &status, 0);
  return version;
}

/* Julia's choice, before the runtime's own lookup.  */
static void
probe_compat (const char *compat)
{
  if (dlopen ("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD) != NULL)
    return;
  int compat_version = inspect (compat, 1);
  if (compat_version == 0)
    return;
  int system_version = inspect ("libcuda.so.1", 0);
  if (system_version == 0 || compat_version <= system_version)
    return;
  for (size_t i = 0; i < COMPAT_DEPS; i++)
    {
      char dep[4096];
      beside (compat, compat_deps[i], dep, sizeof dep);
      if (access (dep, F_OK) == 0)
        dlopen (dep, RTLD_NOW);
    }
  dlopen (compat, RTLD_NOW);
}

int
cudart_init (char *msg, size_t size)
{
  const char *probe = getenv ("SAXPY_PROBE_COMPAT");
  if (probe != NULL)
    probe_compat (probe);
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
  if (driver / 1000 < RUNTIME_VERSION / 1000)
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
      snprintf (msg, size, "module driver=%d compat=%d jit=%d code=%d %s", driver, compat,
                jit (), rc, why);
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
