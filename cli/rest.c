/* The rung client's requests over libcurl; see rest.h. */
#include "rest.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fmt.h"
#include "servers.h"

/* A daemon on a reachable host accepts within a blink; a host that drops
 * packets should not freeze a command for curl's default of 300 s. */
#define CONNECT_TIMEOUT_S 5L
/* A whole request: the largest answers (a CSV of many thousand trials) come
 * from memory on the daemon's side, so this is generous. */
#define REQUEST_TIMEOUT_S 60L
/* Largest answer kept in memory: a CSV of a million trials fits; a daemon
 * (or something else on that port) streaming without end does not. */
#define REPLY_MAX ((size_t)512 << 20)

struct CliRest {
    CURL *curl;
    RungTransport transport; /* --ca, --insecure (common/transport.h) */
    RungServers servers;     /* rungd's addresses: a leader and its standbys (servers.h) */
    int cur;                 /* the one talked to */
    char base[CLI_URL_MAX];  /* servers.url[cur] */
    bool connect_failed;     /* the last attempt could not connect */
    struct curl_slist *auth; /* "Authorization: Bearer ..." or NULL */
};

typedef struct {
    char *data;
    size_t len, cap;
    bool too_big;
} Buffer;

int cli_error_local(CliError *err, const char *fmt, ...)
{
    memset(err, 0, sizeof *err);
    err->kind = CLI_ERR_LOCAL;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return -1;
}

/* Header values must not carry CR/LF (they would start a new header) nor
 * other control characters; printable ASCII is what a bearer token is. */
static bool token_ok(const char *token)
{
    for (const unsigned char *p = (const unsigned char *)token; *p; p++)
        if (*p < 0x21 || *p > 0x7E)
            return false;
    return true;
}

CliRest *cli_rest_new(const char *server, const char *token, CliError *err)
{
    size_t n = strlen(server);
    if (n == 0 || n >= CLI_URL_MAX - 8) {
        cli_error_local(err, "server URL must be 1 to %d characters", CLI_URL_MAX - 9);
        return NULL;
    }
    for (const unsigned char *p = (const unsigned char *)server; *p; p++) {
        if (*p < 0x20 || *p == 0x7F || (*p == ' ' && strchr(server, ',') == NULL)) {
            cli_error_local(err, "server URL must not contain spaces or control characters");
            return NULL;
        }
    }
    if (token != NULL && (strlen(token) > CLI_TOKEN_MAX || !token_ok(token))) {
        cli_error_local(err,
                        "token must be at most %d printable ASCII characters without "
                        "spaces",
                        CLI_TOKEN_MAX);
        return NULL;
    }
    CliRest *h = cli_xmalloc(sizeof *h);
    memset(h, 0, sizeof *h);
    /* "127.0.0.1:8080" is what people type; the daemon only speaks HTTP(S).
     * Several, comma-separated: a leader and its standbys. */
    char why[300];
    if (rung_servers_parse(server, &h->servers, why, sizeof why) != 0) {
        cli_error_local(err, "server URL: %s", why);
        free(h);
        return NULL;
    }
    snprintf(h->base, sizeof h->base, "%s", h->servers.url[0]);
    h->curl = curl_easy_init();
    if (h->curl == NULL) {
        cli_error_local(err, "cannot initialize libcurl");
        free(h);
        return NULL;
    }
    if (token != NULL && token[0] != '\0') {
        char header[CLI_TOKEN_MAX + 32];
        snprintf(header, sizeof header, "Authorization: Bearer %s", token);
        h->auth = curl_slist_append(NULL, header);
        if (h->auth == NULL) {
            cli_rest_free(h);
            cli_error_local(err, "out of memory");
            return NULL;
        }
    }
    return h;
}

void cli_rest_set_transport(CliRest *h, const RungTransport *t)
{
    h->transport = *t;
}

void cli_rest_free(CliRest *h)
{
    if (h == NULL)
        return;
    if (h->curl)
        curl_easy_cleanup(h->curl);
    curl_slist_free_all(h->auth);
    free(h);
}

