/* libnvidia-ptxjitcompiler.so.1 (-DJIT_VERSION=12020): the PTX JIT helper a driver ships
   beside its libcuda.so.1 and loads by bare name when a module needs compiling.  It tells
   its version, so that a driver running with another driver's helper shows.  */
#include "jetson.h"

#ifndef JIT_VERSION
#error "build with -DJIT_VERSION=N"
#endif

int
nvptxjit_version (void)
{
  return JIT_VERSION;
}
