/* How the C clients (rung, rung-worker) reach rungd safely (docs/api.md,
 * "HTTPS"): which CA verifies an https:// server, whether verification
 * was turned off on request, and the refusal to send a token in plain
 * http:// to a machine other than this one. Header only: each client
 * links libcurl itself. */
#ifndef RUNG_COMMON_TRANSPORT_H
#define RUNG_COMMON_TRANSPORT_H

#include <arpa/inet.h>
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

/* Whether host (as curl's URL parser gives it: IPv6 in brackets) is this
 * machine: localhost, 127.0.0.0/8, ::1 (or ::ffff:127.x.y.z). Other names
 * are not resolved: "127.example.com" may be anywhere. */
static inline bool rung_host_is_loopback(const char *host)
{
    if (strcasecmp(host, "localhost") == 0)
        return true;
    struct in_addr v4;
    if (inet_pton(AF_INET, host, &v4) == 1)
        return (ntohl(v4.s_addr) >> 24) == 127;
    char bare[64];
    size_t n = strlen(host);
    if (n < 3 || n - 2 >= sizeof bare || host[0] != '[' || host[n - 1] != ']')
        return false;
    memcpy(bare, host + 1, n - 2);
    bare[n - 2] = '\0';
    struct in6_addr v6;
    if (inet_pton(AF_INET6, bare, &v6) != 1)
        return false;
    return IN6_IS_ADDR_LOOPBACK(&v6) || (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127);
}

/* Whether url's host is this machine, as the parser curl itself uses reads
 * it (so "http://10.0.0.1?@127.0.0.1" is 10.0.0.1). A URL curl cannot parse
 * is not. */
static inline bool rung_url_is_loopback(const char *url)
{
    CURLU *u = curl_url();
    char *host = NULL;
    bool loopback = u != NULL && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
                    curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
                    rung_host_is_loopback(host);
    curl_free(host);
    curl_url_cleanup(u);
    return loopback;
}

/* NULL, or why a request to url may not carry a token: plain http to
 * another machine sends it readable by anyone on the way. */
static inline const char *rung_plain_token_refusal(const char *url, bool has_token,
                                                   const RungTransport *t)
{
    if (!has_token || t->allow_plain || strncasecmp(url, "http://", 7) != 0 ||
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
