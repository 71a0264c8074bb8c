/* The option-table parser; see options.h. */
#include "options.h"
#include "version.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static Option *find(Option *opts, int n, const char *arg, size_t name_len)
{
    if (strncmp(arg, "--", 2) != 0)
        return NULL;
    for (int k = 0; k < n; k++)
        if (name_len - 2 == strlen(opts[k].name) &&
            strncmp(arg + 2, opts[k].name, name_len - 2) == 0)
            return &opts[k];
    return NULL;
}

int options_parse(const char *prog, Option *opts, int n, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)
            return 1;
        if (strcmp(arg, "--version") == 0) {
            printf("%s %s\n", prog, rung_version);
            return 2;
        }
        const char *eq = strchr(arg, '=');
        Option *o = find(opts, n, arg, eq ? (size_t)(eq - arg) : strlen(arg));
        if (o == NULL) {
            fprintf(stderr, "%s: unknown option %s (see --help)\n", prog, arg);
            return -1;
        }
        if (o->kind == OPT_FLAG) {
            if (eq) {
                fprintf(stderr, "%s: --%s takes no value\n", prog, o->name);
                return -1;
            }
            o->value = "yes";
            continue;
        }
        const char *value = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (value == NULL) {
            fprintf(stderr, "%s: --%s needs a value\n", prog, o->name);
            return -1;
        }
        if (o->kind == OPT_STRING) {
            o->value = value;
            continue;
        }
        char *end;
        errno = 0;
        long long v = strtoll(value, &end, 10);
        if (errno || end == value || *end != '\0' || v < o->min || v > o->max) {
            fprintf(stderr, "%s: --%s must be an integer between %lld and %lld, not '%s'\n", prog,
                    o->name, o->min, o->max, value);
            return -1;
        }
        o->ival = v;
        o->value = value;
    }
    return 0;
}

void options_usage(FILE *out, const Option *opts, int n)
{
    for (int i = 0; i < n; i++) {
        const Option *o = &opts[i];
        if (o->kind == OPT_FLAG)
            fprintf(out, "  --%-13s    %s\n", o->name, o->help);
        else if (o->kind == OPT_INT && o->ival)
            fprintf(out, "  --%-13s N  %s (default %lld)\n", o->name, o->help, o->ival);
        else if (o->kind == OPT_INT)
            fprintf(out, "  --%-13s N  %s\n", o->name, o->help);
        else
            fprintf(out, "  --%-13s S  %s%s%s%s\n", o->name, o->help, o->value ? " (default " : "",
                    o->value ? o->value : "", o->value ? ")" : "");
    }
    fprintf(out, "  --%-13s    %s\n", "version", "print the version and exit");
}
