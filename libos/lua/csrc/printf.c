/* The printf family for Faultline's guest, written for Lua's needs: flags
 * "-+ #0", width and precision (digits or '*'), the lengths hh h l ll z t j
 * L, and the conversions d i u o x X c s p % e E f F g G. Floating-point
 * digits come from Rust (faultline_format_double in src/libc/float.rs),
 * whose formatting is exactly rounded; this file lays out signs, prefixes
 * and padding. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t faultline_format_double(char *out, size_t cap, double v, int conv, int prec, int alt);
size_t faultline_write(FILE *f, const char *p, size_t n);

/* Where formatted characters go: at most cap - 1 of them into buf (which is
 * then terminated), len counting every one. */
struct sink {
    char *buf;
    size_t cap;
    size_t len;
};

static void put(struct sink *s, char c)
{
    if (s->len + 1 < s->cap)
        s->buf[s->len] = c;
    s->len++;
}

static void put_n(struct sink *s, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        put(s, p[i]);
}

static void pad(struct sink *s, char c, int n)
{
    for (; n > 0; n--)
        put(s, c);
}

struct spec {
    int left, plus, space, alt, zero;
    int width;
    int prec; /* -1 when not given */
};

/* Lays out one field: sign or prefix, then zeros up to zeros, then body,
 * padded to the spec's width. */
static void field(struct sink *s, const struct spec *sp, const char *prefix, int zeros,
                  const char *body, size_t n)
{
    int plen = (int)strlen(prefix);
    int total = plen + zeros + (int)n;
    int fill = sp->width > total ? sp->width - total : 0;
    if (!sp->left && !sp->zero)
        pad(s, ' ', fill);
    put_n(s, prefix, (size_t)plen);
    if (!sp->left && sp->zero)
        pad(s, '0', fill);
    pad(s, '0', zeros);
    put_n(s, body, n);
    if (sp->left)
        pad(s, ' ', fill);
}

static void integer(struct sink *s, struct spec *sp, char conv, uintmax_t mag, int negative)
{
    char digits[32];
    const char *set = conv == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
    unsigned base = conv == 'o' ? 8 : (conv == 'x' || conv == 'X') ? 16 : 10;
    size_t n = 0;
    char body[32];
    const char *prefix = "";
    int zeros;

    while (mag != 0) {
        digits[n++] = set[mag % base];
        mag /= base;
    }
    for (size_t i = 0; i < n; i++)
        body[i] = digits[n - 1 - i];
    if (sp->prec < 0 && n == 0)
        body[n++] = '0';
    if (sp->prec >= 0)
        sp->zero = 0;
    zeros = sp->prec > (int)n ? sp->prec - (int)n : 0;
    if (negative)
        prefix = "-";
    else if ((conv == 'd' || conv == 'i') && sp->plus)
        prefix = "+";
    else if ((conv == 'd' || conv == 'i') && sp->space)
        prefix = " ";
    else if (sp->alt && base == 16 && n != 0 && !(n == 1 && body[0] == '0'))
        prefix = conv == 'X' ? "0X" : "0x";
    else if (sp->alt && base == 8 && zeros == 0 && (n == 0 || body[0] != '0'))
        zeros = 1;
    field(s, sp, prefix, zeros, body, n);
}

static void floating(struct sink *s, struct spec *sp, char conv, double v)
{
    char body[512];
    int prec = sp->prec < 0 ? 6 : sp->prec;
    const char *prefix = "";
    size_t n;

    /* Lua asks for at most 99 digits; 120 keeps any request in body. */
    if (prec > 120)
        prec = 120;
    n = faultline_format_double(body, sizeof body, v, conv, prec, sp->alt);
    if (__builtin_signbit(v))
        prefix = "-";
    else if (sp->plus)
        prefix = "+";
    else if (sp->space)
        prefix = " ";
    if (v != v || v == __builtin_huge_val() || v == -__builtin_huge_val())
        sp->zero = 0;
    field(s, sp, prefix, 0, body, n);
}

static int number_of(const char **f)
{
    int n = 0;
    while (**f >= '0' && **f <= '9') {
        if (n < 100000)
            n = n * 10 + (**f - '0');
        (*f)++;
    }
    return n;
}

