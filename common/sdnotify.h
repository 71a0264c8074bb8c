/* systemd's readiness protocol without libsystemd: a unit of Type=notify
 * starts its dependents once the service says READY=1 on the datagram
 * socket named by $NOTIFY_SOCKET (sd_notify(3) describes the protocol;
 * packaging/systemd/rungd.service uses it). Outside systemd the variable is
 * unset and nothing is sent. */
#ifndef RUNG_COMMON_SDNOTIFY_H
#define RUNG_COMMON_SDNOTIFY_H

/* Sends `state` ("READY=1\nSTATUS=...", "STOPPING=1") to $NOTIFY_SOCKET.
 * Returns 1 when sent, 0 when there is no socket to send to, -1 on an
 * error (a bad address, a failed send), which the caller may log. */
int sdnotify_send(const char *state);

#endif
