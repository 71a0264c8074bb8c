/* What the fuzz targets of rungd's JSON bodies (fuzz_spec.c, fuzz_request.c)
 * share: the body parsed the way server/http.c parses it, and the checks
 * every answer of a parser must pass, whatever the body:
 *
 * - the error's code is the return value, and one the parser may give;
 * - its field and message are valid UTF-8 (api_error puts both into the
 *   reply as JSON strings, and jansson refuses to build a string from
 *   anything else: the reply would be lost);
 * - the message starts with the field's top-level name ("body" when the
 *   field is empty), the way every error of the API names its field;
 * - a JSON object nested deeper than JSONV_MAX_DEPTH is refused, naming the
 *   depth, and nothing accepted is deeper;
 * - the answer is the same for the body written out as the store writes
 *   JSON (compact) and read back.
 *
 * A failed check calls abort(), which libFuzzer and fuzz_driver.c both
 * catch as a crash. Header-only: each target includes it once. */
#ifndef RUNG_FUZZ_JSON_H
#define RUNG_FUZZ_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "jsonv.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing past
 * U+10FFFF; what jansson accepts in a string. */
static inline bool fuzz_utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i];
        size_t len;
        unsigned min, cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2, min = 0x80, cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3, min = 0x800, cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4, min = 0x10000, cp = c & 0x07;
        } else {
            return false;
        }
        if (i + len > n)
            return false;
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += len;
    }
    return true;
}

static inline bool fuzz_str_valid(const char *s, size_t cap)
{
    const char *end = memchr(s, '\0', cap);
    return end != NULL && fuzz_utf8_valid(s, (size_t)(end - s));
}

/* Nesting depth as jsonv.h counts it, computed independently: arrays and
 * objects v is or is inside of. Parsed documents are at most jansson's
 * JSON_PARSER_MAX_DEPTH deep, so the recursion is bounded. */
static inline int fuzz_depth(const json_t *v)
{
    int deepest = 0;
    if (json_is_object(v)) {
        const char *key;
        json_t *value;
        json_object_foreach((json_t *)v, key, value) {
            int d = fuzz_depth(value);
            if (d > deepest)
                deepest = d;
        }
        return deepest + 1;
    }
    if (json_is_array(v)) {
        size_t i;
        json_t *value;
        json_array_foreach(v, i, value) {
            int d = fuzz_depth(value);
            if (d > deepest)
                deepest = d;
        }
        return deepest + 1;
    }
    return 0;
}

/* The body as http.c makes it of a request's bytes. *skip is set when
 * http.c would have answered bad_json itself (the bytes are no JSON); an
 * empty body is NULL, as http.c hands it over. */
static inline json_t *fuzz_body(const uint8_t *data, size_t size, bool *skip)
{
    *skip = false;
    if (size == 0)
        return NULL;
    json_error_t jerr;
    json_t *body = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
    if (body == NULL)
        *skip = true;
    return body;
}

/* The body written as the store writes JSON and read back, as another
 * client could have sent it. */
static inline json_t *fuzz_reload(const json_t *v)
{
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    CHECK(text != NULL);
    json_t *again = json_loads(text, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
    CHECK(again != NULL);
    CHECK(json_equal(again, v));
    free(text);
    return again;
}

/* The checks on any answer (see the top of this file). code_ok is the code
 * of a refused field; RUNG_E_BAD_JSON is allowed for a body that is no
 * object, and is the only code then. */
static inline void fuzz_check_answer(int rc, const RungError *err, const json_t *body, int code_ok)
{
    if (!json_is_object(body)) {
        CHECK(rc == RUNG_E_BAD_JSON);
        CHECK(err->code == rc);
        CHECK(strcmp(err->message, "body: must be a JSON object") == 0);
        return;
    }
    int depth = fuzz_depth(body);
    if (rc == 0) {
        CHECK(depth <= JSONV_MAX_DEPTH);
        return;
    }
    CHECK(err->code == rc);
    CHECK(rc == code_ok);
    CHECK(fuzz_str_valid(err->field, sizeof err->field));
    CHECK(fuzz_str_valid(err->message, sizeof err->message));
    CHECK(err->message[0] != '\0');
    /* As api_error builds the reply: every part must be a JSON string. */
    json_t *reply = json_pack("{s:s, s:s}", "code", rung_error_string(rc), "message", err->message);
    CHECK(reply != NULL);
    json_t *field = json_string(err->field);
    CHECK(field != NULL);
    json_decref(field);
    json_decref(reply);
    /* The message names the field's top-level name first. */
    size_t head = strcspn(err->field, ".[");
    if (err->field[0] == '\0') {
        CHECK(strncmp(err->message, "body", 4) == 0);
    } else if (head == 0) { /* a key that starts with '.' or '[' */
        CHECK(err->message[0] == err->field[0]);
    } else {
        CHECK(strncmp(err->message, err->field, head) == 0);
        CHECK(err->message[head] != '\0' && strchr(":.[", err->message[head]) != NULL);
    }
    if (depth > JSONV_MAX_DEPTH) {
        char want[64];
        snprintf(want, sizeof want, ": nested deeper than %d levels", JSONV_MAX_DEPTH);
        CHECK(strstr(err->message, want) != NULL);
    }
}

#endif
