/* Faultline's time.h: declared for Lua's os library, which the guest never
 * opens (nothing here is linked). */
#ifndef FAULTLINE_TIME_H
#define FAULTLINE_TIME_H
#include <stddef.h>
typedef long time_t;
typedef long clock_t;
#define CLOCKS_PER_SEC 1000000L
struct tm {
    int tm_sec, tm_min, tm_hour, tm_mday, tm_mon, tm_year, tm_wday, tm_yday, tm_isdst;
};
clock_t clock(void);
time_t time(time_t *t);
time_t mktime(struct tm *tm);
double difftime(time_t a, time_t b);
struct tm *gmtime(const time_t *t);
struct tm *localtime(const time_t *t);
size_t strftime(char *s, size_t max, const char *fmt, const struct tm *tm);
#endif
