/* UTF-8 cuts and checks; see utf8.h. */
#include "utf8.h"

#include <string.h>

static int is_continuation(unsigned char c)
{
    return (c & 0xC0) == 0x80;
}

size_t rung_utf8_truncate_len(const char *s, size_t max)
{
    size_t len = strnlen(s, max); /* never reads past s[max] below either */
    if (len < max)
        return len; /* the whole string fits */
    size_t k = max;
    /* s[max] exists (it may be the NUL); step back over continuation bytes
     * until k sits on the first byte of a character or at 0. */
    while (k > 0 && is_continuation((unsigned char)s[k]))
        k--;
    return k;
}

size_t rung_utf8_char_len(const char *s, size_t avail)
{
    if (avail == 0)
        return 0;
    const unsigned char *u = (const unsigned char *)s;
    unsigned char c = u[0];
    size_t n;
    unsigned cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0; /* a continuation byte, C0/C1 (always overlong) or F5..FF */
    }
    if (avail < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if (!is_continuation(u[i]))
            return 0;
        cp = (cp << 6) | (u[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    return n;
}
