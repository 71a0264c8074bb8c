/* sd_notify's protocol; see sdnotify.h. */
#include "sdnotify.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int sdnotify_send(const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    if (path == NULL || path[0] == '\0')
        return 0;
    struct sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    size_t len = strlen(path);
    /* A path, or '@' for a name in the abstract namespace (a leading NUL). */
    if ((path[0] != '/' && path[0] != '@') || len >= sizeof addr.sun_path)
        return -1;
    memcpy(addr.sun_path, path, len);
    if (path[0] == '@')
        addr.sun_path[0] = '\0';
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
    ssize_t sent = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&addr, alen);
    close(fd);
    return sent == (ssize_t)strlen(state) ? 1 : -1;
}
