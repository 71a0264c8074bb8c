/* Unit tests of Population Based Training's checkpoint copies through
 * rungd, against a small HTTP server on loopback run by a thread of this
 * test (it answers from a script and records what it was sent):
 * client_put_file sends the file's exact bytes with its Content-Type,
 * X-Rung-Sha256 and Authorization, and the same Client goes on with JSON
 * requests; a 5xx is retried max_retries times, a 4xx never;
 * client_get_file writes a 200's body to the file, refuses a body longer
 * than max_bytes (not retried, no file left) and reads a 404's JSON error;
 * ckptxfer_download unpacks a tar whose hash matches and refuses one whose
 * hash differs (nothing extracted, no temporary file left); the uploader
 * thread packs the folder rungd asks for, does not queue a pair that is in
 * flight, skips a missing folder, leaves nothing in uploads/, and is
 * canceled promptly while a request hangs; a lease reply's checkpoint_from
 * as wtrial_new reads it; the cache of working directories (blobcache.h)
 * downloads a blob once, refuses one whose hash differs, quotes rungd's
 * 404 and removes the least recently used blob that is not held. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "blobcache.h"
#include "ckpt.h"
#include "ckptxfer.h"
#include "client.h"
#include "clock.h"
#include "trial.h"
#include "worker.h"

static char root[] = "/tmp/rung-test-ckptxfer-XXXXXX";

/* ---- files ---- */

static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* The whole file (NULL when it cannot be opened); *n its length. */
static char *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    assert_non_null(buf);
    size_t k;
    while ((k = fread(buf + len, 1, cap - len, f)) > 0) {
        len += k;
        if (len == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
    }
    fclose(f);
    *n = len;
    return buf;
}

static bool exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Entries of a folder other than . and .. (-1 when it cannot be read). */
static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static void remove_tree(const char *path)
{
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void path_of(char *out, const char *a, const char *b)
{
    int n = snprintf(out, PATH_MAX, "%s/%s", a, b);
    assert_true(n > 0 && n < PATH_MAX);
}

/* n bytes that are not all alike. */
static char *pattern(size_t n, unsigned seed)
{
    char *p = malloc(n ? n : 1);
    assert_non_null(p);
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        p[i] = (char)(x >> 24);
    }
    return p;
}

/* A trial folder with a checkpoint, a sub-folder and its own logs. */
static void make_trial(const char *dir, size_t ckpt_size)
{
    char p[PATH_MAX];
    assert_int_equal(mkdir(dir, 0700), 0);
    char *data = pattern(ckpt_size, 7);
    path_of(p, dir, "ckpt-12");
    write_bytes(p, data, ckpt_size);
    free(data);
    path_of(p, dir, "sub");
    assert_int_equal(mkdir(p, 0700), 0);
    path_of(p, dir, "sub/notes.txt");
    write_bytes(p, "hello\n", 6);
    path_of(p, dir, "stdout.log");
    write_bytes(p, "out\n", 4);
    path_of(p, dir, "stderr.log");
    write_bytes(p, "err\n", 4);
}

/* Whether two files hold the same bytes. */
static bool same_file(const char *a, const char *b)
{
    size_t na, nb;
    char *x = read_all(a, &na), *y = read_all(b, &nb);
    bool same = x && y && na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return same;
}

/* ---- the fake rungd ---- */

#define MAX_ANSWERS 8
#define HOLD_MAX_MS 20000 /* a held answer is given anyway after this */

typedef struct Answer {
    int status; /* 0: close the connection without a reply */
    const char *type;
    const char *body;
    size_t len; /* 0: strlen(body) */
} Answer;

typedef struct Server {
    int fd, port;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool stop;
    bool hold; /* requests wait for their answer until this is false */
    /* the script: answer i goes to request i, the last one to the rest */
    Answer answers[MAX_ANSWERS];
    int n_answers;
    /* what came */
    int requests;
    char method[16], path[256];
    char *headers; /* the last request's header block */
    char *body;    /* its body */
    size_t body_len;
} Server;

static Server srv;

static void server_script(int n, const Answer *answers)
{
    pthread_mutex_lock(&srv.mu);
    for (int i = 0; i < n; i++)
        srv.answers[i] = answers[i];
    srv.n_answers = n;
    srv.requests = 0;
    pthread_mutex_unlock(&srv.mu);
}

