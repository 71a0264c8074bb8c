/* The error table's lookups and the RungError setter. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *rung_error_string(int code)
{
    switch (code) {
#define RUNG_X_STR(name, str, status)                                                              \
    case RUNG_E_##name:                                                                            \
        return str;
        RUNG_ERRORS(RUNG_X_STR)
#undef RUNG_X_STR
    case RUNG_OK:
        return "ok";
    default:
        return "internal";
    }
}

int rung_error_status(int code)
{
    switch (code) {
#define RUNG_X_STATUS(name, str, status)                                                           \
    case RUNG_E_##name:                                                                            \
        return status;
        RUNG_ERRORS(RUNG_X_STATUS)
#undef RUNG_X_STATUS
    case RUNG_OK:
        return 200;
    default:
        return 500;
    }
}

int rung_error_set(RungError *err, int code, const char *field, const char *fmt, ...)
{
    if (err == NULL)
        return code;
    err->code = code;
    snprintf(err->field, sizeof err->field, "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return code;
}

void rung_error_clear(RungError *err)
{
    if (err == NULL)
        return;
    err->code = RUNG_OK;
    err->field[0] = '\0';
    err->message[0] = '\0';
}
