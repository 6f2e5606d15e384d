/* A small library of the board's driver directory (-DL4T_LIB=nvsocsys, nvtegrahv, nvrm_chip
   or nvrm_host1x; -DL4T_RELEASE=35): what libnvos.so and libnvrm_* need besides each other.
   It only has to be found; it returns its release.  */
#include "jetson.h"

#ifndef L4T_LIB
#error "build with -DL4T_LIB=name"
#endif
#ifndef L4T_RELEASE
#error "build with -DL4T_RELEASE=N"
#endif

#define FN_(x) l4t_##x
#define FN(x) FN_ (x)

int
FN (L4T_LIB) (void)
{
  return L4T_RELEASE;
}
