/* The app: links libcudart.so.12 (DT_NEEDED, RUNPATH to the runtime's store path, as Nix
   builds it), initialises CUDA, optionally (SAXPY_NSS=1) looks a user up through NSS, and
   prints what it ended up with:
     saxpy loaded path=P        every libcuda*, libnvrm_*, libnvos, libnss_compat* mapped
     saxpy cuda rc=R kind detail...
   Exit status 0 when CUDA is usable.  */
#define _GNU_SOURCE
#include <link.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jetson.h"

static int
print_loaded (struct dl_phdr_info *info, size_t size, void *data)
{
  (void) size;
  (void) data;
  const char *name = info->dlpi_name;
  const char *base = strrchr (name, '/');
  base = base != NULL ? base + 1 : name;
  static const char *const prefixes[] = { "libcuda.", "libnvrm_", "libnvos", "libnss_compat" };
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
    if (strncmp (base, prefixes[i], strlen (prefixes[i])) == 0)
      printf ("saxpy loaded path=%s\n", name);
  return 0;
}

int
main (void)
{
  setvbuf (stdout, NULL, _IONBF, 0);
  char msg[512];
  int rc = cudart_init (msg, sizeof msg);
  const char *nss = getenv ("SAXPY_NSS");
  if (nss != NULL && strcmp (nss, "1") == 0)
    {
      struct passwd *pw = getpwnam ("root");
      printf ("saxpy nss root=%s\n", pw != NULL ? "found" : "missing");
    }
  dl_iterate_phdr (print_loaded, NULL);
  printf ("saxpy cuda rc=%d %s\n", rc, msg);
  return rc == 0 ? 0 : 1;
}
