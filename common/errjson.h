/* The body of every error reply (docs/api.md, "Errors"):
 *
 *   {"error": {"code": "invalid_spec", "message": "...", "field": "..."}}
 *
 * `code` is the error table's API string (error.h), `field` appears only
 * when one input is at fault. The handlers, the HTTP front and the engine
 * all answer with this shape, so it is built in this one place. */
#ifndef RUNG_COMMON_ERRJSON_H
#define RUNG_COMMON_ERRJSON_H

#include <jansson.h>

#include "error.h"

/* The error body for a RUNG_E_* code (an unknown code gives "internal", as
 * rung_error_string does), a field (NULL or "" leaves "field" out) and a
 * message (NULL counts as ""). Bytes of field or message that are not valid
 * UTF-8 (a message cut inside a character) become '?', since jansson
 * refuses invalid UTF-8 and an error reply must not fail to build. A new
 * reference; NULL only when out of memory. The HTTP status goes with it:
 * rung_error_status(code). */
json_t *rung_error_json(int code, const char *field, const char *message);

/* The same from a filled RungError. */
json_t *rung_error_json_from(const RungError *err);

#endif
