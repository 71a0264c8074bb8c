/* Non-finite numbers as strings and JSON values; see nonfinite.h. */
#include "nonfinite.h"

#include <math.h>
#include <string.h>

typedef struct {
    const char *name;
    size_t len;
    double value;
} Spelling;

static const Spelling SPELLINGS[] = {
    {RUNG_NONFINITE_NAN, sizeof RUNG_NONFINITE_NAN - 1, NAN},
    {RUNG_NONFINITE_INF, sizeof RUNG_NONFINITE_INF - 1, INFINITY},
    {RUNG_NONFINITE_NEG_INF, sizeof RUNG_NONFINITE_NEG_INF - 1, -INFINITY},
};

const char *rung_nonfinite_format(double v)
{
    if (isnan(v))
        return RUNG_NONFINITE_NAN;
    if (isinf(v))
        return v > 0 ? RUNG_NONFINITE_INF : RUNG_NONFINITE_NEG_INF;
    return NULL;
}

bool rung_nonfinite_parse(const char *s, size_t len, double *out)
{
    if (s == NULL)
        return false;
    for (size_t k = 0; k < sizeof SPELLINGS / sizeof SPELLINGS[0]; k++) {
        if (len == SPELLINGS[k].len && memcmp(s, SPELLINGS[k].name, len) == 0) {
            *out = SPELLINGS[k].value;
            return true;
        }
    }
    return false;
}

json_t *rung_nonfinite_to_json(double v)
{
    const char *name = rung_nonfinite_format(v);
    return name != NULL ? json_string(name) : json_real(v);
}

bool rung_nonfinite_from_json(const json_t *v, double *out)
{
    if (json_is_number(v)) {
        *out = json_number_value(v);
        return true;
    }
    /* json_string_length, not strlen: a string with a NUL inside
     * ("NaN\u0000x") is not a spelling. */
    return json_is_string(v) &&
           rung_nonfinite_parse(json_string_value(v), json_string_length(v), out);
}
