/* What a program has mapped, as the harness reads it: a line "WHO loaded path=P" for every
   object mapped from a path (the program itself has none), in the loader's order.  Shared by
   the programs that report it (cuda-jit-probe.c: "probe", jetson-saxpy.c: "saxpy").  The
   includer defines _GNU_SOURCE first, for dl_iterate_phdr.  */
#ifndef LD_FALLBACK_LOADED_H
#define LD_FALLBACK_LOADED_H

#include <link.h>
#include <stdio.h>

static int
print_one_loaded (struct dl_phdr_info *info, size_t size, void *who)
{
  (void) size;
  if (info->dlpi_name[0] == '/')
    printf ("%s loaded path=%s\n", (const char *) who, info->dlpi_name);
  return 0;
}

/* Prints every object mapped now, each line starting with WHO.  */
static void
print_loaded (const char *who)
{
  dl_iterate_phdr (print_one_loaded, (void *) who);
}

#endif
