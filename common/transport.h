/* How the C clients (rung, rung-worker) reach rungd safely (docs/api.md,
 * "HTTPS"): which CA verifies an https:// server, whether verification
 * was turned off on request, and the refusal to send a token in plain
 * http:// to a machine other than this one. Header only: each client
 * links libcurl itself. */
#ifndef RUNG_COMMON_TRANSPORT_H
#define RUNG_COMMON_TRANSPORT_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct RungTransport {
    const char *ca_file; /* --ca / RUNG_CA: the CA bundle that verifies rungd; NULL: the system's */
    bool insecure;       /* --insecure / RUNG_INSECURE=1: no verification at all */
    bool allow_plain;    /* --allow-plain-http / RUNG_ALLOW_PLAIN_HTTP=1 */
} RungTransport;

static inline bool rung_env_true(const char *name)
{
    const char *v = getenv(name);
    return v != NULL &&
           (strcmp(v, "1") == 0 || strcasecmp(v, "true") == 0 || strcasecmp(v, "yes") == 0);
}

/* The environment's defaults, which flags then override. */
static inline RungTransport rung_transport_from_env(void)
{
    RungTransport t = {getenv("RUNG_CA"), rung_env_true("RUNG_INSECURE"),
                       rung_env_true("RUNG_ALLOW_PLAIN_HTTP")};
    if (t.ca_file != NULL && t.ca_file[0] == '\0')
        t.ca_file = NULL;
    return t;
}

/* Whether url's host is this machine: localhost, 127.0.0.0/8 or ::1. */
static inline bool rung_url_is_loopback(const char *url)
{
    const char *h = strstr(url, "://");
    h = h ? h + 3 : url;
    const char *at = strpbrk(h, "@/"); /* user@host: the host follows */
    if (at != NULL && *at == '@')
        h = at + 1;
    if (strncasecmp(h, "localhost", 9) == 0 && strchr(":/", h[9] ? h[9] : '/') != NULL)
        return true;
    if (strncmp(h, "[::1]", 5) == 0)
        return true;
    return strncmp(h, "127.", 4) == 0;
}

/* NULL, or why a request to url may not carry a token: plain http to
 * another machine sends it readable by anyone on the way. */
static inline const char *rung_plain_token_refusal(const char *url, bool has_token,
                                                   const RungTransport *t)
{
    if (!has_token || t->allow_plain || strncmp(url, "http://", 7) != 0 ||
        rung_url_is_loopback(url))
        return NULL;
    return "refusing to send the token over plain http:// to another machine: use https:// "
           "(rungd --tls-cert), or --allow-plain-http / RUNG_ALLOW_PLAIN_HTTP=1 on a network "
           "you trust";
}

/* The verification settings on a curl handle (after curl_easy_reset). */
static inline void rung_transport_setopt(CURL *c, const RungTransport *t)
{
    if (t->ca_file != NULL)
        curl_easy_setopt(c, CURLOPT_CAINFO, t->ca_file);
    if (t->insecure) {
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    }
}

#endif
