/* libnvrm_gpu.so / libnvrm_mem.so (-DNVRM=gpu or mem, -DL4T_RELEASE=35): board libraries of
   one L4T release.  They need libnvos.so (DT_NEEDED, no RUNPATH: on a JetPack host they are
   found through the host's ld.so.cache, which a Nix glibc does not read) and refuse a
   kernel of another release, as a user-space driver built for another kernel would.  */
#include <stdio.h>
#include "jetson.h"

#ifndef NVRM
#error "build with -DNVRM=gpu or -DNVRM=mem"
#endif
#ifndef L4T_RELEASE
#error "build with -DL4T_RELEASE=N"
#endif

#define NAME_(x) #x
#define NAME(x) NAME_ (x)
#define OPEN_(x) nvrm_##x##_open
#define OPEN(x) OPEN_ (x)

int
OPEN (NVRM) (char *msg, size_t size)
{
  int kernel = nvos_kernel_release ();
  if (kernel != L4T_RELEASE)
    {
      snprintf (msg, size, "nvrm-release lib=libnvrm_%s built=%d kernel=%d",
                NAME (NVRM), L4T_RELEASE, kernel);
      return 1;
    }
  return 0;
}
