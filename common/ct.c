/* Constant-time token comparison; see ct.h. */
#include "ct.h"

#include <stdint.h>
#include <string.h>

bool rung_ct_equal(const char *given, const char *expected, size_t max_len)
{
    if (given == NULL || expected == NULL)
        return false;
    size_t bound = max_len == SIZE_MAX ? SIZE_MAX : max_len + 1;
    size_t n = strnlen(expected, bound);
    size_t m = strnlen(given, bound);
    /* Every check folds into diff; nothing returns early on content. */
    unsigned diff = (unsigned)(n != m) | (unsigned)(n == 0) | (unsigned)(n > max_len);
    size_t count = n > max_len ? max_len : n;
    for (size_t i = 0; i < count; i++) {
        /* Past the end of a shorter given, compare with 0 (the lengths
         * already differ): the loop's length stays expected's alone. */
        unsigned char g = i < m ? (unsigned char)given[i] : 0;
        diff |= (unsigned)((unsigned char)expected[i] ^ g);
    }
    return diff == 0;
}
