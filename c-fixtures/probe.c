/* The probe: loads libcuda.so.1 the way a scenario asks and prints, one record per line,
   what it got.  Built several times from this one source (see build.rs of loader-tests):
   with -DNEEDED it has libcuda.so.1 in DT_NEEDED; link flags add RUNPATH, RPATH,
   -z nodefaultlib or -static.

   Commands (argv, in order; the first failing one ends the run with status 1):
     env                 env LD_FALLBACK_PATH=<value> | env LD_FALLBACK_PATH unset
     secure              secure AT_SECURE=<0|1>
     needed              load how=needed ...        (the DT_NEEDED libcuda.so.1)
     dlopen NAME         load how=dlopen ...        (dlopen from the executable)
     try NAME            like dlopen, but a failure does not end the run
     dlmopen NAME        load how=dlmopen ...       (dlmopen (LM_ID_NEWLM, ...))
     shim PATH NAME      load how=shim ...          (dlopen of NAME from inside library PATH)
     same                same-map yes|no            (were the last two loads one link map?)
     serinfo             serinfo dir=D flags=F ...  (dlinfo RTLD_DI_SERINFO of the program)
   A load record: load how=H name=N role=R version=V path=P nvrm_mem=X nvrm_gpu=Y
   A failure:     fail how=H name=N error=<dlerror>  */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include "marker.h"

static struct link_map *maps[2];

static void
remember (struct link_map *map)
{
  maps[0] = maps[1];
  maps[1] = map;
}

static void
report (const char *how, const char *name, struct link_map *map,
        const char *(*role) (void), int (*version) (int *),
        const char *(*mem) (void), const char *(*gpu) (void))
{
  int v = -1;
  if (version != NULL)
    version (&v);
  printf ("load how=%s name=%s role=%s version=%d path=%s nvrm_mem=%s nvrm_gpu=%s\n",
          how, name, role != NULL ? role () : "?", v, map->l_name,
          mem != NULL ? mem () : "?", gpu != NULL ? gpu () : "?");
  remember (map);
}

static int
report_handle (const char *how, const char *name, void *handle)
{
  if (handle == NULL)
    {
      printf ("fail how=%s name=%s error=%s\n", how, name, dlerror ());
      return 1;
    }
  struct link_map *map = NULL;
  if (dlinfo (handle, RTLD_DI_LINKMAP, &map) != 0)
    {
      printf ("fail how=%s name=%s error=dlinfo: %s\n", how, name, dlerror ());
      return 1;
    }
  report (how, name, map,
          (const char *(*) (void)) dlsym (handle, "marker_role"),
          (int (*) (int *)) dlsym (handle, "cuDriverGetVersion"),
          (const char *(*) (void)) dlsym (handle, "marker_nvrm_mem"),
          (const char *(*) (void)) dlsym (handle, "marker_nvrm_gpu"));
  return 0;
}

static int
needed (void)
{
#ifdef NEEDED
  Dl_info info;
  struct link_map *map = NULL;
  if (dladdr1 ((void *) &marker_role, &info, (void **) &map, RTLD_DL_LINKMAP) == 0
      || map == NULL)
    {
      printf ("fail how=needed name=libcuda.so.1 error=dladdr1 found no map\n");
      return 1;
    }
  report ("needed", "libcuda.so.1", map, marker_role, cuDriverGetVersion,
          marker_nvrm_mem, marker_nvrm_gpu);
  return 0;
#else
  printf ("fail how=needed name=libcuda.so.1 error=probe built without -DNEEDED\n");
  return 1;
#endif
}

static int
shim (const char *path, const char *name)
{
  void *lib = dlopen (path, RTLD_NOW);
  if (lib == NULL)
    {
      printf ("fail how=shim name=%s error=%s\n", path, dlerror ());
      return 1;
    }
  void *(*open) (const char *) = (void *(*) (const char *)) dlsym (lib, "shim_dlopen");
  if (open == NULL)
    {
      printf ("fail how=shim name=%s error=no shim_dlopen\n", path);
      return 1;
    }
  return report_handle ("shim", name, open (name));
}

static int
serinfo (void)
{
  void *self = dlopen (NULL, RTLD_NOW);
  Dl_serinfo size;
  if (self == NULL || dlinfo (self, RTLD_DI_SERINFOSIZE, &size) != 0)
    {
      printf ("fail how=serinfo name=- error=%s\n", dlerror ());
      return 1;
    }
  Dl_serinfo *info = malloc (size.dls_size);
  if (info == NULL)
    return 1;
  info->dls_size = size.dls_size;
  info->dls_cnt = size.dls_cnt;
  if (dlinfo (self, RTLD_DI_SERINFO, info) != 0)
    {
      printf ("fail how=serinfo name=- error=%s\n", dlerror ());
      return 1;
    }
  for (unsigned int i = 0; i < info->dls_cnt; i++)
    printf ("serinfo dir=%s flags=%u\n", info->dls_serpath[i].dls_name,
            info->dls_serpath[i].dls_flags);
  free (info);
  return 0;
}

int
main (int argc, char **argv)
{
  /* Unbuffered, so that records interleave correctly with LD_AUDIT output.  */
  setvbuf (stdout, NULL, _IONBF, 0);
  for (int i = 1; i < argc; i++)
    {
      const char *cmd = argv[i];
      int failed = 0;
      if (strcmp (cmd, "env") == 0)
        {
          const char *value = getenv ("LD_FALLBACK_PATH");
          if (value != NULL)
            printf ("env LD_FALLBACK_PATH=%s\n", value);
          else
            printf ("env LD_FALLBACK_PATH unset\n");
        }
      else if (strcmp (cmd, "secure") == 0)
        printf ("secure AT_SECURE=%lu\n", getauxval (AT_SECURE));
      else if (strcmp (cmd, "needed") == 0)
        failed = needed ();
      else if (strcmp (cmd, "dlopen") == 0 && i + 1 < argc)
        {
          const char *name = argv[++i];
          failed = report_handle ("dlopen", name, dlopen (name, RTLD_NOW));
        }
      else if (strcmp (cmd, "try") == 0 && i + 1 < argc)
        {
          const char *name = argv[++i];
          report_handle ("try", name, dlopen (name, RTLD_NOW));
        }
      else if (strcmp (cmd, "dlmopen") == 0 && i + 1 < argc)
        {
          const char *name = argv[++i];
          failed = report_handle ("dlmopen", name, dlmopen (LM_ID_NEWLM, name, RTLD_NOW));
        }
      else if (strcmp (cmd, "shim") == 0 && i + 2 < argc)
        {
          failed = shim (argv[i + 1], argv[i + 2]);
          i += 2;
        }
      else if (strcmp (cmd, "same") == 0)
        printf ("same-map %s\n",
                maps[0] != NULL && maps[0] == maps[1] ? "yes" : "no");
      else if (strcmp (cmd, "serinfo") == 0)
        failed = serinfo ();
      else
        {
          printf ("fail how=usage name=%s error=unknown command or missing argument\n", cmd);
          return 2;
        }
      if (failed)
        return 1;
    }
  return 0;
}
