/* The worker's labels, `rung-worker --label key=value` (docs/api.md,
 * "Command lines"), sent as "labels" when it registers (POST
 * /api/v1/workers). Pure.
 *
 * Checked as rungd checks them (server/request.c, spec_label_key_ok), so
 * that a bad one is refused at start with a clear message instead of by the
 * server: at most LABELS_MAX labels, each key 1..LABELS_KEY_MAX bytes of
 * A-Z a-z 0-9 _ . - /, each value at most LABELS_VALUE_MAX bytes of UTF-8. */
#ifndef RUNG_WORKER_LABELS_H
#define RUNG_WORKER_LABELS_H

#include <jansson.h>
#include <stddef.h>

#define LABELS_MAX 64        /* as REQUEST_MAX_LABELS */
#define LABELS_KEY_MAX 64    /* as SPEC_MAX_LABEL_KEY */
#define LABELS_VALUE_MAX 256 /* as SPEC_MAX_LABEL_VALUE */

/* Adds "key=value" (arg) to labels (an object). 0, or -1 with why (of
 * why_size bytes) saying what is wrong: no '=', a bad key, a value too long
 * or not UTF-8, a key given twice, too many labels. */
int labels_add(json_t *labels, const char *arg, char *why, size_t why_size);

#endif
