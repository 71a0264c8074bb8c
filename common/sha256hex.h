/* SHA-256 digests as text: 64 lowercase hex digits and a NUL, the form of
 * pbt's checkpoint hashes (docs/api.md, "PBT's checkpoints through rungd")
 * in rungd's store, its HTTP front, and rung-worker's packs and downloads.
 * Header only; the hashing itself is OpenSSL's, where each caller has it. */
#ifndef RUNG_COMMON_SHA256HEX_H
#define RUNG_COMMON_SHA256HEX_H

#include <stdbool.h>

/* hex = the 32 bytes of md in lowercase hex (65 bytes with the NUL). */
static inline void rung_sha256_to_hex(const unsigned char md[32], char hex[65])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        hex[2 * i] = digits[md[i] >> 4];
        hex[2 * i + 1] = digits[md[i] & 15];
    }
    hex[64] = '\0';
}

/* Whether s is 64 hex digits (either case) and nothing more; NULL is not. */
static inline bool rung_is_sha256_hex(const char *s)
{
    if (s == NULL)
        return false;
    for (int i = 0; i < 64; i++) {
        char ch = s[i];
        if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F')))
            return false;
    }
    return s[64] == '\0';
}

#endif
