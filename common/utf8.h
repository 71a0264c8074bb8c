/* UTF-8 at byte limits. Strings that rungd and rung-worker cut to a
 * length (messages, names, log tails) end up in JSON, and jansson refuses
 * to build a string from invalid UTF-8 (a character cut in half makes the
 * whole reply fail), so cuts fall on character boundaries and text of
 * unknown origin is checked before it becomes a JSON string. */
#ifndef RUNG_COMMON_UTF8_H
#define RUNG_COMMON_UTF8_H

#include <stddef.h>

/* How many bytes of the NUL-terminated s to keep so that the head is at most
 * max bytes and does not end inside a character: the largest k <= max and
 * <= strlen(s) where s[k] is not a continuation byte (10xxxxxx). For valid
 * UTF-8 the head is valid UTF-8; a character of 4 bytes that does not fit
 * whole is dropped whole. Reads at most max + 1 bytes of s. */
size_t rung_utf8_truncate_len(const char *s, size_t max);

/* The length (1 to 4) of the valid UTF-8 character that starts at s, of
 * which avail bytes may be read, or 0 when those bytes do not start one: a
 * stray continuation byte, a lead byte without its continuations (or cut
 * short by avail), an overlong form, a surrogate (U+D800..U+DFFF) or a code
 * point above U+10FFFF, the same rules as jansson's. A NUL byte is a valid
 * character of length 1. */
size_t rung_utf8_char_len(const char *s, size_t avail);

#endif
