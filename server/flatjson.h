/* A flat JSON object read in place, without building it: the members of an
 * object whose values are all strings without escapes, numbers, true,
 * false or null. trials.csv (docs/api.md) reads a trial's config and last
 * metrics from their stored JSON text; parsing each of 50,000 rows with
 * jansson into objects only to look up a few keys took a third of the
 * request's time. Anything else (nesting, escapes, a number out of range,
 * invalid JSON) is refused, and the caller parses that text with jansson:
 * whatever this accepts, json_loads(text, JSON_DECODE_ANY) reads as an
 * object with the same members and values (the last of duplicate keys
 * wins, as there). Pure: no I/O. */
#ifndef RUNG_FLATJSON_H
#define RUNG_FLATJSON_H

#include <stddef.h>
#include <stdint.h>

typedef enum FlatKind {
    FLAT_STRING, /* text, len: its bytes between the quotes */
    FLAT_INT,    /* i (jansson's integer: no fraction, no exponent) */
    FLAT_REAL,   /* r */
    FLAT_TRUE,
    FLAT_FALSE,
    FLAT_NULL,
} FlatKind;

typedef struct FlatMember {
    const char *key; /* borrowed from the text, not NUL-terminated */
    size_t key_len;
    FlatKind kind;
    const char *text; /* FLAT_STRING's bytes, borrowed */
    size_t len;
    int64_t i;
    double r;
} FlatMember;

/* Members read at most: an object with more is refused (left to jansson). */
#define FLATJSON_MAX 64

/* Reads the NUL-terminated text into out[0..max); returns how many
 * members, or -1 when it is not a flat object this reads (see above). */
int flatjson_read(const char *text, FlatMember *out, int max);

/* The member named key (NUL-terminated), the last one of that name, or
 * NULL. */
const FlatMember *flatjson_get(const FlatMember *members, int n, const char *key);

#endif