int vsnprintf(char *buf, size_t cap, const char *f, va_list ap)
{
    struct sink s = {buf, cap, 0};
    while (*f) {
        struct spec sp = {0, 0, 0, 0, 0, 0, -1};
        const char *start = f;
        int longs = 0, size_t_arg = 0;
        char conv;

        if (*f != '%') {
            put(&s, *f++);
            continue;
        }
        f++;
        for (;; f++) {
            if (*f == '-')
                sp.left = 1;
            else if (*f == '+')
                sp.plus = 1;
            else if (*f == ' ')
                sp.space = 1;
            else if (*f == '#')
                sp.alt = 1;
            else if (*f == '0')
                sp.zero = 1;
            else
                break;
        }
        if (*f == '*') {
            sp.width = va_arg(ap, int);
            if (sp.width < 0) {
                sp.left = 1;
                sp.width = -sp.width;
            }
            f++;
        } else {
            sp.width = number_of(&f);
        }
        if (*f == '.') {
            f++;
            if (*f == '*') {
                sp.prec = va_arg(ap, int);
                if (sp.prec < 0)
                    sp.prec = -1;
                f++;
            } else {
                sp.prec = number_of(&f);
            }
        }
        if (sp.left)
            sp.zero = 0;
        for (;; f++) {
            if (*f == 'l')
                longs++;
            else if (*f == 'z' || *f == 't' || *f == 'j')
                size_t_arg = 1;
            else if (*f != 'h' && *f != 'L')
                break;
        }
        conv = *f;
        if (conv)
            f++;
        switch (conv) {
        case 'd':
        case 'i': {
            intmax_t v = size_t_arg ? (intmax_t)va_arg(ap, ptrdiff_t)
                         : longs    ? (intmax_t)va_arg(ap, long)
                                    : (intmax_t)va_arg(ap, int);
            uintmax_t mag = v < 0 ? (uintmax_t)0 - (uintmax_t)v : (uintmax_t)v;
            integer(&s, &sp, conv, mag, v < 0);
            break;
        }
        case 'u':
        case 'o':
        case 'x':
        case 'X': {
            uintmax_t v = size_t_arg ? (uintmax_t)va_arg(ap, size_t)
                          : longs    ? (uintmax_t)va_arg(ap, unsigned long)
                                     : (uintmax_t)va_arg(ap, unsigned);
            integer(&s, &sp, conv, v, 0);
            break;
        }
        case 'p': {
            uintptr_t v = (uintptr_t)va_arg(ap, void *);
            sp.alt = 1;
            integer(&s, &sp, 'x', v, 0);
            break;
        }
        case 'c': {
            char c = (char)va_arg(ap, int);
            sp.zero = 0;
            field(&s, &sp, "", 0, &c, 1);
            break;
        }
        case 's': {
            const char *str = va_arg(ap, const char *);
            size_t n = 0;
            if (str == NULL)
                str = "(null)";
            while (str[n] && (sp.prec < 0 || n < (size_t)sp.prec))
                n++;
            sp.zero = 0;
            field(&s, &sp, "", 0, str, n);
            break;
        }
        case 'e':
        case 'E':
        case 'f':
        case 'F':
        case 'g':
        case 'G':
            floating(&s, &sp, conv, va_arg(ap, double));
            break;
        case '%':
            put(&s, '%');
            break;
        default:
            /* Not a conversion this printf knows: written as it stands. */
            put_n(&s, start, (size_t)(f - start));
            break;
        }
    }
    if (cap != 0)
        buf[s.len < cap ? s.len : cap - 1] = '\0';
    return s.len > 0x7fffffff ? 0x7fffffff : (int)s.len;
}

int snprintf(char *buf, size_t cap, const char *f, ...)
{
    va_list ap;
    int n;
    va_start(ap, f);
    n = vsnprintf(buf, cap, f, ap);
    va_end(ap);
    return n;
}

int sprintf(char *buf, const char *f, ...)
{
    va_list ap;
    int n;
    va_start(ap, f);
    n = vsnprintf(buf, SIZE_MAX, f, ap);
    va_end(ap);
    return n;
}

static int vfprintf_to(FILE *file, const char *f, va_list ap)
{
    char small[256];
    va_list again;
    int n;
    va_copy(again, ap);
    n = vsnprintf(small, sizeof small, f, ap);
    if ((size_t)n < sizeof small) {
        faultline_write(file, small, (size_t)n);
    } else {
        char *big = malloc((size_t)n + 1);
        if (big != NULL) {
            vsnprintf(big, (size_t)n + 1, f, again);
            faultline_write(file, big, (size_t)n);
            free(big);
        }
    }
    va_end(again);
    return n;
}

int fprintf(FILE *file, const char *f, ...)
{
    va_list ap;
    int n;
    va_start(ap, f);
    n = vfprintf_to(file, f, ap);
    va_end(ap);
    return n;
}

int printf(const char *f, ...)
{
    va_list ap;
    int n;
    va_start(ap, f);
    n = vfprintf_to(stdout, f, ap);
    va_end(ap);
    return n;
}
