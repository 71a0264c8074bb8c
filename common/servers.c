/* Several addresses of rungd (servers.h). */
#include "servers.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

int rung_servers_parse(const char *list, RungServers *out, char *why, size_t why_n)
{
    out->n = 0;
    const char *p = list;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        while (len > 0 && (*p == ' ' || *p == '\t')) {
            p++;
            len--;
        }
        while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t' || p[len - 1] == '/'))
            len--;
        if (len == 0) {
            snprintf(why, why_n, "an empty address in the server list '%.200s'", list);
            return -1;
        }
        if (out->n == RUNG_SERVERS_MAX) {
            snprintf(why, why_n, "more than %d addresses in the server list", RUNG_SERVERS_MAX);
            return -1;
        }
        bool schemed = memmem(p, len, "://", 3) != NULL;
        char *u = out->url[out->n];
        if ((size_t)snprintf(u, RUNG_SERVER_URL_MAX, "%s%.*s", schemed ? "" : "http://", (int)len,
                             p) >= RUNG_SERVER_URL_MAX) {
            snprintf(why, why_n, "the address '%.60s…' is too long", p);
            return -1;
        }
        if (strncasecmp(u, "http://", 7) != 0 && strncasecmp(u, "https://", 8) != 0) {
            snprintf(why, why_n, "the address '%.200s' must start with http:// or https://", u);
            return -1;
        }
        out->n++;
        if (end == NULL)
            return 0;
        p = end + 1;
    }
}

int rung_servers_find(const RungServers *s, const char *url)
{
    size_t len = strlen(url);
    while (len > 0 && url[len - 1] == '/')
        len--;
    for (int i = 0; i < s->n; i++)
        if (strlen(s->url[i]) == len && strncasecmp(s->url[i], url, len) == 0)
            return i;
    return -1;
}
