/* libcuda.so.1, the board's (-DBOARD) or cuda_compat's (-DCOMPAT -DACCEPTS_L4T=35), reporting
   CUDA_VERSION (12020 for 12.2).  The board's needs its own libnvrm_gpu/mem by DT_NEEDED; the
   compat one needs libnvrm_gpu/mem and libnvdla_runtime by DT_NEEDED too (linked against
   stubs at build time, as nixpkgs' autoPatchelf shows), or with -DNVRM_DLOPEN by dlopen in
   cuInit (searched with this library's RUNPATH, LD_LIBRARY_PATH, ...).  The compat driver
   works only on the L4T release it was made for: CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803)
   elsewhere, the error NVIDIA's gives when a compat driver does not fit the running system.
   Loading a module dlopens the PTX JIT helper by bare name, as NVIDIA's driver does:
   CUDA_ERROR_JIT_COMPILER_NOT_FOUND (221) when it is not found, and
   CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222) when the PTX was made by a toolkit newer than the
   helper (the PTX names its toolkit: "toolkit=12090").  */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jetson.h"

#ifndef CUDA_VERSION
#error "build with -DCUDA_VERSION=N"
#endif
#if !defined BOARD && !defined COMPAT && !defined STUB
#error "build with -DBOARD, -DCOMPAT or -DSTUB"
#endif

#ifdef STUB
/* cuda_cudart's lib/stubs/libcuda.so: links, and answers CUDA_ERROR_STUB_LIBRARY.  */
int
cuDriverGetVersion (int *version)
{
  (void) version;
  return CUDA_ERROR_STUB_LIBRARY;
}

int
cuInit (unsigned int flags)
{
  (void) flags;
  return CUDA_ERROR_STUB_LIBRARY;
}

int
cuGetErrorString (int error, const char **text)
{
  (void) error;
  *text = "stub";
  return 0;
}

int
cuModuleLoadData (void **module, const void *image)
{
  (void) module;
  (void) image;
  return CUDA_ERROR_STUB_LIBRARY;
}

int
jetson_jit_version (void)
{
  return 0;
}

int
jetson_load_helper (const char *soname, char *msg, size_t size)
{
  snprintf (msg, size, "stub %s", soname);
  return -1;
}
#else

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

#ifdef COMPAT
/* Not NVIDIA's: tells the runtime this is cuda_compat's driver (its version may equal the
   board's).  */
int
jetson_is_compat (void)
{
  return 1;
}
#endif

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
  /* Forward compatibility only: a board driver as new as this one is refused.  */
  int board = 0;
  f = fopen ("/etc/jetson-replay-board", "r");
  if (f != NULL)
    {
      if (fscanf (f, "driver=%d", &board) != 1)
        board = 0;
      fclose (f);
    }
  if (board >= CUDA_VERSION)
    {
      snprintf (error_text, sizeof error_text,
                "not-newer version=%d board=%d", CUDA_VERSION, board);
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
jetson_load_helper (const char *soname, char *msg, size_t size)
{
  void *helper = dlopen (soname, RTLD_NOW);
  /* No tail call: dlopen must see this library as its caller (its RUNPATH counts).  */
  __asm__ volatile ("" ::: "memory");
  if (helper == NULL)
    {
      snprintf (msg, size, "%s", dlerror ());
      return -1;
    }
  int (*version) (void) = (int (*) (void)) dlsym (helper, "nvptxjit_version");
  if (version == NULL)
    {
      snprintf (msg, size, "%s lacks nvptxjit_version", soname);
      return -1;
    }
  return version ();
}

int
cuModuleLoadData (void **module, const void *image)
{
  /* SASS for the device needs no JIT: the helper is not loaded.  */
  if (strncmp ((const char *) image, "sass", 4) == 0)
    {
      jit_version = 0;
      *module = error_text;
      return 0;
    }
  const char *disabled = getenv ("CUDA_DISABLE_PTX_JIT");
  if (disabled != NULL && strcmp (disabled, "1") == 0)
    {
      snprintf (error_text, sizeof error_text, "jit-disabled CUDA_DISABLE_PTX_JIT=1");
      return CUDA_ERROR_JIT_COMPILATION_DISABLED;
    }
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
  /* PTX made by a toolkit newer than the JIT compiler: "the PTX was generated by a compiler
     newer than what is supported by the CUDA driver and PTX JIT compiler".  */
  const char *made = strstr ((const char *) image, "toolkit=");
  int toolkit = made != NULL ? atoi (made + strlen ("toolkit=")) : 0;
  if (toolkit > jit_version)
    {
      snprintf (error_text, sizeof error_text, "ptx-unsupported toolkit=%d jit=%d", toolkit,
                jit_version);
      return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
    }
  *module = jit;
  return 0;
}
#endif /* !STUB */
