/* Faultline's dlfcn.h: declared for Lua's package library, which the guest
 * never opens (nothing here is linked: the guest loads no libraries). */
#ifndef FAULTLINE_DLFCN_H
#define FAULTLINE_DLFCN_H
#define RTLD_NOW 2
#define RTLD_LOCAL 0
void *dlopen(const char *path, int flags);
void *dlsym(void *lib, const char *name);
int dlclose(void *lib);
char *dlerror(void);
#endif
