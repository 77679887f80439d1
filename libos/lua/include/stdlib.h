/* Faultline's freestanding stdlib (src/libc). */
#ifndef FAULTLINE_STDLIB_H
#define FAULTLINE_STDLIB_H
#include <stddef.h>

#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1
#define RAND_MAX 2147483647

void *malloc(size_t size);
void *realloc(void *p, size_t size);
void free(void *p);
double strtod(const char *s, char **end);
unsigned long strtoul(const char *s, char **end, int base);
long strtol(const char *s, char **end, int base);
int abs(int x);
int rand(void);
void srand(unsigned seed);
char *getenv(const char *name);
int system(const char *cmd);
_Noreturn void exit(int status);
_Noreturn void abort(void);
int mkstemp(char *template);
#endif
