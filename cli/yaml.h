/* YAML experiment specs for `rung submit` (docs/api.md, "Command lines").
 *
 * rungd takes JSON only, so the client turns one YAML document into the
 * JSON value it means and sends that. Pure: no I/O beyond the buffer given,
 * so tests/unit/test_yaml.c and tests/fuzz/fuzz_yaml.c drive it directly.
 *
 * What a document becomes (YAML 1.2's core schema, read by libyaml):
 * - mappings (block or flow) become objects; keys must be scalars and are
 *   taken as written ("1: x" gives the key "1"); a key given twice is an
 *   error, as the JSON path refuses duplicates (a typo'd override would
 *   otherwise pass silently);
 * - sequences become arrays;
 * - plain (unquoted) scalars are resolved: empty, ~, null, Null, NULL are
 *   null; true, True, TRUE, false, False, FALSE booleans; decimal integers
 *   with an optional sign, 0o octal and 0x hexadecimal ones JSON integers
 *   (outside int64 an error: a real would silently change a seed); floats
 *   (1.5, .5, 1e-4, -2.5E+3) JSON reals; .inf, -.inf and .nan are errors,
 *   since a spec's numbers must be finite (JSON has no spelling for them);
 *   anything else, yes/no/on/off included (YAML 1.1's booleans), is a
 *   string;
 * - quoted ('...', "...") and block (|, >) scalars are always strings;
 * - the tags !!str, !!int, !!float, !!bool, !!null, !!seq, !!map and the
 *   non-specific ! are honoured ("!!str 12" is "12", "!!float 1" is 1.0);
 *   any other tag is an error;
 * - anchors and aliases are errors: a spec never needs them, and refusing
 *   them rules out exponential expansion ("billion laughs");
 * - more than one document, an empty one, a string holding NUL, and
 *   nesting deeper than JSONV_MAX_DEPTH (common/jsonv.h, the bound rungd
 *   applies to the spec) are errors.
 *
 * W&B mode (cli_yaml_read with CLI_YAML_WANDB, for W&B sweep files: W&B
 * reads them with PyYAML, YAML 1.1): yes, Yes, YES, on, On, ON and no, No,
 * NO, off, Off, OFF are booleans too, as values and after !!bool; keys stay
 * as written. 1e-5 is a float in both modes. python/rung/_yaml.py has the
 * same mode; the corpus's NAME.wandb.json answers say where they differ.
 *
 * Every error message names the 1-based line, "line 7: duplicate key 'lr'",
 * and libyaml's own syntax errors the column too, "line 3, column 2: did
 * not find expected key (while parsing a block mapping at line 1)". */
#ifndef RUNG_CLI_YAML_H
#define RUNG_CLI_YAML_H

#include <jansson.h>
#include <stddef.h>

/* Longest piece of the document (a key, a scalar, a tag) that an error
 * message quotes, in bytes: enough to recognize it, short enough to keep
 * the message on a line. Longer ones are cut on a character boundary and
 * end in "...". */
#define CLI_YAML_QUOTE_MAX 64

/* Converts the YAML document in buf (len bytes; UTF-8, or UTF-16 with a byte
 * order mark) to a JSON value: a new reference (free with json_decref), of
 * any type (the caller checks it is an object). On failure returns NULL and
 * writes the reason, valid UTF-8 and NUL-terminated, into err (errlen bytes,
 * cut on a character boundary when longer). */
json_t *cli_yaml_to_json(const char *buf, size_t len, char *err, size_t errlen);

#define CLI_YAML_WANDB 1 /* flag of cli_yaml_read: W&B mode (above) */

/* cli_yaml_to_json with flags (0 or CLI_YAML_WANDB). */
json_t *cli_yaml_read(const char *buf, size_t len, int flags, char *err, size_t errlen);

#endif
