/* Faultline's freestanding stdio: the guest has a console and no files.
 * stdout and stderr write lines to the console; stdin is always at its end;
 * fopen finds no file. Implemented in src/libc (Rust) and csrc/printf.c. */
#ifndef FAULTLINE_STDIO_H
#define FAULTLINE_STDIO_H
#include <stdarg.h>
#include <stddef.h>

typedef struct faultline_file FILE;
typedef long fpos_t;

extern FILE *stdin;
extern FILE *stdout;
extern FILE *stderr;

#define EOF (-1)
#define BUFSIZ 512
#define L_tmpnam 32
#define SEEK_SET 0
#define SEEK_CUR 1
#define SEEK_END 2
#define _IOFBF 0
#define _IOLBF 1
#define _IONBF 2

int snprintf(char *buf, size_t size, const char *fmt, ...);
int sprintf(char *buf, const char *fmt, ...);
int vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int fprintf(FILE *f, const char *fmt, ...);
int printf(const char *fmt, ...);
int fscanf(FILE *f, const char *fmt, ...);

FILE *fopen(const char *path, const char *mode);
FILE *freopen(const char *path, const char *mode, FILE *f);
FILE *tmpfile(void);
FILE *popen(const char *cmd, const char *mode);
int pclose(FILE *f);
int fclose(FILE *f);
int fflush(FILE *f);
int fputs(const char *s, FILE *f);
int fputc(int c, FILE *f);
int putchar(int c);
int puts(const char *s);
size_t fwrite(const void *p, size_t size, size_t n, FILE *f);
size_t fread(void *p, size_t size, size_t n, FILE *f);
char *fgets(char *s, int n, FILE *f);
int getc(FILE *f);
int fgetc(FILE *f);
int ungetc(int c, FILE *f);
int feof(FILE *f);
int ferror(FILE *f);
void clearerr(FILE *f);
int fseek(FILE *f, long offset, int whence);
long ftell(FILE *f);
int fileno(FILE *f);
int setvbuf(FILE *f, char *buf, int mode, size_t size);
int remove(const char *path);
int rename(const char *from, const char *to);
char *tmpnam(char *s);
#endif
