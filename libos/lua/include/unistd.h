/* Faultline's unistd.h: declared for Lua's io and os libraries, which the
 * guest never opens (nothing here is linked). */
#ifndef FAULTLINE_UNISTD_H
#define FAULTLINE_UNISTD_H
int close(int fd);
int isatty(int fd);

#endif
