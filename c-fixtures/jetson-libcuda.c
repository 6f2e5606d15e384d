/* libcuda.so.1, the board's (-DBOARD) or cuda_compat's (-DCOMPAT -DACCEPTS_L4T=35), reporting
   CUDA_VERSION (12020 for 12.2).  The board's needs its own libnvrm_* by DT_NEEDED; the
   compat one needs them by DT_NEEDED too (linked against stubs at build time, as nixpkgs'
   autoPatchelf shows), or with -DNVRM_DLOPEN by dlopen in cuInit (searched with this
   library's RUNPATH, LD_LIBRARY_PATH, ...).  The compat driver works only on the L4T release
   it was made for: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803) elsewhere, as NVIDIA's does.  */
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

#ifdef NVRM_DLOPEN
/* The library's open function, or NULL with the loader's reason in MSG.  */
static int (*
load_nvrm (const char *library, const char *symbol, char *msg, size_t size)) (char *, size_t)
{
  void *handle = dlopen (library, RTLD_NOW);
  /* No tail call: dlopen must see this library as its caller (its RUNPATH counts).  */
  __asm__ volatile ("" ::: "memory");
  if (handle == NULL)
    {
      snprintf (msg, size, "nvrm-missing %s", dlerror ());
      return NULL;
    }
  int (*open) (char *, size_t) = (int (*) (char *, size_t)) dlsym (handle, symbol);
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
  int (*gpu) (char *, size_t)
    = load_nvrm ("libnvrm_gpu.so", "nvrm_gpu_open", error_text, sizeof error_text);
  if (gpu == NULL)
    return CUDA_ERROR_UNKNOWN;
  int (*mem) (char *, size_t)
    = load_nvrm ("libnvrm_mem.so", "nvrm_mem_open", error_text, sizeof error_text);
  if (mem == NULL)
    return CUDA_ERROR_UNKNOWN;
#else
  int (*gpu) (char *, size_t) = nvrm_gpu_open;
  int (*mem) (char *, size_t) = nvrm_mem_open;
#endif
  if (gpu (error_text, sizeof error_text) != 0 || mem (error_text, sizeof error_text) != 0)
    return CUDA_ERROR_UNKNOWN;
  return 0;
}
