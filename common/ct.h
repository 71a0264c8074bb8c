/* Constant-time comparison of secrets: the API's bearer token and trial
 * lease tokens (docs/api.md, "Authentication"). A plain strcmp returns at
 * the first byte that differs, so its time tells a client how much of a
 * guess was right and lets it find a token byte by byte; this comparison
 * reads the same bytes whatever the inputs hold. */
#ifndef RUNG_COMMON_CT_H
#define RUNG_COMMON_CT_H

#include <stdbool.h>
#include <stddef.h>

/* True when the NUL-terminated strings given and expected are equal, have at
 * most max_len bytes each, and expected is not empty (an empty secret never
 * matches, so an unset token cannot be "guessed" by sending nothing).
 *
 * Its running time depends on the lengths of the two strings (each is read
 * up to max_len + 1 bytes at most) and never on their contents: where they
 * first differ, or whether they do, cannot be measured. The lengths are not
 * hidden: a lease token's is documented, and knowing a bearer token's length
 * does not help guess its bytes. NULL for either string is false. */
bool rung_ct_equal(const char *given, const char *expected, size_t max_len);

#endif
