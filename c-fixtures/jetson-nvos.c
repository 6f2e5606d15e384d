/* libnvos.so: what every libnvrm_* needs (DT_NEEDED), itself needing libnvsocsys.so (and
   libnvtegrahv.so on R36, -DTEGRAHV).  Reads the L4T release of the running board,
   "# R35 (release), REVISION: ...", from /etc/nv_tegra_release; 0 if unreadable.  */
#include <stdio.h>
#include "jetson.h"

int
nvos_kernel_release (void)
{
  /* Uses its dependencies, so that they are needed for real.  */
  if (l4t_nvsocsys () == 0)
    return 0;
#ifdef TEGRAHV
  if (l4t_nvtegrahv () == 0)
    return 0;
#endif
  FILE *f = fopen ("/etc/nv_tegra_release", "r");
  if (f == NULL)
    return 0;
  int release = 0;
  if (fscanf (f, "# R%d", &release) != 1)
    release = 0;
  fclose (f);
  return release;
}
