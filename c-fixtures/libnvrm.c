/* libnvrm_mem.so / libnvrm_gpu.so markers: Jetson driver libraries that live only in the
   tegra directory.  -DROLE=\"name\" says which copy it is.  */
#ifndef ROLE
#error "build with -DROLE=\"name\""
#endif

const char *
nvrm_role (void)
{
  return ROLE;
}
