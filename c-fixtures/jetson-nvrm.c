/* libnvrm_gpu.so, libnvrm_mem.so, libnvdla_runtime.so (-DOPEN=nvrm_gpu_open
   -DLIBNAME="libnvrm_gpu" -DL4T_RELEASE=35): board libraries of one L4T release.  They need
   libnvos.so and the directory's other libraries (DT_NEEDED, no RUNPATH: on a JetPack host
   they are found through the host's ld.so.cache, which a Nix glibc does not read), with
   -DUSES_LIBSTDCXX also libstdc++.so.6, and refuse a kernel of another release, as a
   user-space driver built for another kernel would.  */
#include <stdio.h>
#include "jetson.h"

#ifndef OPEN
#error "build with -DOPEN=nvrm_gpu_open"
#endif
#ifndef LIBNAME
#error "build with -DLIBNAME=\"libnvrm_gpu\""
#endif
#ifndef L4T_RELEASE
#error "build with -DL4T_RELEASE=N"
#endif

int
OPEN (char *msg, size_t size)
{
#ifdef USES_LIBSTDCXX
  /* A C++ library allocates through libstdc++: the one the process has must work.  */
  void *object = _Znwm (64);
  _ZdlPv (object);
#endif
#ifdef USES_HOST1X
  if (l4t_nvrm_host1x () != L4T_RELEASE)
    {
      snprintf (msg, size, "nvrm-release lib=libnvrm_host1x built=%d", L4T_RELEASE);
      return 1;
    }
#endif
#ifdef USES_CHIP
  if (l4t_nvrm_chip () != L4T_RELEASE)
    {
      snprintf (msg, size, "nvrm-release lib=libnvrm_chip built=%d", L4T_RELEASE);
      return 1;
    }
#endif
  int kernel = nvos_kernel_release ();
  if (kernel != L4T_RELEASE)
    {
      snprintf (msg, size, "nvrm-release lib=%s built=%d kernel=%d", LIBNAME, L4T_RELEASE,
                kernel);
      return 1;
    }
  return 0;
}
