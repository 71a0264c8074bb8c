/* The replies the front writes itself; see http_internal.h. */
#include "http_internal.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "errjson.h"

enum MHD_Result http_send_buffer(struct MHD_Connection *c, int status, char *data, size_t len,
                                 const char *type)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, data,
                                                             data ? MHD_RESPMEM_MUST_FREE
                                                                  : MHD_RESPMEM_PERSISTENT);
    if (r == NULL)
        return MHD_NO;
    if (type)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    /* The dashboard and the API are dynamic: no cache may keep them. */
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    enum MHD_Result rc = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return rc;
}

enum MHD_Result http_send_json(struct MHD_Connection *c, int status, json_t *body)
{
    if (body == NULL)
        return http_send_buffer(c, status, NULL, 0, NULL);
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (text == NULL)
        return MHD_NO;
    return http_send_buffer(c, status, text, strlen(text), "application/json; charset=utf-8");
}

/* Every error reply of the front, as the handlers' and the engine's:
 * docs/api.md's shape, built by errjson.h alone. */
enum MHD_Result http_send_error(struct MHD_Connection *c, int code, const char *field,
                                const char *message)
{
    return http_send_json(c, rung_error_status(code), rung_error_json(code, field, message));
}

/* body (stolen) as a JSON reply with one more header, name: value. */
static enum MHD_Result send_json_with(struct MHD_Connection *c, int status, json_t *body,
                                      const char *name, const char *value)
{
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (text == NULL)
        return MHD_NO;
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), text,
                                                             MHD_RESPMEM_MUST_FREE);
    if (r == NULL) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json; charset=utf-8");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header(r, name, value);
    enum MHD_Result rc = MHD_queue_response(c, (unsigned)status, r);
    MHD_destroy_response(r);
    return rc;
}

enum MHD_Result http_send_json_cookie(struct MHD_Connection *c, int status, json_t *body,
                                      const char *cookie)
{
    return send_json_with(c, status, body, MHD_HTTP_HEADER_SET_COOKIE, cookie);
}

enum MHD_Result http_send_error_retry(struct MHD_Connection *c, int code, const char *field,
                                      const char *message, int64_t retry_s)
{
    if (retry_s <= 0)
        return http_send_error(c, code, field, message);
    char seconds[24];
    snprintf(seconds, sizeof seconds, "%lld", (long long)retry_s);
    return send_json_with(c, rung_error_status(code), rung_error_json(code, field, message),
                          MHD_HTTP_HEADER_RETRY_AFTER, seconds);
}

/* A file the handler opened (job->reply_fd, job->reply_size bytes): MHD
 * sends it from the descriptor and closes it. */
enum MHD_Result http_send_file(struct MHD_Connection *c, Job *job)
{
    struct MHD_Response *r = MHD_create_response_from_fd((uint64_t)job->reply_size, job->reply_fd);
    job->reply_fd = 0;
    if (r == NULL)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, job->content_type);
    enum MHD_Result rc = MHD_queue_response(c, (unsigned)job->status, r);
    MHD_destroy_response(r);
    return rc;
}

/* Writes a whole JSON error reply on a socket that MHD is not using: the
 * refusals made before and between the requests MHD reads. It is small
 * and the socket's buffer empty, so one non-blocking send takes it. */
void http_write_error(int fd, int status, int code, const char *message)
{
    json_t *doc = rung_error_json(code, NULL, message);
    char *body = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    if (body == NULL)
        return;
    char head[256];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\nContent-Type: application/json; charset=utf-8\r\n"
                     "Content-Length: %zu\r\nCache-Control: no-store\r\nConnection: close\r\n"
                     "%s\r\n",
                     status, MHD_get_reason_phrase_for((unsigned)status), strlen(body),
                     status == 503 ? "Retry-After: 1\r\n" : "");
    struct iovec iov[2] = {{head, (size_t)n}, {body, strlen(body)}};
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2};
    if (sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
        /* The client is gone or not reading: the connection ends anyway. */
    }
    free(body);
}