static int server_requests(void)
{
    pthread_mutex_lock(&srv.mu);
    int n = srv.requests;
    pthread_mutex_unlock(&srv.mu);
    return n;
}

static void server_hold(bool hold)
{
    pthread_mutex_lock(&srv.mu);
    srv.hold = hold;
    pthread_cond_broadcast(&srv.cond);
    pthread_mutex_unlock(&srv.mu);
}

/* The value of header name in the last request ("" when absent), copied. */
static void header_of(const char *name, char *out, size_t size)
{
    out[0] = '\0';
    pthread_mutex_lock(&srv.mu);
    size_t n = strlen(name);
    for (const char *p = srv.headers; p && *p;) {
        const char *end = strstr(p, "\r\n");
        if (end == NULL)
            break;
        if (strncasecmp(p, name, n) == 0 && p[n] == ':') {
            const char *v = p + n + 1;
            while (*v == ' ')
                v++;
            snprintf(out, size, "%.*s", (int)(end - v), v);
            break;
        }
        p = end + 2;
    }
    pthread_mutex_unlock(&srv.mu);
}

static void send_all(int fd, const char *data, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, data, n, MSG_NOSIGNAL);
        if (w <= 0)
            return; /* the client went away */
        data += w;
        n -= (size_t)w;
    }
}

/* Reads one request from fd and answers it; the connection is closed after. */
static void serve(int fd)
{
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    char *end = NULL;
    while (end == NULL) {
        if (len + 1 >= cap)
            buf = realloc(buf, cap *= 2);
        ssize_t n = recv(fd, buf + len, cap - len - 1, 0);
        if (n <= 0) {
            free(buf);
            return;
        }
        len += (size_t)n;
        buf[len] = '\0';
        end = strstr(buf, "\r\n\r\n");
    }
    size_t head = (size_t)(end - buf) + 4;
    size_t want = 0;
    for (const char *p = strstr(buf, "\r\n") + 2; p < end; p = strstr(p, "\r\n") + 2)
        if (strncasecmp(p, "Content-Length:", 15) == 0)
            want = strtoul(p + 15, NULL, 10);
    while (len < head + want) {
        if (len + 1 >= cap)
            buf = realloc(buf, cap *= 2);
        ssize_t n = recv(fd, buf + len, cap - len - 1, 0);
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    pthread_mutex_lock(&srv.mu);
    sscanf(buf, "%15s %255s", srv.method, srv.path);
    free(srv.headers);
    srv.headers = strndup(buf, head);
    free(srv.body);
    srv.body_len = len > head ? len - head : 0;
    srv.body = malloc(srv.body_len + 1);
    memcpy(srv.body, buf + head, srv.body_len);
    int i = srv.requests < srv.n_answers ? srv.requests : srv.n_answers - 1;
    Answer a = srv.answers[i];
    srv.requests++;
    pthread_cond_broadcast(&srv.cond);
    int64_t until = rung_mono_ns() + HOLD_MAX_MS * 1000000LL;
    while (srv.hold && !srv.stop && rung_mono_ns() < until) {
        pthread_mutex_unlock(&srv.mu);
        struct timespec ts = {0, 5000000};
        nanosleep(&ts, NULL);
        pthread_mutex_lock(&srv.mu);
    }
    pthread_mutex_unlock(&srv.mu);
    free(buf);
    if (a.status == 0)
        return;
    size_t blen = a.len ? a.len : strlen(a.body);
    char top[256];
    int n = snprintf(top, sizeof top,
                     "HTTP/1.1 %d X\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n",
                     a.status, a.type, blen);
    send_all(fd, top, (size_t)n);
    send_all(fd, a.body, blen);
}

static void *server_main(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&srv.mu);
        bool stop = srv.stop;
        pthread_mutex_unlock(&srv.mu);
        if (stop)
            return NULL;
        struct pollfd p = {.fd = srv.fd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0)
            continue;
        int c = accept(srv.fd, NULL, NULL);
        if (c < 0)
            continue;
        serve(c);
        close(c);
    }
}

static void server_start(void)
{
    memset(&srv, 0, sizeof srv);
    pthread_mutex_init(&srv.mu, NULL);
    pthread_cond_init(&srv.cond, NULL);
    srv.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(srv.fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(srv.fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(srv.fd, 16), 0);
    socklen_t len = sizeof a;
    assert_int_equal(getsockname(srv.fd, (struct sockaddr *)&a, &len), 0);
    srv.port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&srv.thread, NULL, server_main, NULL), 0);
}

