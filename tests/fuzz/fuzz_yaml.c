/* Fuzz target of cli/yaml.c, the YAML specs `rung submit` reads: any bytes
 * a user's file may hold. Besides the sanitizers' checks, the target checks
 * that:
 * - the answer is a value or an error, never both, and the same answer
 *   twice (no state survives a call);
 * - an error is a non-empty message that starts with "line N" (N >= 1) and
 *   is valid UTF-8; a smaller buffer gets a head of it, still valid UTF-8;
 * - an accepted value nests at most JSONV_MAX_DEPTH deep (what rungd
 *   accepts), and written as compact JSON, the body the client sends, it is
 *   read back equal with duplicate keys refused (fuzz_json.h's
 *   fuzz_reload): every string is valid UTF-8 without NUL, every number
 *   finite;
 * - that JSON text, when it is printable ASCII, read as YAML again gives the
 *   same value: JSON specs mean the same to this reader.
 *
 * Built with libFuzzer under clang, or with fuzz_driver.c under gcc (see
 * CMakeLists.txt). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_json.h"
#include "yaml.h"

/* A buffer larger than any message (yaml.c's are under 512 bytes), and a
 * small one that cuts most of them. */
#define ERR_BIG 1024
#define ERR_SMALL 24

static bool printable_ascii(const char *s)
{
    for (; *s; s++) {
        if (*s < 0x20 || *s > 0x7E)
            return false;
    }
    return true;
}

static void check_error(const char *err, size_t cap)
{
    CHECK(fuzz_str_valid(err, cap));
    CHECK(strncmp(err, "line ", 5) == 0);
    CHECK(err[5] >= '1' && err[5] <= '9');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;
    char err[ERR_BIG];
    memset(err, 'X', sizeof err);
    json_t *v = cli_yaml_to_json(buf, size, err, sizeof err);

    char again_err[ERR_BIG];
    json_t *again = cli_yaml_to_json(buf, size, again_err, sizeof again_err);
    CHECK((v == NULL) == (again == NULL));

    if (v == NULL) {
        check_error(err, sizeof err);
        CHECK(strcmp(err, again_err) == 0);
        char small[ERR_SMALL + 1];
        small[ERR_SMALL] = 'X';
        CHECK(cli_yaml_to_json(buf, size, small, ERR_SMALL) == NULL);
        CHECK(small[ERR_SMALL] == 'X');
        CHECK(fuzz_str_valid(small, ERR_SMALL));
        CHECK(strncmp(small, err, strlen(small)) == 0);
        return 0;
    }
    CHECK(json_equal(v, again));
    json_decref(again);
    CHECK(fuzz_depth(v) <= JSONV_MAX_DEPTH);
    json_t *reloaded = fuzz_reload(v);
    json_decref(reloaded);

    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    CHECK(text != NULL);
    if (printable_ascii(text)) {
        json_t *as_yaml = cli_yaml_to_json(text, strlen(text), err, sizeof err);
        if (as_yaml == NULL)
            fprintf(stderr, "JSON %s refused as YAML: %s\n", text, err);
        CHECK(as_yaml != NULL);
        CHECK(json_equal(as_yaml, v));
        json_decref(as_yaml);
    }
    free(text);
    json_decref(v);
    return 0;
}
