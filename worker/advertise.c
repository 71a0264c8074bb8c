/* The advertise address and the rendezvous port; see advertise.h. */
#include "advertise.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gang.h"

/* The text of a local address; false for the wildcard (no route chosen). */
static bool address_text(const struct sockaddr_storage *ss, char *addr, size_t size)
{
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
        if (in->sin_addr.s_addr == htonl(INADDR_ANY))
            return false;
        return inet_ntop(AF_INET, &in->sin_addr, addr, (socklen_t)size) != NULL;
    }
    if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
        if (IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr))
            return false;
        if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) /* ::ffff:a.b.c.d: the IPv4 address */
            return inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], addr, (socklen_t)size) != NULL;
        return inet_ntop(AF_INET6, &in6->sin6_addr, addr, (socklen_t)size) != NULL;
    }
    return false;
}

int advertise_route_addr(const char *url, char *addr, size_t size, char *why, size_t why_size)
{
    char host[GANG_ADDR_MAX + 1];
    if (gang_url_host(url, host, sizeof host) != 0) {
        snprintf(why, why_size, "no host in %s", url);
        return -1;
    }
    struct addrinfo hints = {.ai_socktype = SOCK_DGRAM, .ai_family = AF_UNSPEC};
    struct addrinfo *res = NULL;
    /* Any port: a UDP connect only picks the route, it sends nothing. */
    int rc = getaddrinfo(host, "9", &hints, &res);
    if (rc != 0) {
        snprintf(why, why_size, "cannot resolve %s: %s", host, gai_strerror(rc));
        return -1;
    }
    snprintf(why, why_size, "no route to %s", host);
    int out = -1;
    for (struct addrinfo *ai = res; ai != NULL && out != 0; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
            getsockname(fd, (struct sockaddr *)&ss, &len) == 0 && address_text(&ss, addr, size))
            out = 0;
        else
            snprintf(why, why_size, "no route to %s: %s", host, strerror(errno));
        close(fd);
    }
    freeaddrinfo(res);
    return out;
}

/* A socket bound to port (0: the kernel's choice) on every address; -1
 * with errno. */
static int bind_any(int port)
{
    int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0) {
        /* Both families on one socket: the port is then free for each. */
        int off = 0;
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
        struct sockaddr_in6 a = {.sin6_family = AF_INET6,
                                 .sin6_addr = in6addr_any,
                                 .sin6_port = htons((uint16_t)port)};
        if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0)
            return fd;
        int e = errno;
        close(fd);
        if (e != EAFNOSUPPORT && e != EADDRNOTAVAIL) {
            errno = e;
            return -1;
        }
    }
    /* No IPv6 here: the IPv4 wildcard. */
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_ANY),
                            .sin_port = htons((uint16_t)port)};
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0)
        return fd;
    int e = errno;
    close(fd);
    errno = e;
    return -1;
}

/* The port fd is bound to. */
static int bound_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
        return -1;
    if (ss.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

int advertise_port_open(int lo, int hi, uint64_t start, int *port, char *why, size_t why_size)
{
    if (lo == 0) {
        int fd = bind_any(0);
        int p = fd >= 0 ? bound_port(fd) : -1;
        if (p > 0) {
            *port = p;
            return fd;
        }
        snprintf(why, why_size, "cannot bind a free TCP port: %s", strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    for (int i = 0; i <= hi - lo; i++) {
        int p = gang_ports_nth(lo, hi, start, i);
        int fd = bind_any(p);
        if (fd >= 0) {
            *port = p;
            return fd;
        }
    }
    snprintf(why, why_size, "no free TCP port in --gang-ports %d-%d", lo, hi);
    return -1;
}
