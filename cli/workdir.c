/* Uploading a working directory with a spec (workdir.h). */
#include "workdir.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pack.h"

/* The folder a spec's relative working_dir is relative to: the spec file's. */
static void resolve(const char *value, const char *spec_path, char *out, size_t size)
{
    const char *slash = spec_path ? strrchr(spec_path, '/') : NULL;
    if (value[0] == '/' || slash == NULL || strcmp(spec_path, "-") == 0)
        snprintf(out, size, "%s", value);
    else
        snprintf(out, size, "%.*s/%s", (int)(slash - spec_path), spec_path, value);
}

static int upload(CliRest *h, const char *tar, const CliPack *p, bool *sent, CliError *err)
{
    char path[128];
    snprintf(path, sizeof path, "/api/v1/blobs/%s", p->sha256);
    long status = 0;
    if (cli_rest_head(h, path, &status, err) != 0)
        return -1;
    *sent = false;
    if (status == 200)
        return 0;
    json_t *reply;
    if (cli_rest_put_file(h, path, tar, "application/x-tar", &reply, err) != 0)
        return -1;
    json_decref(reply);
    *sent = true;
    return 0;
}

int cli_workdir_attach(CliRest *h, json_t *spec, const char *flag_dir, const char *spec_path,
                       FILE *say, CliError *err)
{
    json_t *t = json_object_get(spec, "trainable");
    const char *given = json_string_value(json_object_get(t, "working_dir"));
    if (flag_dir == NULL && (given == NULL || strncmp(given, "sha256:", 7) == 0))
        return 0;
    const char *type = json_string_value(json_object_get(t, "type"));
    if (!json_is_object(t) || type == NULL || strcmp(type, "command") != 0)
        return cli_error_local(err, "trainable.working_dir: a working directory needs a "
                                    "command trainable ({\"type\": \"command\", \"argv\": [...]})");
    char dir[PATH_MAX];
    if (flag_dir != NULL)
        snprintf(dir, sizeof dir, "%s", flag_dir);
    else
        resolve(given, spec_path, dir, sizeof dir);
    const char *tmpdir = getenv("TMPDIR");
    char tar[PATH_MAX];
    snprintf(tar, sizeof tar, "%s/rung-workdir-XXXXXX", tmpdir && tmpdir[0] ? tmpdir : "/tmp");
    int fd = mkstemp(tar);
    if (fd < 0)
        return cli_error_local(err, "cannot make a temporary file in %s: %s",
                               tmpdir && tmpdir[0] ? tmpdir : "/tmp", strerror(errno));
    close(fd);
    CliPack p;
    char why[768];
    if (cli_pack_dir(dir, tar, &p, why, sizeof why) != 0) {
        unlink(tar);
        return cli_error_local(err, "working_dir: %s", why);
    }
    bool sent = false;
    int rc = upload(h, tar, &p, &sent, err);
    unlink(tar);
    if (rc != 0)
        return -1;
    char value[7 + 65];
    snprintf(value, sizeof value, "sha256:%s", p.sha256);
    json_object_set_new(t, "working_dir", json_string(value));
    fprintf(say, "working_dir: %" PRId64 " files, %" PRId64 " bytes, sha256:%.12s… %s\n", p.files,
            p.bytes, p.sha256, sent ? "uploaded" : "already on rungd");
    return 0;
}