const char *cli_rest_server(const CliRest *h)
{
    return h->base;
}

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    Buffer *b = userdata;
    size_t n = size * nmemb;
    if (n > REPLY_MAX - b->len) {
        b->too_big = true;
        return 0; /* makes curl stop with CURLE_WRITE_ERROR */
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        b->data = cli_xrealloc(b->data, cap);
        b->cap = cap;
    }
    memcpy(b->data + b->len, ptr, n);
    b->len += n;
    b->data[b->len] = '\0';
    return n;
}

/* An error answer: the docs/api.md shape when it is one, else the status and the
 * start of the body (a proxy's HTML page, say). */
static void api_error(CliError *err, long status, const Buffer *b)
{
    memset(err, 0, sizeof *err);
    err->kind = CLI_ERR_API;
    err->status = status;
    json_t *doc = b->data ? json_loadb(b->data, b->len, 0, NULL) : NULL;
    json_t *e = json_object_get(doc, "error");
    const char *code = json_string_value(json_object_get(e, "code"));
    const char *message = json_string_value(json_object_get(e, "message"));
    const char *field = json_string_value(json_object_get(e, "field"));
    if (code && message) {
        cli_fmt_sanitize(code, err->code, sizeof err->code, false);
        cli_fmt_sanitize(message, err->message, sizeof err->message, false);
        if (field)
            cli_fmt_sanitize(field, err->field, sizeof err->field, false);
    } else {
        snprintf(err->code, sizeof err->code, "http_%ld", status);
        char start[200] = "";
        if (b->data) {
            cli_fmt_sanitize(b->data, start, sizeof start, false);
        }
        snprintf(err->message, sizeof err->message, "HTTP %ld%s%s", status, start[0] ? ": " : "",
                 start);
    }
    json_decref(doc);
}

/* One request to h->base; see cli_rest_request. *standby: the answer was
 * a standby's (503, role "standby"), whose leader goes to leader. */
static int attempt(CliRest *h, const char *method, const char *path, const char *body, size_t len,
                   CliReply *reply, CliError *err, bool *standby, char *leader, size_t leader_n)
{
    *standby = false;
    h->connect_failed = false;
    memset(reply, 0, sizeof *reply);
    memset(err, 0, sizeof *err);
    char url[CLI_URL_MAX + 256];
    snprintf(url, sizeof url, "%s%s", h->base, path);
    char errbuf[CURL_ERROR_SIZE] = "";
    Buffer b = {0};
    CURL *c = h->curl;
    curl_easy_reset(c); /* keeps the connection cache, forgets the last request */
    rung_transport_setopt(c, &h->transport);
    struct curl_slist *headers = NULL;
    for (struct curl_slist *a = h->auth; a; a = a->next)
        headers = curl_slist_append(headers, a->data);
    headers = curl_slist_append(headers, "Accept: application/json");
    /* A POST without a body (cancel) must not get curl's default form
     * content type, which the daemon rightly refuses with 415. */
    headers = curl_slist_append(headers,
                                body != NULL ? "Content-Type: application/json" : "Content-Type:");
    /* Ask for the body at once: "Expect: 100-continue" would cost a round
     * trip on every spec larger than 1 KiB. */
    headers = curl_slist_append(headers, "Expect:");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L); /* no SIGALRM for resolver timeouts */
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_S);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, REQUEST_TIMEOUT_S);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "rung-cli/1");
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    /* Never follow a redirect with our token to wherever it points. */
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    if (strcmp(method, "GET") != 0) {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? len : 0));
    }
    CURLcode rc = curl_easy_perform(c);
    curl_slist_free_all(headers);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_OK) {
        free(b.data);
        if (b.too_big) {
            err->kind = CLI_ERR_REPLY;
            snprintf(err->message, sizeof err->message, "answer to %s %s is larger than %zu MiB",
                     method, path, REPLY_MAX >> 20);
            return -1;
        }
        err->kind = CLI_ERR_CONNECT;
        /* Nothing was sent: another address may take it. */
        h->connect_failed = rc == CURLE_COULDNT_CONNECT;
        cli_fmt_sanitize(errbuf[0] ? errbuf : curl_easy_strerror(rc), err->message,
                         sizeof err->message, false);
        return -1;
    }
    if (status < 200 || status > 299) {
        api_error(err, status, &b);
        json_t *doc = status == 503 && b.data ? json_loads(b.data, 0, NULL) : NULL;
        const char *role = json_string_value(json_object_get(doc, "role"));
        if (role != NULL && strcmp(role, "standby") == 0) {
            *standby = true;
            snprintf(leader, leader_n, "%s",
                     json_string_value(json_object_get(doc, "leader")) ?: "");
        }
        json_decref(doc);
        free(b.data);
        return -1;
    }
    if (b.data == NULL)
        b.data = cli_xstrdup("");
    reply->status = status;
    reply->body = b.data;
    reply->len = b.len;
    return 0;
}

