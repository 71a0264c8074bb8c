/* What the spec reader's files share (spec.c, spec_sched.c,
 * spec_trainable.c, spec_objectives.c; the rest of the daemon uses
 * spec.h): the parsers of one part of the spec each, which spec.c's
 * parse() calls in turn, and two small helpers. Each parser checks its
 * part of the deep copy j, completes it with the defaults that apply and
 * fills spec; errors name the field (docs/api.md, "The experiment spec"). */
#ifndef RUNG_SERVER_SPEC_INTERNAL_H
#define RUNG_SERVER_SPEC_INTERNAL_H

#include "spec.h"

#include <math.h>

#define E RUNG_E_INVALID_SPEC

/* A number as JSON: integral values print as integers (27, not 27.0). */
static inline json_t *number_json(double v)
{
    if (v == floor(v) && fabs(v) < 9e15)
        return json_integer((json_int_t)v);
    return json_real(v);
}

/* Deletes key from obj (when obj is an object) when its value is null. */
static inline void drop_null(json_t *obj, const char *key)
{
    if (json_is_null(json_object_get(obj, key)))
        json_object_del(obj, key);
}

/* spec_sched.c: "scheduler" (docs/api.md, "scheduler"; docs/schedulers.md). */
int spec_parse_scheduler(json_t *spec_json, Spec *spec, RungError *err);

/* spec_trainable.c: "trainable" (docs/api.md, "trainable"). */
int spec_parse_trainable(json_t *spec_json, bool stored, Spec *spec, RungError *err);
/* keep_artifacts (spec_artifacts.c). */
int spec_parse_keep(json_t *spec_json, Spec *spec, RungError *err);
int spec_parse_notify(json_t *spec_json, Spec *spec, RungError *err);
/* spec_meta.c: "tags" and "notes", moved from j into spec->tags and
 * spec->notes with their defaults. */
int spec_parse_meta(json_t *spec_json, Spec *spec, RungError *err);

/* spec_objectives.c: "metric"/"mode" or "metrics", "constraints", and the
 * rules that several objectives or constraints add (docs/api.md, "Several
 * objectives and constraints"); checked on the submitted j once every
 * other part is parsed. */
int spec_parse_objectives(json_t *j, Spec *spec, RungError *err);
int spec_parse_constraints(json_t *j, Spec *spec, RungError *err);
int spec_check_objective_rules(const json_t *j, Spec *spec, RungError *err);

#endif
