/* The dashboard's files, served from one folder (--web-dir); see
 * http_internal.h. */
#include "http_internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *mime_of(const char *path)
{
    const char *dot = strrchr(path, '.');
    if (dot == NULL)
        return "application/octet-stream";
    static const struct {
        const char *ext, *type;
    } types[] = {
        {".html", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".mjs", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".svg", "image/svg+xml"},
        {".png", "image/png"},
        {".json", "application/json; charset=utf-8"},
        {".ico", "image/x-icon"},
    };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(dot, types[i].ext) == 0)
            return types[i].type;
    return "application/octet-stream";
}

static const char fallback_page[] =
    "<!doctype html><meta charset=utf-8><title>Rung</title>"
    "<h1>Rung</h1><p>rungd is running. The dashboard's files were not found in its "
    "--web-dir; the REST API is at <code>/api/v1</code> (try "
    "<a href=\"/api/v1/experiments\">/api/v1/experiments</a>).</p>";

/* What of web_dir the dashboard's page loads (web/index.html): the page,
 * its style sheet, its modules and uPlot's built files. The rest of the
 * folder (package.json, README.md, the other npm packages) is not served. */
static bool dashboard_file(const char *rel)
{
    return strcmp(rel, "/index.html") == 0 || strcmp(rel, "/style.css") == 0 ||
           strncmp(rel, "/js/", 4) == 0 || strncmp(rel, "/node_modules/uplot/dist/", 25) == 0;
}

/* Serves a file of web_dir. Paths are checked by character and segment so
 * that nothing outside the folder can be named (no "..", no hidden files). */
enum MHD_Result http_serve_static(Http *h, struct MHD_Connection *c, const char *url)
{
    const char *rel = strcmp(url, "/") == 0 ? "/index.html" : url;
    bool ok = strlen(rel) < 256 && dashboard_file(rel);
    for (const char *p = rel; ok && *p; p++) {
        char ch = *p;
        ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
             ch == '/' || ch == '-' || ch == '_' || ch == '.';
        if (ch == '/' && p[1] == '.')
            ok = false; /* "..", "./" and dot files */
    }
    if (ok && h->web_dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s%s", h->web_dir, rel);
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        struct stat st;
        if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
            struct MHD_Response *r = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
            if (r == NULL) {
                close(fd);
                return MHD_NO;
            }
            MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, mime_of(path));
            MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
            enum MHD_Result rc = MHD_queue_response(c, MHD_HTTP_OK, r);
            MHD_destroy_response(r);
            return rc;
        }
        if (fd >= 0)
            close(fd);
    }
    if (strcmp(rel, "/index.html") == 0) {
        struct MHD_Response *r = MHD_create_response_from_buffer(sizeof fallback_page - 1,
                                                                 (void *)fallback_page,
                                                                 MHD_RESPMEM_PERSISTENT);
        if (r == NULL)
            return MHD_NO;
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/html; charset=utf-8");
        enum MHD_Result rc = MHD_queue_response(c, MHD_HTTP_OK, r);
        MHD_destroy_response(r);
        return rc;
    }
    return http_send_error(c, RUNG_E_NOT_FOUND, "", "no such file");
}