/* With several addresses, how long a request goes on trying them while
 * none leads (a standby takes over within a few seconds). */
#define FAILOVER_WAIT_S 10

int cli_rest_request(CliRest *h, const char *method, const char *path, const char *body, size_t len,
                     CliReply *reply, CliError *err)
{
    int tries = h->servers.n > 1 ? h->servers.n * (FAILOVER_WAIT_S + 1) : 1;
    for (int i = 0;; i++) {
        bool standby;
        char leader[RUNG_SERVER_URL_MAX];
        int rc = attempt(h, method, path, body, len, reply, err, &standby, leader, sizeof leader);
        /* Only what was surely not done goes elsewhere: a refused
         * connection or a standby's answer (a request that may have reached
         * a leader is not sent twice). */
        bool refused = rc != 0 && err->kind == CLI_ERR_CONNECT && h->connect_failed;
        if (rc == 0 || (!standby && !refused) || i + 1 >= tries)
            return rc;
        int next = standby ? rung_servers_find(&h->servers, leader) : -1;
        if (next < 0 || next == h->cur)
            next = (h->cur + 1) % h->servers.n;
        h->cur = next;
        snprintf(h->base, sizeof h->base, "%s", h->servers.url[next]);
        /* Each address once, then a second's pause. */
        if ((i + 1) % h->servers.n == 0)
            sleep(1);
    }
}

void cli_rest_reply_free(CliReply *reply)
{
    free(reply->body);
    memset(reply, 0, sizeof *reply);
}

int cli_rest_json(CliRest *h, const char *method, const char *path, const char *body, size_t len,
                  json_t **out, CliError *err)
{
    *out = NULL;
    CliReply reply;
    if (cli_rest_request(h, method, path, body, len, &reply, err) != 0)
        return -1;
    json_error_t jerr;
    json_t *doc = json_loadb(reply.body, reply.len, 0, &jerr);
    cli_rest_reply_free(&reply);
    if (!json_is_object(doc)) {
        json_decref(doc);
        memset(err, 0, sizeof *err);
        err->kind = CLI_ERR_REPLY;
        snprintf(err->message, sizeof err->message, "%s %s: answer is not a JSON object%s%s",
                 method, path, doc ? "" : ": ", doc ? "" : jerr.text);
        return -1;
    }
    *out = doc;
    return 0;
}

bool cli_error_transient(const CliError *err)
{
    return err->kind == CLI_ERR_CONNECT ||
           (err->kind == CLI_ERR_API &&
            (err->status == 502 || err->status == 503 || err->status == 504));
}

