/* Faultline's assert: a failed one stops the kernel with its place. */
#ifndef FAULTLINE_ASSERT_H
#define FAULTLINE_ASSERT_H
_Noreturn void faultline_assert_failed(const char *expr, const char *file, int line);
#ifdef NDEBUG
#define assert(e) ((void)0)
#else
#define assert(e) ((e) ? (void)0 : faultline_assert_failed(#e, __FILE__, __LINE__))
#endif
#endif
