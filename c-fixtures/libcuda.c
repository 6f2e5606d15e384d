/* One source, many builds of libcuda.so.1 (SONAME libcuda.so.1), like glibc's
   elf/markermod*.c: each build differs only in the identity it reports, set with
   -DROLE=\"name\" -DROLE_VERSION=N.  With -DLOAD_NVRM the build behaves like the Jetson
   cuda_compat driver: its constructor dlopens libnvrm_mem.so and libnvrm_gpu.so, which
   only exist in the tegra driver directory.  */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include "marker.h"

#ifndef ROLE
#error "build with -DROLE=\"name\""
#endif
#ifndef ROLE_VERSION
#error "build with -DROLE_VERSION=N"
#endif

static char nvrm_mem[512] = "-";
static char nvrm_gpu[512] = "-";

int
cuDriverGetVersion (int *version)
{
  *version = ROLE_VERSION;
  return 0;
}

const char *
marker_role (void)
{
  return ROLE;
}

const char *
marker_nvrm_mem (void)
{
  return nvrm_mem;
}

const char *
marker_nvrm_gpu (void)
{
  return nvrm_gpu;
}

#ifdef LOAD_NVRM
static void
load_nvrm (const char *name, char *out, size_t size)
{
  void *handle = dlopen (name, RTLD_NOW);
  if (handle == NULL)
    {
      snprintf (out, size, "missing");
      return;
    }
  const char *(*role) (void) = (const char *(*) (void)) dlsym (handle, "nvrm_role");
  struct link_map *map = NULL;
  if (role == NULL || dlinfo (handle, RTLD_DI_LINKMAP, &map) != 0)
    {
      snprintf (out, size, "broken");
      return;
    }
  snprintf (out, size, "%s@%s", role (), map->l_name);
}

__attribute__ ((constructor)) static void
init (void)
{
  load_nvrm ("libnvrm_mem.so", nvrm_mem, sizeof nvrm_mem);
  load_nvrm ("libnvrm_gpu.so", nvrm_gpu, sizeof nvrm_gpu);
}
#endif
