/* libcuda.so.1, the board's (-DBOARD) or cuda_compat's (-DCOMPAT -DACCEPTS_L4T=35), reporting
   CUDA_VERSION (12020 for 12.2).  The board's needs its own libnvrm_gpu/mem by DT_NEEDED; the
   compat one needs libnvrm_gpu/mem and libnvdla_runtime by DT_NEEDED too (linked against
   stubs at build time, as nixpkgs' autoPatchelf shows), or with -DNVRM_DLOPEN by dlopen in
   cuInit (searched with this library's RUNPATH, LD_LIBRARY_PATH, ...).  The compat driver
   works only on the L4T release it was made for: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803)
   elsewhere, the error NVIDIA's gives when a compat driver does not fit the running system.
   Loading a module dlopens the PTX JIT helper by bare name, as NVIDIA's driver does:
   CUDA_ERROR_JIT_COMPILER_NOT_FOUND (221) when it is not found.  */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include "jetson.h"

#ifndef CUDA_VERSION
#error "build with -DCUDA_VERSION=N"
#endif
#if !defined BOARD && !defined COMPAT
#error "build with -DBOARD or -DCOMPAT"
#endif

static char error_text[512] = "no error";
static int jit_version;

int
cuDriverGetVersion (int *version)
{
  *version = CUDA_VERSION;
  return 0;
}

int
cuGetErrorString (int error, const char **text)
{
  *text = error == 0 ? "no error" : error_text;
  return 0;
}

int
jetson_jit_version (void)
{
  return jit_version;
}

typedef int (*open_fn) (char *, size_t);

#ifdef NVRM_DLOPEN
/* The library's open function, or NULL with the loader's reason in MSG.  */
static open_fn
load_nvrm (const char *library, const char *symbol, char *msg, size_t size)
{
  void *handle = dlopen (library, RTLD_NOW);
  /* No tail call: dlopen must see this library as its caller (its RUNPATH counts).  */
  __asm__ volatile ("" ::: "memory");
  if (handle == NULL)
    {
      snprintf (msg, size, "nvrm-missing %s", dlerror ());
      return NULL;
    }
  open_fn open = (open_fn) dlsym (handle, symbol);
  if (open == NULL)
    snprintf (msg, size, "nvrm-missing %s lacks %s", library, symbol);
  return open;
}
#endif

int
cuInit (unsigned int flags)
{
  (void) flags;
#ifdef COMPAT
  /* Read like libnvos would: the compat driver checks the release before it loads anything.  */
  FILE *f = fopen ("/etc/nv_tegra_release", "r");
  int kernel = 0;
  if (f != NULL)
    {
      if (fscanf (f, "# R%d", &kernel) != 1)
        kernel = 0;
      fclose (f);
    }
  if (kernel != ACCEPTS_L4T)
    {
      snprintf (error_text, sizeof error_text,
                "mismatch version=%d accepts=%d kernel=%d", CUDA_VERSION, ACCEPTS_L4T, kernel);
      return CUDA_ERROR_SYSTEM_DRIVER_MISMATCH;
    }
#endif
#ifdef NVRM_DLOPEN
  static const char *const libraries[][2] = {
    { "libnvrm_gpu.so", "nvrm_gpu_open" },
    { "libnvrm_mem.so", "nvrm_mem_open" },
    { "libnvdla_runtime.so", "nvdla_runtime_open" },
  };
  open_fn opens[3];
  for (int i = 0; i < 3; i++)
    {
      opens[i] = load_nvrm (libraries[i][0], libraries[i][1], error_text, sizeof error_text);
      if (opens[i] == NULL)
        return CUDA_ERROR_UNKNOWN;
    }
#elif defined COMPAT
  open_fn opens[3] = { nvrm_gpu_open, nvrm_mem_open, nvdla_runtime_open };
#else
  open_fn opens[2] = { nvrm_gpu_open, nvrm_mem_open };
#endif
  for (size_t i = 0; i < sizeof opens / sizeof opens[0]; i++)
    if (opens[i] (error_text, sizeof error_text) != 0)
      return CUDA_ERROR_UNKNOWN;
  return 0;
}

int
cuModuleLoadData (void **module, const void *image)
{
  (void) image;
  void *jit = dlopen ("libnvidia-ptxjitcompiler.so.1", RTLD_NOW);
  /* No tail call: dlopen must see this library as its caller (its RUNPATH counts).  */
  __asm__ volatile ("" ::: "memory");
  if (jit == NULL)
    {
      snprintf (error_text, sizeof error_text, "jit-missing %s", dlerror ());
      return CUDA_ERROR_JIT_COMPILER_NOT_FOUND;
    }
  int (*version) (void) = (int (*) (void)) dlsym (jit, "nvptxjit_version");
  if (version == NULL)
    {
      snprintf (error_text, sizeof error_text, "jit-missing the helper lacks nvptxjit_version");
      return CUDA_ERROR_JIT_COMPILER_NOT_FOUND;
    }
  jit_version = version ();
  *module = jit;
  return 0;
}