static void server_stop(void)
{
    pthread_mutex_lock(&srv.mu);
    srv.stop = true;
    pthread_mutex_unlock(&srv.mu);
    pthread_join(srv.thread, NULL);
    close(srv.fd);
    free(srv.headers);
    free(srv.body);
    pthread_cond_destroy(&srv.cond);
    pthread_mutex_destroy(&srv.mu);
}

static char base_url[64];

static int setup(void **state)
{
    (void)state;
    if (mkdtemp(root) == NULL || curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
        return -1;
    server_start();
    snprintf(base_url, sizeof base_url, "http://127.0.0.1:%d/", srv.port);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    server_stop();
    remove_tree(root);
    curl_global_cleanup();
    return 0;
}

static const char OK_JSON[] = "{\"trial\": 18, \"step\": 12}";

/* ---- client_put_file ---- */

static void test_put_file_sends_the_bytes(void **state)
{
    (void)state;
    char file[PATH_MAX], sha[65], hdr[256];
    path_of(file, root, "put.bin");
    size_t n = 300 * 1024 + 17; /* several of curl's reads */
    char *data = pattern(n, 3);
    write_bytes(file, data, n);
    int64_t size;
    assert_int_equal(ckpt_sha256_file(file, sha, &size), 0);
    assert_int_equal(size, (int64_t)n);
    char upper[65];
    for (int i = 0; i < 65; i++)
        upper[i] = (char)(sha[i] >= 'a' && sha[i] <= 'f' ? sha[i] - 32 : sha[i]);

    Answer ok = {200, "application/json", OK_JSON, 0};
    server_script(1, &ok);
    Client *c = client_new(base_url, "s3cret");
    assert_non_null(c);
    ClientReply reply;
    ClientCall call = {.retry = true, .max_retries = 2};
    assert_int_equal(client_put_file(c, "/api/v1/trials/18/checkpoint?step=12", file, upper, &call,
                                     &reply),
                     0);
    assert_int_equal(reply.status, 200);
    assert_int_equal(json_integer_value(json_object_get(reply.body, "trial")), 18);
    client_reply_clear(&reply);
    assert_int_equal(server_requests(), 1);
    assert_string_equal(srv.method, "PUT");
    assert_string_equal(srv.path, "/api/v1/trials/18/checkpoint?step=12");
    assert_int_equal(srv.body_len, n);
    assert_memory_equal(srv.body, data, n);
    header_of("Content-Type", hdr, sizeof hdr);
    assert_string_equal(hdr, "application/octet-stream");
    header_of("X-Rung-Sha256", hdr, sizeof hdr);
    assert_string_equal(hdr, sha); /* lowercase, whatever the caller's case */
    header_of("Authorization", hdr, sizeof hdr);
    assert_string_equal(hdr, "Bearer s3cret");
    header_of("Content-Length", hdr, sizeof hdr);
    assert_int_equal(strtoll(hdr, NULL, 10), (long long)n);

    /* The same handle goes on with JSON: a POST, not a PUT, with JSON's type. */
    server_script(1, &ok);
    json_t *body = json_pack("{s:i}", "x", 1);
    assert_int_equal(client_post(c, "/api/v1/workers/1/heartbeat", body, NULL, &reply), 0);
    json_decref(body);
    assert_int_equal(reply.status, 200);
    client_reply_clear(&reply);
    assert_string_equal(srv.method, "POST");
    header_of("Content-Type", hdr, sizeof hdr);
    assert_string_equal(hdr, "application/json");
    header_of("X-Rung-Sha256", hdr, sizeof hdr);
    assert_string_equal(hdr, "");
    assert_int_equal(srv.body_len, strlen("{\"x\":1}"));
    assert_memory_equal(srv.body, "{\"x\":1}", srv.body_len);

    /* A file that is not there, or a hash that is not one: nothing sent. */
    server_script(1, &ok);
    assert_int_equal(client_put_file(c, "/x", "/nonexistent/file", sha, NULL, &reply), -1);
    assert_non_null(strstr(reply.error, "/nonexistent/file"));
    client_reply_clear(&reply);
    assert_int_equal(client_put_file(c, "/x", file, "abc", NULL, &reply), -1);
    client_reply_clear(&reply);
    assert_int_equal(server_requests(), 0);
    client_free(c);
    free(data);
}

static void test_put_file_retries(void **state)
{
    (void)state;
    char file[PATH_MAX], sha[65];
    path_of(file, root, "retry.bin");
    char *data = pattern(5000, 4);
    write_bytes(file, data, 5000);
    assert_int_equal(ckpt_sha256_file(file, sha, NULL), 0);
    Client *c = client_new(base_url, NULL);
    ClientReply reply;
    ClientCall call = {.retry = true, .max_retries = 2, .what = "test upload"};

    /* A 503 and no reply are retried; the third try's 200 is the answer,
     * and its bytes are the whole file again. */
    Answer flaky[] = {{503, "application/json", "{}", 0},
                      {0, NULL, NULL, 0},
                      {200, "application/json", OK_JSON, 0}};
    server_script(3, flaky);
    assert_int_equal(client_put_file(c, "/p", file, sha, &call, &reply), 0);
    assert_int_equal(reply.status, 200);
    client_reply_clear(&reply);
    assert_int_equal(server_requests(), 3);
    assert_int_equal(srv.body_len, 5000);
    assert_memory_equal(srv.body, data, 5000);
    char hdr[64];
    header_of("Authorization", hdr, sizeof hdr);
    assert_string_equal(hdr, ""); /* no token, no header */

    /* 5xx every time: given up after max_retries, the last reply handed back. */
    Answer down = {500, "application/json",
                   "{\"error\": {\"code\": \"internal\", \"message\": \"disk full\"}}", 0};
    server_script(1, &down);
    assert_int_equal(client_put_file(c, "/p", file, sha, &call, &reply), 0);
    assert_int_equal(reply.status, 500);
    assert_string_equal(reply.error, "500 internal: disk full");
    client_reply_clear(&reply);
    assert_int_equal(server_requests(), 3);

    /* A 4xx is final at once. */
    Answer gone = {409, "application/json",
                   "{\"error\": {\"code\": \"conflict\", \"message\": \"not owed\"}}", 0};
    server_script(1, &gone);
    assert_int_equal(client_put_file(c, "/p", file, sha, &call, &reply), 0);
    assert_int_equal(reply.status, 409);
    assert_string_equal(reply.error, "409 conflict: not owed");
    client_reply_clear(&reply);
    assert_int_equal(server_requests(), 1);
    client_free(c);
    free(data);
}

/* ---- client_get_file ---- */

static void test_get_file(void **state)
{
    (void)state;
    char dest[PATH_MAX], hdr[128];
    path_of(dest, root, "got.tar");
    size_t n = 200 * 1024 + 5;
    char *data = pattern(n, 5);
    Answer tar = {200, "application/x-tar", data, n};
    server_script(1, &tar);
    Client *c = client_new(base_url, "tok");
    ClientReply reply;
    ClientCall call = {.retry = true, .max_retries = 2};
    assert_int_equal(client_get_file(c, "/api/v1/trials/18/checkpoint?step=12", dest, (int64_t)n,
                                     &call, &reply),
                     0);
    assert_int_equal(reply.status, 200);
    assert_null(reply.body);
    client_reply_clear(&reply);
    assert_string_equal(srv.method, "GET");
    assert_string_equal(srv.path, "/api/v1/trials/18/checkpoint?step=12");
    header_of("Authorization", hdr, sizeof hdr);
    assert_string_equal(hdr, "Bearer tok");
    size_t got_n;
    char *got = read_all(dest, &got_n);
    assert_non_null(got);
    assert_int_equal(got_n, n);
    assert_memory_equal(got, data, n);
    free(got);
    struct stat st;
    assert_int_equal(stat(dest, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);

    /* One byte more than allowed: refused, not retried, no file left. */
    server_script(1, &tar);
    assert_int_equal(client_get_file(c, "/p", dest, (int64_t)n - 1, &call, &reply), -1);
    assert_non_null(strstr(reply.error, "longer than"));
    client_reply_clear(&reply);
    assert_int_equal(server_requests(), 1);
    assert_false(exists(dest));

    /* A 404's JSON error is read; no file is left. */
    Answer absent = {404, "application/json",
                     "{\"error\": {\"code\": \"not_found\", \"message\": \"no checkpoint\"}}", 0};
    server_script(1, &absent);
    assert_int_equal(client_get_file(c, "/p", dest, 10, &call, &reply), 0);
    assert_int_equal(reply.status, 404);
    assert_string_equal(reply.error, "404 not_found: no checkpoint");
    client_reply_clear(&reply);
    assert_false(exists(dest));

    /* A 503 first: the retry's body replaces what the first try wrote. */
    Answer flaky[] = {{503, "application/json", "{}", 0}, tar};
    server_script(2, flaky);
    assert_int_equal(client_get_file(c, "/p", dest, (int64_t)n, &call, &reply), 0);
    assert_int_equal(reply.status, 200);
    client_reply_clear(&reply);
    got = read_all(dest, &got_n);
    assert_int_equal(got_n, n);
    assert_memory_equal(got, data, n);
    free(got);
    unlink(dest);
    client_free(c);
    free(data);
}

/* ---- ckptxfer_download ---- */

/* The receiver's lease token, as a lease reply could give any string: it
 * goes into the query percent-encoded. */
#define LEASE "a b&c"

static void test_download_checks_the_hash(void **state)
{
    (void)state;
    char src[PATH_MAX], tar[PATH_MAX], tmp[PATH_MAX], dest[PATH_MAX], p[PATH_MAX], q[PATH_MAX];
    char sha[65], err[1024];
    path_of(src, root, "donor");
    path_of(tar, root, "donor.tar");
    path_of(tmp, root, "dl-tmp");
    path_of(dest, root, "receiver");
    make_trial(src, 40000);
    assert_int_equal(mkdir(tmp, 0700), 0);
    int64_t size;
    assert_int_equal(ckpt_pack(src, tar, sha, &size, err, sizeof err), 0);
    size_t n;
    char *bytes = read_all(tar, &n);
    assert_int_equal((int64_t)n, size);
    Client *c = client_new(base_url, NULL);
    ClientCall call = {.retry = true, .max_retries = 1};
    int64_t got = -1;

    /* A body changed by one byte: its hash differs; nothing extracted. */
    char *bad = malloc(n);
    memcpy(bad, bytes, n);
    bad[n / 2] ^= 0x20;
    Answer tampered = {200, "application/x-tar", bad, n};
    server_script(1, &tampered);
    XferResult r = ckptxfer_download(c, 18, 12, sha, size, 5, LEASE, tmp, dest, &call, &got, err,
                                     sizeof err);
    assert_int_equal(r, XFER_FAILED);
    assert_non_null(strstr(err, "sha256 mismatch"));
    assert_false(exists(dest));
    assert_int_equal(count_entries(tmp), 0); /* the temporary file is gone */
    assert_string_equal(srv.path, "/api/v1/trials/18/checkpoint?step=12&worker=5&lease_token="
                                  "a%20b%26c");

    /* The right bytes, but the lease reply's hash is another: the same. */
    Answer good = {200, "application/x-tar", bytes, n};
    server_script(1, &good);
    char other[65];
    memcpy(other, sha, 65);
    other[0] = other[0] == '0' ? '1' : '0';
    r = ckptxfer_download(c, 18, 12, other, size, 5, LEASE, tmp, dest, &call, &got, err,
                          sizeof err);
    assert_int_equal(r, XFER_FAILED);
    assert_non_null(strstr(err, "sha256 mismatch"));
    assert_false(exists(dest));
    assert_int_equal(count_entries(tmp), 0);

    /* A body longer than the size announced: refused. */
    server_script(1, &good);
    r = ckptxfer_download(c, 18, 12, sha, size - 1, 5, LEASE, tmp, dest, &call, &got, err,
                          sizeof err);
    assert_int_equal(r, XFER_FAILED);
    assert_non_null(strstr(err, "longer than"));
    assert_false(exists(dest));
    assert_int_equal(count_entries(tmp), 0);

    /* rungd has none: its error is said. */
    Answer absent = {404, "application/json",
                     "{\"error\": {\"code\": \"not_found\", \"message\": \"no checkpoint\"}}", 0};
    server_script(1, &absent);
    r = ckptxfer_download(c, 18, 12, sha, size, 5, LEASE, tmp, dest, &call, &got, err, sizeof err);
    assert_int_equal(r, XFER_REFUSED);
    assert_non_null(strstr(err, "404 not_found: no checkpoint"));
    assert_int_equal(count_entries(tmp), 0);

    /* A malformed hash or size from the lease reply: nothing is asked. */
    server_script(1, &good);
    r = ckptxfer_download(c, 18, 12, "xyz", size, 5, LEASE, tmp, dest, &call, &got, err,
                          sizeof err);
    assert_int_equal(r, XFER_FAILED);
    r = ckptxfer_download(c, 18, 12, sha, -1, 5, LEASE, tmp, dest, &call, &got, err, sizeof err);
    assert_int_equal(r, XFER_FAILED);
    assert_int_equal(server_requests(), 0);

    /* The right bytes: unpacked, the logs of the receiver its own. */
    assert_int_equal(mkdir(dest, 0700), 0);
    path_of(p, dest, "stderr.log");
    write_bytes(p, "mine\n", 5);
    server_script(1, &good);
    r = ckptxfer_download(c, 18, 12, sha, size, 5, LEASE, tmp, dest, &call, &got, err, sizeof err);
    assert_int_equal(r, XFER_OK);
    assert_int_equal(got, size);
    path_of(p, src, "ckpt-12");
    path_of(q, dest, "ckpt-12");
    assert_true(same_file(p, q));
    path_of(p, src, "sub/notes.txt");
    path_of(q, dest, "sub/notes.txt");
    assert_true(same_file(p, q));
    path_of(q, dest, "stderr.log");
    size_t ln;
    char *log = read_all(q, &ln);
    assert_int_equal(ln, 5);
    assert_memory_equal(log, "mine\n", 5);
    free(log);
    path_of(q, dest, "stdout.log");
    assert_false(exists(q));
    assert_int_equal(count_entries(tmp), 0);

    client_free(c);
    free(bad);
    free(bytes);
}

/* ---- the uploader thread ---- */

static void wait_requests(int n)
{
    int64_t until = rung_mono_ns() + 10000000000LL;
    while (server_requests() < n && rung_mono_ns() < until) {
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    assert_true(server_requests() >= n);
}

static void test_uploader(void **state)
{
    (void)state;
    char work[PATH_MAX], trials[PATH_MAX], dir[PATH_MAX], uploads[PATH_MAX], why[256];
    char tar[PATH_MAX], out[PATH_MAX], p[PATH_MAX], q[PATH_MAX], err[512], hdr[128];
    path_of(work, root, "work");
    path_of(trials, work, "trials");
    path_of(dir, trials, "18");
    path_of(uploads, work, "uploads");
    assert_int_equal(mkdir(work, 0700), 0);
    assert_int_equal(mkdir(trials, 0700), 0);
    make_trial(dir, 123457);

    Answer ok = {200, "application/json", OK_JSON, 0};
    server_script(1, &ok);
    server_hold(true);
    Uploader *u = uploader_new(base_url, "tok", work, 3, NULL, NULL, why, sizeof why);
    assert_non_null(u);
    struct stat st;
    assert_int_equal(stat(uploads, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0700);

    assert_true(uploader_request(u, 18, 12, "ab12cd"));
    wait_requests(1); /* in flight, its answer held */
    assert_false(uploader_request(u, 18, 12, "ab12cd"));
    assert_int_equal(uploader_pending(u), 1);
    assert_true(
        uploader_request(u, 99, 1, "ab12cd")); /* another pair: queued (no folder: skipped) */
    assert_false(uploader_request(u, 99, 1, "ab12cd"));
    assert_int_equal(uploader_pending(u), 2);
    server_hold(false);
    assert_true(uploader_wait_idle(u, NULL, NULL));
    assert_int_equal(server_requests(), 1); /* nothing sent for the missing folder */

    assert_string_equal(srv.method, "PUT");
    assert_string_equal(srv.path,
                        "/api/v1/trials/18/checkpoint?step=12&worker=3&upload_token=ab12cd");
    header_of("Content-Type", hdr, sizeof hdr);
    assert_string_equal(hdr, "application/octet-stream");
    header_of("Authorization", hdr, sizeof hdr);
    assert_string_equal(hdr, "Bearer tok");
    /* The body is the folder's tar, its hash in the header. */
    char sha[65];
    header_of("X-Rung-Sha256", sha, sizeof sha);
    path_of(tar, root, "uploaded.tar");
    write_bytes(tar, srv.body, srv.body_len);
    path_of(out, root, "unpacked");
    assert_int_equal(ckpt_unpack(tar, sha, out, err, sizeof err), 0);
    path_of(p, dir, "ckpt-12");
    path_of(q, out, "ckpt-12");
    assert_true(same_file(p, q));
    path_of(q, out, "stderr.log");
    assert_false(exists(q));
    assert_int_equal(count_entries(uploads), 0); /* the packed file is removed */

    /* Done: the same pair may be asked for again (rungd lost it). */
    server_script(1, &ok);
    assert_true(uploader_request(u, 18, 12, "ab12cd"));
    assert_true(uploader_wait_idle(u, NULL, NULL));
    assert_int_equal(server_requests(), 1);

    /* A pair asked again while it waits takes rungd's newer token (rungd
     * restarted and asks with another). */
    char dir19[PATH_MAX];
    path_of(dir19, trials, "19");
    make_trial(dir19, 4242);
    server_script(1, &ok);
    server_hold(true);
    assert_true(uploader_request(u, 18, 12, "ab12cd"));
    wait_requests(1);
    assert_true(uploader_request(u, 19, 4, "old"));
    assert_false(uploader_request(u, 19, 4, "new"));
    server_hold(false);
    assert_true(uploader_wait_idle(u, NULL, NULL));
    assert_int_equal(server_requests(), 2);
    assert_string_equal(srv.path, "/api/v1/trials/19/checkpoint?step=4&worker=3&upload_token=new");

    /* A 5xx: retried CKPTXFER_RETRIES times, then given up. */
    Answer down = {503, "application/json", "{}", 0};
    server_script(1, &down);
    assert_true(uploader_request(u, 18, 12, "ab12cd"));
    assert_true(uploader_wait_idle(u, NULL, NULL));
    assert_int_equal(server_requests(), 1 + CKPTXFER_RETRIES);
    assert_int_equal(count_entries(uploads), 0);

    /* Freed while a request hangs: canceled, promptly. */
    server_script(1, &ok);
    server_hold(true);
    assert_true(uploader_request(u, 18, 12, "ab12cd"));
    wait_requests(1);
    int64_t t0 = rung_mono_ns();
    uploader_free(u);
    assert_true(rung_mono_ns() - t0 < 3000000000LL);
    server_hold(false);
    assert_int_equal(count_entries(uploads), 0);
}

/* ---- the lease reply's checkpoint_from ---- */

static void test_checkpoint_from(void **state)
{
    (void)state;
    static TrialHooks hooks; /* nothing is called back: no trial starts */
    char why[256];
    const char *hex = "ABCDEF0123456789abcdef0123456789ABCDEF0123456789abcdef0123456789";
    json_t *o = json_pack("{s:i, s:s, s:i, s:{s:i, s:i, s:s, s:i}}", "id", 20, "lease_token", "t",
                          "resume_step", 12, "checkpoint_from", "trial", 18, "step", 12, "sha256",
                          hex, "size", 4096);
    WTrial *t = wtrial_new(&hooks, o, why, sizeof why);
    assert_non_null(t);
    assert_int_equal(t->from_trial, 18);
    assert_int_equal(t->from_step, 12);
    assert_true(t->from_rungd);
    assert_string_equal(t->from_sha256,
                        "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789");
    assert_int_equal(t->from_size, 4096);
    wtrial_free(t);
    json_decref(o);

    /* A local copy: no hash. */
    o = json_pack("{s:i, s:s, s:i, s:{s:i}}", "id", 20, "lease_token", "t", "resume_step", 8,
                  "checkpoint_from", "trial", 18);
    t = wtrial_new(&hooks, o, why, sizeof why);
    assert_int_equal(t->from_trial, 18);
    assert_int_equal(t->from_step, 8);
    assert_false(t->from_rungd);
    wtrial_free(t);
    json_decref(o);

    /* A malformed hash and size: from rungd, but nothing to check against. */
    o = json_pack("{s:i, s:s, s:{s:i, s:i, s:s, s:s}}", "id", 20, "lease_token", "t",
                  "checkpoint_from", "trial", 18, "step", 4, "sha256", "nope", "size", "big");
    t = wtrial_new(&hooks, o, why, sizeof why);
    assert_true(t->from_rungd);
    assert_string_equal(t->from_sha256, "");
    assert_int_equal(t->from_size, -1);
    wtrial_free(t);
    json_decref(o);
}

/* ---- the cache of working directories (blobcache.h) ---- */

/* A blob is downloaded once, its hash checked; a second get is served
 * from the cache without a request; a body that hashes to another value
 * is refused and nothing kept; rungd's 404 is quoted; the least recently
 * used blob goes first when the cache is over its bound, never a held
 * one. */
static void test_blobcache(void **state)
{
    (void)state;
    char dir[PATH_MAX], tar[PATH_MAX], why[1024];
    path_of(dir, root, "cache");
    BlobCache bc;
    assert_int_equal(blobcache_open(&bc, dir, 150 * 1024, why, sizeof why), 0);
    assert_false(exists(dir)); /* made at the first use */
    int64_t free_bytes;
    bool full;
    blobcache_space(&bc, &free_bytes, &full);
    assert_true(free_bytes > 0);

    size_t n = 100 * 1024;
    char *a = pattern(n, 11), *b = pattern(n, 12);
    char sha_a[65], sha_b[65], p[PATH_MAX];
    path_of(p, root, "a.bin");
    write_bytes(p, a, n);
    assert_int_equal(ckpt_sha256_file(p, sha_a, NULL), 0);
    write_bytes(p, b, n);
    assert_int_equal(ckpt_sha256_file(p, sha_b, NULL), 0);
    unlink(p);

    Client *c = client_new(base_url, NULL);
    ClientCall call = {.retry = true, .max_retries = 1};
    Answer ans_a = {200, "application/x-tar", a, n};
    server_script(1, &ans_a);
    int hold = -1;
    bool downloaded = false;
    assert_int_equal(blobcache_get(&bc, c, sha_a, &call, tar, &hold, &downloaded, why, sizeof why),
                     0);
    assert_true(downloaded);
    assert_int_equal(server_requests(), 1);
    char want[PATH_MAX];
    snprintf(want, sizeof want, "/api/v1/blobs/%s", sha_a);
    assert_string_equal(srv.path, want);
    size_t got_n;
    char *got = read_all(tar, &got_n);
    assert_int_equal(got_n, n);
    assert_memory_equal(got, a, n);
    free(got);
    close(hold);
    /* Again: from the cache. */
    server_script(1, &ans_a);
    assert_int_equal(blobcache_get(&bc, c, sha_a, &call, tar, &hold, &downloaded, why, sizeof why),
                     0);
    assert_false(downloaded);
    assert_int_equal(server_requests(), 0);
    close(hold);

    /* b's name, a's bytes: refused, nothing kept. */
    server_script(1, &ans_a);
    assert_int_equal(blobcache_get(&bc, c, sha_b, &call, tar, &hold, &downloaded, why, sizeof why),
                     -1);
    assert_non_null(strstr(why, sha_b));
    assert_non_null(strstr(why, sha_a));
    assert_int_equal(count_entries(bc.blobs), 3); /* a.tar, a.lock, b.lock */

    Answer absent = {404, "application/json",
                     "{\"error\": {\"code\": \"not_found\", \"message\": \"no such blob\"}}", 0};
    server_script(1, &absent);
    assert_int_equal(blobcache_get(&bc, c, sha_b, &call, tar, &hold, &downloaded, why, sizeof why),
                     -1);
    assert_non_null(strstr(why, "does not hold"));
    assert_non_null(strstr(why, "no such blob"));

    /* b fits only if a goes (150 KiB): a, not held, is removed. */
    Answer ans_b = {200, "application/x-tar", b, n};
    server_script(1, &ans_b);
    char path_a[PATH_MAX + 80];
    snprintf(path_a, sizeof path_a, "%s/%s.tar", bc.blobs, sha_a);
    struct timespec old[2] = {{.tv_sec = 1000}, {.tv_sec = 1000}};
    assert_int_equal(utimensat(AT_FDCWD, path_a, old, 0), 0);
    assert_int_equal(blobcache_get(&bc, c, sha_b, &call, tar, &hold, &downloaded, why, sizeof why),
                     0);
    assert_false(exists(path_a));
    assert_true(exists(tar));
    /* b held: a downloaded again cannot push it out; a stays too (just
     * used), over the bound until b is let go. */
    server_script(1, &ans_a);
    int hold_a;
    char tar_a[PATH_MAX];
    assert_int_equal(blobcache_get(&bc, c, sha_a, &call, tar_a, &hold_a, &downloaded, why,
                                   sizeof why),
                     0);
    assert_true(exists(tar));
    close(hold);
    close(hold_a);
    blobcache_evict(&bc);
    assert_true(exists(tar) != exists(tar_a)); /* one of them went */
    client_free(c);
    free(a);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_file_sends_the_bytes),
        cmocka_unit_test(test_put_file_retries),
        cmocka_unit_test(test_get_file),
        cmocka_unit_test(test_download_checks_the_hash),
        cmocka_unit_test(test_uploader),
        cmocka_unit_test(test_checkpoint_from),
        cmocka_unit_test(test_blobcache),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
