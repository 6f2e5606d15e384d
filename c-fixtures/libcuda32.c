/* A wrong-ELF-class impostor named libcuda.so.1: built with `gcc -m32 -nostdlib -shared`,
   so it needs no 32-bit libc (no multilib here).  Its ELFCLASS32 header is all that
   matters: a 64-bit loader must skip it and keep searching.  */
int
cuDriverGetVersion (int *version)
{
  *version = 32;
  return 0;
}