void cli_error_print(const CliError *err, const char *server)
{
    switch (err->kind) {
    case CLI_ERR_CONNECT:
        fprintf(stderr, "rung: cannot reach rungd at %s: %s\n", server ? server : "(server)",
                err->message);
        break;
    case CLI_ERR_API:
        fprintf(stderr, "rung: %s: %s", err->code, err->message);
        if (err->field[0])
            fprintf(stderr, " (field %s)", err->field);
        fputc('\n', stderr);
        if (err->status == 401)
            fputs("rung: hint: pass --token T or set RUNG_TOKEN to the daemon's token\n", stderr);
        break;
    case CLI_ERR_REPLY:
        fprintf(stderr, "rung: bad answer from rungd at %s: %s\n", server ? server : "(server)",
                err->message);
        break;
    case CLI_ERR_LOCAL:
    case CLI_ERR_NONE:
        fprintf(stderr, "rung: %s\n", err->message);
        break;
    }
}

int cli_rest_head(CliRest *h, const char *path, long *status, CliError *err)
{
    memset(err, 0, sizeof *err);
    char url[CLI_URL_MAX + 256];
    snprintf(url, sizeof url, "%s%s", h->base, path);
    char errbuf[CURL_ERROR_SIZE] = "";
    CURL *c = h->curl;
    curl_easy_reset(c);
    rung_transport_setopt(c, &h->transport);
    struct curl_slist *headers = NULL;
    for (struct curl_slist *a = h->auth; a; a = a->next)
        headers = curl_slist_append(headers, a->data);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_S);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, REQUEST_TIMEOUT_S);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "rung-cli/1");
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    CURLcode rc = curl_easy_perform(c);
    curl_slist_free_all(headers);
    *status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    if (rc != CURLE_OK) {
        err->kind = CLI_ERR_CONNECT;
        cli_fmt_sanitize(errbuf[0] ? errbuf : curl_easy_strerror(rc), err->message,
                         sizeof err->message, false);
        return -1;
    }
    return 0;
}

int cli_rest_put_file(CliRest *h, const char *path, const char *file_path, const char *content_type,
                      json_t **out, CliError *err)
{
    *out = NULL;
    memset(err, 0, sizeof *err);
    FILE *f = fopen(file_path, "rb");
    struct stat st;
    if (f == NULL || fstat(fileno(f), &st) != 0) {
        if (f != NULL)
            fclose(f);
        return cli_error_local(err, "cannot read %s: %s", file_path, strerror(errno));
    }
    char url[CLI_URL_MAX + 256];
    snprintf(url, sizeof url, "%s%s", h->base, path);
    char errbuf[CURL_ERROR_SIZE] = "", type[128];
    snprintf(type, sizeof type, "Content-Type: %s", content_type);
    Buffer b = {0};
    CURL *c = h->curl;
    curl_easy_reset(c);
    rung_transport_setopt(c, &h->transport);
    struct curl_slist *headers = NULL;
    for (struct curl_slist *a = h->auth; a; a = a->next)
        headers = curl_slist_append(headers, a->data);
    headers = curl_slist_append(headers, "Accept: application/json");
    headers = curl_slist_append(headers, type);
    headers = curl_slist_append(headers, "Expect:");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_S);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "rung-cli/1");
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_READDATA, f);
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)st.st_size);
    CURLcode rc = curl_easy_perform(c);
    curl_slist_free_all(headers);
    fclose(f);
    long status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    if (rc != CURLE_OK && !(status >= 400 && b.data != NULL)) {
        free(b.data);
        err->kind = CLI_ERR_CONNECT;
        cli_fmt_sanitize(errbuf[0] ? errbuf : curl_easy_strerror(rc), err->message,
                         sizeof err->message, false);
        return -1;
    }
    if (status < 200 || status > 299) {
        api_error(err, status, &b);
        free(b.data);
        return -1;
    }
    json_t *doc = b.data ? json_loadb(b.data, b.len, 0, NULL) : NULL;
    free(b.data);
    if (!json_is_object(doc)) {
        json_decref(doc);
        err->kind = CLI_ERR_REPLY;
        snprintf(err->message, sizeof err->message, "PUT %s: answer is not a JSON object", path);
        return -1;
    }
    *out = doc;
    return 0;
}
