/* Numbers as text; see fmtnum.h.
 *
 * "%.17g" of a finite v != 0 is v's exact value rounded (to nearest, ties
 * to even) to 17 significant digits. With v = m * 2^e (m < 2^53, e < 0)
 * and X = floor(log10|v|), those digits are q = round(m * 10^k / 2^-e) for
 * k = 16 - X: m * 10^k is an integer of at most 256 bits for k <= 58, so q
 * and the remainder that decides the rounding come out exact. Outside that
 * range (|v| below about 1e-42, subnormals, |v| >= 2^53, inf, nan) snprintf
 * writes it. */
#include "fmtnum.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned __int128 u128;

/* 10^k for k <= 19, the largest power of ten in 64 bits. */
static const uint64_t POW10[20] = {1ull,
                                   10ull,
                                   100ull,
                                   1000ull,
                                   10000ull,
                                   100000ull,
                                   1000000ull,
                                   10000000ull,
                                   100000000ull,
                                   1000000000ull,
                                   10000000000ull,
                                   100000000000ull,
                                   1000000000000ull,
                                   10000000000000ull,
                                   100000000000000ull,
                                   1000000000000000ull,
                                   10000000000000000ull,
                                   100000000000000000ull,
                                   1000000000000000000ull,
                                   10000000000000000000ull};

/* A 256-bit unsigned integer, least significant limb first. */
typedef struct Big {
    uint64_t w[4];
} Big;

/* b *= f; false when the product needs more than 256 bits. */
static bool big_mul(Big *b, uint64_t f)
{
    u128 carry = 0;
    for (int i = 0; i < 4; i++) {
        u128 p = (u128)b->w[i] * f + carry;
        b->w[i] = (uint64_t)p;
        carry = p >> 64;
    }
    return carry == 0;
}

static bool big_bit(const Big *b, int i)
{
    return (b->w[i / 64] >> (i % 64)) & 1;
}

/* Whether any of the bits below bit i (0 < i < 256) is set. */
static bool big_any_below(const Big *b, int i)
{
    for (int l = 0; l < i / 64; l++) {
        if (b->w[l] != 0)
            return true;
    }
    return i % 64 != 0 && (b->w[i / 64] & ((1ull << (i % 64)) - 1)) != 0;
}

/* b >> s (0 < s < 256) into *q; false when it does not fit in 64 bits. */
static bool big_shift(const Big *b, int s, uint64_t *q)
{
    int l = s / 64;
    int r = s % 64;
    uint64_t lo = b->w[l] >> r;
    uint64_t hi = l + 1 < 4 ? b->w[l + 1] : 0;
    if (r != 0) {
        lo |= hi << (64 - r);
        hi >>= r;
    }
    for (int i = l + 2; i < 4; i++)
        hi |= b->w[i];
    *q = lo;
    return hi == 0;
}

/* floor(m * 10^k / 2^s) into *q, with the rounding: 0 below half, 1 at
 * exactly half, 2 above. False when out of range. */
static bool scaled(uint64_t m, int k, int s, uint64_t *q, int *half)
{
    if (k < 0 || s <= 0 || s >= 256)
        return false;
    Big b = {{m, 0, 0, 0}};
    for (; k >= 19; k -= 19) {
        if (!big_mul(&b, POW10[19]))
            return false;
    }
    if (!big_mul(&b, POW10[k]) || !big_shift(&b, s, q))
        return false;
    *half = !big_bit(&b, s - 1) ? 0 : big_any_below(&b, s - 1) ? 2 : 1;
    return true;
}

/* The 17 significant digits of |v| (finite, normal, nonzero) in *q
 * (10^16 <= q < 10^17) and its decimal exponent in *x; false when the
 * fast way does not apply. */
static bool digits17(double v, uint64_t *q, int *x)
{
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    int be = (int)((bits >> 52) & 0x7ff);
    if (be == 0 || be == 0x7ff)
        return false; /* zero, subnormal, inf, nan */
    uint64_t m = (bits & ((1ull << 52) - 1)) | (1ull << 52);
    int s = 1075 - be; /* |v| = m / 2^s */
    int e = (int)floor(log10(fabs(v)));
    /* log10 may be off by one next to a power of ten: the digits say. */
    for (int tries = 0; tries < 3; tries++) {
        int half;
        if (!scaled(m, 16 - e, s, q, &half))
            return false;
        if (*q >= POW10[17]) {
            e++;
            continue;
        }
        if (*q < POW10[16]) {
            e--;
            continue;
        }
        if (half == 2 || (half == 1 && (*q & 1)))
            ++*q;
        if (*q == POW10[17]) {
            *q = POW10[16];
            e++;
        }
        *x = e;
        return true;
    }
    return false;
}

size_t rung_fmt_g17(char *buf, double v)
{
    uint64_t q;
    int x;
    if (v == 0 || !digits17(v, &q, &x))
        return (size_t)snprintf(buf, RUNG_FMTNUM_MAX, "%.17g", v);
    char d[17];
    for (int i = 16; i >= 0; i--) {
        d[i] = (char)('0' + q % 10);
        q /= 10;
    }
    int last = 16; /* the last digit kept: %g drops trailing zeros */
    while (last > 0 && d[last] == '0')
        last--;
    char *p = buf;
    if (signbit(v))
        *p++ = '-';
    if (x < -4 || x >= 17) {
        *p++ = d[0];
        if (last > 0) {
            *p++ = '.';
            memcpy(p, d + 1, (size_t)last);
            p += last;
        }
        *p++ = 'e';
        *p++ = x < 0 ? '-' : '+';
        int a = x < 0 ? -x : x;
        if (a >= 100)
            *p++ = (char)('0' + a / 100);
        *p++ = (char)('0' + a / 10 % 10);
        *p++ = (char)('0' + a % 10);
    } else if (x >= 0) {
        memcpy(p, d, (size_t)x + 1);
        p += x + 1;
        if (last > x) {
            *p++ = '.';
            memcpy(p, d + x + 1, (size_t)(last - x));
            p += last - x;
        }
    } else {
        *p++ = '0';
        *p++ = '.';
        for (int i = 0; i < -x - 1; i++)
            *p++ = '0';
        memcpy(p, d, (size_t)last + 1);
        p += last + 1;
    }
    *p = '\0';
    return (size_t)(p - buf);
}

size_t rung_fmt_i64(char *buf, int64_t v)
{
    char tmp[24];
    int n = 0;
    /* In unsigned arithmetic, so that INT64_MIN negates. */
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    size_t len = 0;
    if (v < 0)
        buf[len++] = '-';
    while (n > 0)
        buf[len++] = tmp[--n];
    buf[len] = '\0';
    return len;
}

size_t rung_fmt_shortest(char *buf, double v)
{
    if (!isfinite(v))
        return rung_fmt_g17(buf, v);
    for (int digits = 15; digits < 17; digits++) {
        int n = snprintf(buf, RUNG_FMTNUM_MAX, "%.*g", digits, v);
        if (strtod(buf, NULL) == v)
            return (size_t)n;
    }
    return rung_fmt_g17(buf, v);
}
