/* LD_AUDIT module: prints every la_objsearch candidate for libcuda.so.1 with its flag, so
   that a scenario can see which search-path class the loader reports for it, and every
   libcuda* object mapped (la_objopen), so that a scenario sees which copy NVIDIA's real
   runtime used even though the runtime dlcloses it again.  */
#define _GNU_SOURCE
#include <link.h>
#include <stdio.h>
#include <string.h>

unsigned int
la_version (unsigned int version)
{
  /* Tells the harness that the module loaded at all.  */
  dprintf (1, "audit la_version\n");
  return version < LAV_CURRENT ? version : LAV_CURRENT;
}

static const char *
flag_name (unsigned int flag)
{
  switch (flag)
    {
    case LA_SER_ORIG: return "LA_SER_ORIG";
    case LA_SER_LIBPATH: return "LA_SER_LIBPATH";
    case LA_SER_RUNPATH: return "LA_SER_RUNPATH";
    case LA_SER_CONFIG: return "LA_SER_CONFIG";
    case LA_SER_DEFAULT: return "LA_SER_DEFAULT";
    case LA_SER_SECURE: return "LA_SER_SECURE";
    default: return "other";
    }
}

char *
la_objsearch (const char *name, uintptr_t *cookie, unsigned int flag)
{
  (void) cookie;
  if (strstr (name, "libcuda.so.1") != NULL)
    dprintf (1, "audit objsearch flag=%s name=%s\n", flag_name (flag), name);
  return (char *) name;
}

unsigned int
la_objopen (struct link_map *map, Lmid_t lmid, uintptr_t *cookie)
{
  (void) lmid;
  (void) cookie;
  const char *base = strrchr (map->l_name, '/');
  base = base != NULL ? base + 1 : map->l_name;
  if (strncmp (base, "libcuda", 7) == 0 && strncmp (base, "libcudart", 9) != 0)
    dprintf (1, "audit objopen path=%s\n", map->l_name);
  return 0;
}
