/* Faultline's errno: one value (the guest runs Lua on one core at a time). */
#ifndef FAULTLINE_ERRNO_H
#define FAULTLINE_ERRNO_H
extern int errno;
#define ENOENT 2
#define EIO 5
#define ENOMEM 12
#define EINVAL 22
#define ERANGE 34
#define ENOSYS 38
#endif
