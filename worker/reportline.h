/* The report line protocol (docs/api.md, "Command trainables"): a trial
 * reports by printing `@rung {json}` on stdout. This is its parser: a pure
 * function of one line, with no I/O, fuzzed in tests/fuzz/.
 *
 * The JSON may hold NaN, Infinity and -Infinity (what Python's json.dumps
 * prints for a diverged run); they come out as the strings "NaN",
 * "Infinity" and "-Infinity" (common/nonfinite.h), as they travel in HTTP
 * reports.
 *
 * Values that are not numbers ({"phase": "warmup"}, Ray Tune's
 * {"done": true}) do not make the line invalid: they are the report's info
 * (docs/api.md, "The line"), so that a line's numbers are never lost to one
 * label beside them. */
#ifndef RUNG_WORKER_REPORTLINE_H
#define RUNG_WORKER_REPORTLINE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REPORTLINE_MAX 65536 /* longest line parsed; longer ones are invalid */
/* Bounds of the values that are not numbers (the report's info), as
 * compact JSON: one value, and a line's values together. rungd's report
 * takes no more (server/request.h, REQUEST_MAX_INFO_*; test_request.c
 * checks they are equal). They keep a trial's info a few labels and flags
 * (a phase, a note, done), not a second log: a value over them is left out,
 * never cut, since a cut array or object is no value at all. */
#define REPORTLINE_INFO_VALUE_MAX 1024
#define REPORTLINE_INFO_MAX 4096
/* The deepest array or object nesting of an info value (1 for [1, 2]); the
 * report body that carries it to rungd may nest 32 deep (common/jsonv.h). */
#define REPORTLINE_INFO_DEPTH 16

typedef enum {
    REPORTLINE_NONE,    /* not a report line: part of the trial's log */
    REPORTLINE_OK,      /* a report: the ReportLine is set */
    REPORTLINE_INVALID, /* starts with "@rung" but is not a valid report: why says so */
} ReportLineKind;

/* What a valid report line says. The three objects are new (free them with
 * reportline_clear) and share nothing with the parser or one another. */
typedef struct ReportLine {
    int64_t step;    /* the line's, or next_step when it has none */
    json_t *metrics; /* the numbers: name -> a number or "NaN", "Infinity", "-Infinity" */
    json_t *info;    /* the other values within the bounds above, in the line's order */
    /* One sentence per value that is not a number, for the trial's warnings:
     * "metric 'phase' is not a number: kept as info", or why it was left
     * out of info. "done" with a boolean value has none: it is Ray Tune's
     * word, not a mistake. */
    json_t *notes;
    bool done; /* "done": true, Ray Tune's "this trial is finished" */
} ReportLine;

/* Parses one line (without its newline; a trailing '\r' is ignored).
 * next_step is the step given when the line has none (1, 2, 3, ... as
 * docs/api.md says). On REPORTLINE_OK, *out holds the report; metrics or
 * info may be empty, not both unless every value was left out of info (then
 * notes say why). On REPORTLINE_INVALID, why (of why_size bytes) names the
 * problem, e.g. "metric name '' is empty".
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
 *   [0, 2^53] (3.0 is taken as 3). Every other key is a value: 1..64 bytes
 *   of name, at most 64 of them, at least one. A JSON number (integers
 *   within int64) or a bare NaN, Infinity or -Infinity is a metric. The
 *   strings "NaN" etc. written as JSON strings are not numbers.
 * - Any other value (string, boolean, null, array, object) goes to info, as
 *   it is but for bare NaN, Infinity and -Infinity inside an array or object,
 *   which become those strings. It is left out (with a note) when it holds a
 *   NUL character (a JSON string may, rungd's bodies may not), nests deeper
 *   than REPORTLINE_INFO_DEPTH, is over REPORTLINE_INFO_VALUE_MAX bytes, or
 *   would take the line's info over REPORTLINE_INFO_MAX (values are taken in
 *   the line's order).
 * - next_step is passed through as given; the caller keeps it >= 0.
 *
 * Ownership and outputs: line is borrowed and need not be NUL-terminated; it
 * may hold any bytes. out must not be NULL; its objects are NULL unless the
 * result is REPORTLINE_OK, and its step is written only then. why may be
 * NULL when why_size is 0; otherwise it is always NUL-terminated ("" unless
 * INVALID) and cut to fit: 256 bytes hold every message. No I/O, no global
 * state: safe to call from several threads. */
ReportLineKind reportline_parse(const char *line, size_t len, int64_t next_step, ReportLine *out,
                                char *why, size_t why_size);

/* Frees what a parse put in r and sets its objects to NULL. */
void reportline_clear(ReportLine *r);

#endif
