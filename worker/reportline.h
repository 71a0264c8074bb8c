/* The report line protocol (docs/api.md, "Command trainables"): a trial
 * reports by printing `@rung {json}` on stdout. This is its parser: a pure
 * function of one line, with no I/O, fuzzed in tests/fuzz/.
 *
 * The JSON may hold NaN, Infinity and -Infinity (what Python's json.dumps
 * prints for a diverged run); they come out as the strings "NaN",
 * "Infinity" and "-Infinity" (common/nonfinite.h), as they travel in HTTP
 * reports. */
#ifndef RUNG_WORKER_REPORTLINE_H
#define RUNG_WORKER_REPORTLINE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define REPORTLINE_MAX 65536 /* longest line parsed; longer ones are invalid */

typedef enum {
    REPORTLINE_NONE,    /* not a report line: part of the trial's log */
    REPORTLINE_OK,      /* a report: *metrics and *step are set */
    REPORTLINE_INVALID, /* starts with "@rung" but is not a valid report: why says so */
} ReportLineKind;

/* Parses one line (without its newline; a trailing '\r' is ignored).
 * next_step is the step given when the line has none (1, 2, 3, ... as
 * docs/api.md says). On REPORTLINE_OK, *metrics is a new object (free with
 * json_decref) of the values other than "step", each a number or one of the
 * three strings above, and *step the report's step. On REPORTLINE_INVALID,
 * why (of why_size bytes) names the problem, e.g. "metric 'acc' is not a
 * number".
 *
 * The rules, strict on purpose:
 * - A report line starts at its first byte with "@rung", then a space or a
 *   tab, then one JSON object (whitespace around it is fine). Leading
 *   whitespace makes a log line. "@rung" followed by any other byte is
 *   another word ("@rungs", "@rung:") and so a log line too, except for
 *   "@rung{", a report missing its space, which is INVALID. "@rung" alone,
 *   or followed by anything but one JSON object, is INVALID; so is a raw
 *   NUL byte in the JSON (why gives its byte offset).
 * - A line longer than REPORTLINE_MAX bytes (after the '\r' is dropped) that
 *   starts with the marker is INVALID; a long log line stays NONE.
 * - Duplicate keys are invalid. "step" is optional: an integer in
 *   [0, 2^53] (3.0 is taken as 3). Every other key is a metric: 1..64 bytes
 *   of name, at most 64 of them, at least one, each value a JSON number
 *   (integers within int64) or a bare NaN, Infinity or -Infinity. The
 *   strings "NaN" etc. written as JSON strings are not numbers. next_step
 *   is passed through as given; the caller keeps it >= 0.
 *
 * Ownership and outputs: line is borrowed and need not be NUL-terminated; it
 * may hold any bytes. metrics and step must not be NULL. *metrics is set to
 * NULL unless the result is REPORTLINE_OK; *step is written only on
 * REPORTLINE_OK. why may be NULL when why_size is 0; otherwise it is always
 * NUL-terminated ("" unless INVALID) and cut to fit: 256 bytes hold every
 * message. No I/O, no global state: safe to call from several threads. */
ReportLineKind reportline_parse(const char *line, size_t len, int64_t next_step, json_t **metrics,
                                int64_t *step, char *why, size_t why_size);

#endif
