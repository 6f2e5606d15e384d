/* A saxpy-like CUDA application for the Jetson scenario: links libcudart.so.12 and fails
   with the runtime's message when the driver it ends up with is unusable.  */
#include <stdio.h>

int cudart_init (char *msg, size_t size, int *driver, const char **role,
                 const char **mem, const char **gpu);

int
main (void)
{
  char msg[512];
  int driver = -1;
  const char *role = "?", *mem = "?", *gpu = "?";
  int failed = cudart_init (msg, sizeof msg, &driver, &role, &mem, &gpu);
  printf ("saxpy driver=%d role=%s nvrm_mem=%s nvrm_gpu=%s\n", driver, role, mem, gpu);
  if (failed)
    {
      printf ("saxpy error=%s\n", msg);
      return 1;
    }
  printf ("saxpy ok\n");
  return 0;
}
