/* A libcudart-like shim: dlopens a library from inside itself, so that the loader
   searches with this object's DT_RUNPATH (built once with a RUNPATH, once without).  */
#include <dlfcn.h>

void *
shim_dlopen (const char *name)
{
  void *handle = dlopen (name, RTLD_NOW);
  /* No tail call: dlopen must see this library, not our caller, as the one calling.  */
  __asm__ volatile ("" ::: "memory");
  return handle;
}
