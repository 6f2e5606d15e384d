/* The real-driver check's probe (cargo xtask jetson-replay --real-driver): dlopens the real
   libcuda.so.1 by bare name (so this program's RUNPATH, LD_LIBRARY_PATH and
   LD_FALLBACK_PATH decide which one), initialises CUDA, JIT-compiles a PTX kernel (run it
   with CUDA_CACHE_DISABLE=1 so that the driver compiles it, which loads its PTX JIT helper),
   runs it and checks the result.  No CUDA headers: the few driver API entry points are
   declared here.  Prints
     probe loaded path=P          every object mapped, at the end
     probe driver=V               cuDriverGetVersion
     probe device=NAME
     probe fail step=S rc=R name=N    or    probe ok
   Exit status 0 when the kernel ran and gave the right result.  */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "loaded.h"

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef void *CUmodule;
typedef void *CUfunction;
typedef unsigned long long CUdeviceptr;

static const char ptx[] =
  ".version 6.0\n"
  ".target sm_50\n"
  ".address_size 64\n"
  ".visible .entry add_one(.param .u64 data, .param .u32 n)\n"
  "{\n"
  "  .reg .pred %p<2>;\n"
  "  .reg .b32 %r<7>;\n"
  "  .reg .b64 %rd<5>;\n"
  "  ld.param.u64 %rd1, [data];\n"
  "  ld.param.u32 %r2, [n];\n"
  "  mov.u32 %r3, %ctaid.x;\n"
  "  mov.u32 %r4, %ntid.x;\n"
  "  mov.u32 %r5, %tid.x;\n"
  "  mad.lo.s32 %r1, %r3, %r4, %r5;\n"
  "  setp.ge.u32 %p1, %r1, %r2;\n"
  "  @%p1 bra DONE;\n"
  "  cvta.to.global.u64 %rd2, %rd1;\n"
  "  mul.wide.u32 %rd3, %r1, 4;\n"
  "  add.s64 %rd4, %rd2, %rd3;\n"
  "  ld.global.u32 %r6, [%rd4];\n"
  "  add.s32 %r6, %r6, 1;\n"
  "  st.global.u32 [%rd4], %r6;\n"
  "DONE:\n"
  "  ret;\n"
  "}\n";

static void *cuda;
static CUresult (*error_name) (CUresult, const char **);

static int
fail (const char *step, CUresult rc)
{
  const char *name = "?";
  if (error_name != NULL)
    error_name (rc, &name);
  printf ("probe fail step=%s rc=%d name=%s\n", step, rc, name);
  print_loaded ("probe");
  return 1;
}

#define LOAD(var, symbol)                                                     \
  do                                                                          \
    {                                                                         \
      *(void **) (&var) = dlsym (cuda, symbol);                               \
      if (var == NULL)                                                        \
        {                                                                     \
          printf ("probe fail step=dlsym rc=-1 name=%s\n", symbol);           \
          return 1;                                                           \
        }                                                                     \
    }                                                                         \
  while (0)

int
main (void)
{
  setvbuf (stdout, NULL, _IONBF, 0);
  cuda = dlopen ("libcuda.so.1", RTLD_NOW);
  /* No tail call: dlopen must see this program as its caller (its RUNPATH counts).  */
  __asm__ volatile ("" ::: "memory");
  if (cuda == NULL)
    {
      printf ("probe fail step=dlopen rc=-1 name=%s\n", dlerror ());
      print_loaded ("probe");
      return 1;
    }
  CUresult (*init) (unsigned int);
  CUresult (*version) (int *);
  CUresult (*device_get) (CUdevice *, int);
  CUresult (*device_name) (char *, int, CUdevice);
  CUresult (*ctx_create) (CUcontext *, unsigned int, CUdevice);
  CUresult (*module_load) (CUmodule *, const void *, unsigned int, void *, void **);
  CUresult (*get_function) (CUfunction *, CUmodule, const char *);
  CUresult (*mem_alloc) (CUdeviceptr *, size_t);
  CUresult (*htod) (CUdeviceptr, const void *, size_t);
  CUresult (*dtoh) (void *, CUdeviceptr, size_t);
  CUresult (*launch) (CUfunction, unsigned int, unsigned int, unsigned int, unsigned int,
                      unsigned int, unsigned int, unsigned int, void *, void **, void **);
  CUresult (*synchronize) (void);
  LOAD (error_name, "cuGetErrorName");
  LOAD (init, "cuInit");
  LOAD (version, "cuDriverGetVersion");
  LOAD (device_get, "cuDeviceGet");
  LOAD (device_name, "cuDeviceGetName");
  LOAD (ctx_create, "cuCtxCreate_v2");
  LOAD (module_load, "cuModuleLoadDataEx");
  LOAD (get_function, "cuModuleGetFunction");
  LOAD (mem_alloc, "cuMemAlloc_v2");
  LOAD (htod, "cuMemcpyHtoD_v2");
  LOAD (dtoh, "cuMemcpyDtoH_v2");
  LOAD (launch, "cuLaunchKernel");
  LOAD (synchronize, "cuCtxSynchronize");

  int driver = 0;
  version (&driver);
  printf ("probe driver=%d\n", driver);
  CUresult rc = init (0);
  if (rc != 0)
    return fail ("cuInit", rc);
  CUdevice dev;
  if ((rc = device_get (&dev, 0)) != 0)
    return fail ("cuDeviceGet", rc);
  char name[256] = "";
  device_name (name, sizeof name, dev);
  printf ("probe device=%s\n", name);
  CUcontext ctx;
  if ((rc = ctx_create (&ctx, 0, dev)) != 0)
    return fail ("cuCtxCreate", rc);
  CUmodule module;
  if ((rc = module_load (&module, ptx, 0, NULL, NULL)) != 0)
    return fail ("cuModuleLoadDataEx", rc);
  CUfunction function;
  if ((rc = get_function (&function, module, "add_one")) != 0)
    return fail ("cuModuleGetFunction", rc);
  enum { N = 256 };
  unsigned int host[N];
  for (unsigned int i = 0; i < N; i++)
    host[i] = i;
  CUdeviceptr data;
  if ((rc = mem_alloc (&data, sizeof host)) != 0)
    return fail ("cuMemAlloc", rc);
  if ((rc = htod (data, host, sizeof host)) != 0)
    return fail ("cuMemcpyHtoD", rc);
  unsigned int n = N;
  void *params[] = { &data, &n };
  if ((rc = launch (function, 1, 1, 1, N, 1, 1, 0, NULL, params, NULL)) != 0)
    return fail ("cuLaunchKernel", rc);
  if ((rc = synchronize ()) != 0)
    return fail ("cuCtxSynchronize", rc);
  if ((rc = dtoh (host, data, sizeof host)) != 0)
    return fail ("cuMemcpyDtoH", rc);
  for (unsigned int i = 0; i < N; i++)
    if (host[i] != i + 1)
      {
        printf ("probe fail step=result rc=-1 name=element-%u-is-%u\n", i, host[i]);
        print_loaded ("probe");
        return 1;
      }
  printf ("probe ok\n");
  print_loaded ("probe");
  return 0;
}
