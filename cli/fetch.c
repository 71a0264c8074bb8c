/* `rung fetch TRIAL [DIR]`: a completed trial's kept artifacts (docs/api.md,
 * "Artifacts"), downloaded, checked against the hash rungd gives in the
 * trial object, and unpacked into DIR (default trial-<id>) safely: only
 * files and folders with relative names and no "..", nothing through a
 * link, no devices. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "fmt.h"

static void sha256_hex(const char *data, size_t len, char hex[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    EVP_Digest(data, len, md, &n, EVP_sha256(), NULL);
    for (unsigned i = 0; i < 32; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
}

/* Unpacks the tar in data into dir; -1 with a message naming the entry. */
static int unpack(const char *data, size_t len, const char *dir, CliError *err)
{
    struct archive *a = archive_read_new();
    struct archive *out = archive_write_disk_new();
    archive_read_support_format_tar(a);
    /* Names are checked below (relative, no ".."), then put under dir,
     * which the user chose and may be absolute or hold "..": libarchive's
     * own checks of those would refuse it. It still writes through no link. */
    archive_write_disk_set_options(out, ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_PERM |
                                            ARCHIVE_EXTRACT_SECURE_SYMLINKS);
    int rc = 0;
    if (archive_read_open_memory(a, data, len) != ARCHIVE_OK)
        rc = cli_error_local(err, "the artifacts are not a tar: %s", archive_error_string(a));
    struct archive_entry *e;
    while (rc == 0 && archive_read_next_header(a, &e) == ARCHIVE_OK) {
        const char *name = archive_entry_pathname(e);
        mode_t type = archive_entry_filetype(e);
        if (name == NULL || name[0] == '/' || strstr(name, "..") != NULL ||
            (type != AE_IFREG && type != AE_IFDIR)) {
            rc = cli_error_local(err,
                                 "the artifacts hold %s, which is not a plain file or "
                                 "folder inside: nothing more unpacked",
                                 name ? name : "(no name)");
            break;
        }
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        archive_entry_set_pathname(e, path);
        if (archive_write_header(out, e) != ARCHIVE_OK) {
            rc = cli_error_local(err, "cannot write %s: %s", path, archive_error_string(out));
            break;
        }
        const void *buf;
        size_t n;
        la_int64_t off;
        while (type == AE_IFREG && archive_read_data_block(a, &buf, &n, &off) == ARCHIVE_OK)
            if (archive_write_data_block(out, buf, n, off) != ARCHIVE_OK) {
                rc = cli_error_local(err, "cannot write %s: %s", path, archive_error_string(out));
                break;
            }
        archive_write_finish_entry(out);
    }
    archive_read_free(a);
    archive_write_free(out);
    return rc;
}

int cli_cmd_fetch(CliRest *h, int argc, char **argv)
{
    if (argc < 1 || argc > 2)
        return CLI_EXIT_USAGE;
    int64_t id;
    if (cli_cmd_parse_id("fetch", argv[0], &id) != 0)
        return CLI_EXIT_USAGE;
    char dir[1024], path[128];
    snprintf(dir, sizeof dir, "%s", argc == 2 ? argv[1] : "");
    if (dir[0] == '\0')
        snprintf(dir, sizeof dir, "trial-%" PRId64, id);
    CliError err;
    json_t *trial;
    snprintf(path, sizeof path, "/api/v1/trials/%" PRId64, id);
    if (cli_rest_json(h, "GET", path, NULL, 0, &trial, &err) != 0)
        return cli_cmd_fail(h, &err);
    const char *want =
        json_string_value(json_object_get(json_object_get(trial, "artifacts"), "sha256"));
    char want_copy[65] = "";
    if (want != NULL)
        snprintf(want_copy, sizeof want_copy, "%s", want);
    json_decref(trial);
    snprintf(path, sizeof path, "/api/v1/trials/%" PRId64 "/artifacts", id);
    CliReply reply;
    if (cli_rest_request(h, "GET", path, NULL, 0, &reply, &err) != 0)
        return cli_cmd_fail(h, &err);
    char got[65];
    sha256_hex(reply.body, reply.len, got);
    int rc = 0;
    if (want_copy[0] == '\0' || strcmp(got, want_copy) != 0)
        rc = cli_error_local(&err,
                             "trial %" PRId64 ": the artifacts received hash to %s, not %s: "
                             "nothing unpacked",
                             id, got, want_copy[0] ? want_copy : "(none given)");
    else if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        rc = cli_error_local(&err, "cannot make %s: %s", dir, strerror(errno));
    else
        rc = unpack(reply.body, reply.len, dir, &err);
    size_t bytes = reply.len;
    cli_rest_reply_free(&reply);
    if (rc != 0)
        return cli_cmd_fail(h, &err);
    printf("trial %" PRId64 ": artifacts (%zu bytes, sha256:%.12s…) in %s\n", id, bytes, got, dir);
    return CLI_EXIT_OK;
}
