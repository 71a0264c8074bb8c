/* The spelling of non-finite numbers on the wire (docs/api.md, "Non-finite
 * numbers"): JSON has no NaN or infinity, so a metric value that is one
 * travels as the JSON string "NaN", "Infinity" or "-Infinity", the tokens
 * Python's json.dumps prints for a diverging run. This is the one place
 * that spells them: the worker's @rung line parser (worker/reportline.c)
 * reads them as bare tokens and sends them as these strings, and rungd reads
 * them in reports and writes them back out. */
#ifndef RUNG_COMMON_NONFINITE_H
#define RUNG_COMMON_NONFINITE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* String literals, so they also build longer literals at compile time. */
#define RUNG_NONFINITE_NAN "NaN"
#define RUNG_NONFINITE_INF "Infinity"
#define RUNG_NONFINITE_NEG_INF "-Infinity"

/* The spelling of v when it is not finite ("NaN" for any NaN, whatever its
 * sign or payload), or NULL when v is finite. A static string. */
const char *rung_nonfinite_format(double v);

/* When the len bytes at s are exactly one of the three spellings (case
 * matters, nothing before or after), sets *out to NaN, +inf or -inf and
 * returns true; otherwise returns false and leaves *out alone. s need not
 * be NUL-terminated; a NULL s is no spelling. */
bool rung_nonfinite_parse(const char *s, size_t len, double *out);

/* A metric value as JSON: a real for a finite v, the spelling as a JSON
 * string otherwise. A new reference; NULL only when out of memory. */
json_t *rung_nonfinite_to_json(double v);

/* Reads a metric value: a JSON number (integer or real), or a JSON string
 * that is one of the three spellings. Returns true with *out set, or false
 * (anything else, including NULL and other strings) with *out untouched. */
bool rung_nonfinite_from_json(const json_t *v, double *out);

#endif
