/* The real-binary probe: loads NVIDIA's real libcudart.so.11.0 from the path given (as a
   program whose RUNPATH holds the runtime's directory would), asks it for the driver version,
   and prints one record:
     cudart rc=R version=V
   V is what cudaDriverGetVersion reports: the CUDA version of the libcuda.so.1 the runtime
   found (12020 for driver 535, no GPU needed), or 0 when it found none.  Which libcuda.so.1
   that was, the LD_AUDIT module tells (audit.c, la_objopen): the runtime dlcloses it again.  */
#include <dlfcn.h>
#include <stdio.h>

int
main (int argc, char **argv)
{
  setvbuf (stdout, NULL, _IONBF, 0);
  if (argc != 2)
    {
      printf ("fail how=usage name=- error=usage: cudart-probe /path/to/libcudart.so.11.0\n");
      return 2;
    }
  void *cudart = dlopen (argv[1], RTLD_NOW);
  if (cudart == NULL)
    {
      printf ("fail how=dlopen name=%s error=%s\n", argv[1], dlerror ());
      return 1;
    }
  int (*driver_version) (int *)
    = (int (*) (int *)) dlsym (cudart, "cudaDriverGetVersion");
  if (driver_version == NULL)
    {
      printf ("fail how=dlsym name=cudaDriverGetVersion error=%s\n", dlerror ());
      return 1;
    }
  int version = -1;
  int rc = driver_version (&version);
  printf ("cudart rc=%d version=%d\n", rc, version);
  return 0;
}
