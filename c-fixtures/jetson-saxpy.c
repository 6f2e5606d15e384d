/* The app: links libcudart.so.11, .12 or .13, the oldest runtime of its CUDA major
   version (DT_NEEDED, RUNPATH to the runtime's store path, as Nix builds it), with -DCXX_APP
   also libstdc++.so.6 (a C++ CUDA program), initialises CUDA, optionally (SAXPY_NSS=1)
   looks up a user that /etc/passwd does not list, so that libc asks the next NSS module,
   and prints what it ended up with:
     saxpy loaded path=P        every object mapped besides the program itself
     saxpy nss nobody=found|missing
     saxpy cuda rc=R kind detail...
   Exit status 0 when CUDA is usable.  */
#define _GNU_SOURCE
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jetson.h"
#include "loaded.h"

int
main (void)
{
  setvbuf (stdout, NULL, _IONBF, 0);
#ifdef CXX_APP
  /* A C++ program has libstdc++ loaded, and uses it, before CUDA starts.  */
  _ZdlPv (_Znwm (16));
#endif
  char msg[512];
  int rc = cudart_init (msg, sizeof msg);
  const char *nss = getenv ("SAXPY_NSS");
  if (nss != NULL && strcmp (nss, "1") == 0)
    {
      struct passwd *pw = getpwnam ("nobody");
      printf ("saxpy nss nobody=%s\n", pw != NULL ? "found" : "missing");
    }
  print_loaded ("saxpy");
  printf ("saxpy cuda rc=%d %s\n", rc, msg);
  return rc == 0 ? 0 : 1;
}
