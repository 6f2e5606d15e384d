/* The interface every libcuda.so.1 marker build exports. */
#ifndef LD_FALLBACK_MARKER_H
#define LD_FALLBACK_MARKER_H

/* Like the CUDA driver API: the version this build reports (ROLE_VERSION). */
int cuDriverGetVersion(int *version);
/* Which copy this is: "compat", "driver", "system", ... (the ROLE of the build). */
const char *marker_role(void);
/* For the compat build: where its dlopen of libnvrm_mem.so / libnvrm_gpu.so landed,
   "role@path" or "missing"; "-" for builds that do not load them. */
const char *marker_nvrm_mem(void);
const char *marker_nvrm_gpu(void);

#endif
