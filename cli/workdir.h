/* `rung submit --working-dir DIR` and a spec's local trainable.working_dir
 * (docs/api.md, "trainable"): the folder packed (cli/pack.h), uploaded to
 * rungd once (HEAD first: a blob it holds is not sent again), and named in
 * the spec by its hash. */
#ifndef RUNG_CLI_WORKDIR_H
#define RUNG_CLI_WORKDIR_H

#include <jansson.h>
#include <stdio.h>

#include "rest.h"

/* Replaces spec's trainable.working_dir by "sha256:<hex>" after uploading
 * the folder: flag_dir when not NULL, else the spec's own value when it is
 * a local path (relative to the folder of spec_path, or to the current
 * folder for "-"). A spec whose working_dir is already "sha256:..." and no
 * flag is left alone. Says what it did in one line on `say`. 0, or -1 with
 * err. */
int cli_workdir_attach(CliRest *h, json_t *spec, const char *flag_dir, const char *spec_path,
                       FILE *say, CliError *err);

#endif
