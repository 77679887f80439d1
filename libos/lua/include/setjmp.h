/* Faultline's setjmp and longjmp for AArch64 (src/libc/setjmp.rs): the
 * callee-saved registers x19-x30, sp and d8-d15. */
#ifndef FAULTLINE_SETJMP_H
#define FAULTLINE_SETJMP_H
typedef unsigned long jmp_buf[22];
int setjmp(jmp_buf env);
_Noreturn void longjmp(jmp_buf env, int val);
#define _setjmp setjmp
#define _longjmp longjmp
#endif
