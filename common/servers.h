/* Several addresses of rungd, as clients are given them (`--server a,b`,
 * RUNG_SERVER=a,b): a leader and its standbys on one PostgreSQL store
 * (docs/operations.md, "A standby rungd"). A client talks to one at a time
 * and moves to another when the one it talks to cannot be reached or
 * answers as a standby (docs/api.md, "Several servers"). */
#ifndef RUNG_COMMON_SERVERS_H
#define RUNG_COMMON_SERVERS_H

#include <stddef.h>

#define RUNG_SERVERS_MAX 8
#define RUNG_SERVER_URL_MAX 512

typedef struct RungServers {
    int n;
    char url[RUNG_SERVERS_MAX][RUNG_SERVER_URL_MAX]; /* no trailing '/' */
} RungServers;

/* Parses a comma-separated list of URLs; "HOST:PORT" gets "http://", and
 * spaces around the commas are dropped. 0, or -1 with why (naming the
 * address at fault: empty, too long, too many, or not http(s)://). */
int rung_servers_parse(const char *list, RungServers *out, char *why, size_t why_n);
/* The index of url (a trailing '/' ignored) in s, or -1. */
int rung_servers_find(const RungServers *s, const char *url);

#endif
