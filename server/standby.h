/* A standby rungd: while another rungd leads the PostgreSQL store, this one
 * listens on its address and answers every request 503 with Retry-After: 1
 * and the leader's URL (X-Rung-Leader and "leader" in the body), so that
 * clients given several servers go to the leader; every 250 ms it asks
 * whether the leader's lease ended (store_leader_claim), and once it leads
 * it returns, to load the work in flight and serve on the same socket
 * (docs/operations.md, "A standby rungd"). */
#ifndef RUNG_SERVER_STANDBY_H
#define RUNG_SERVER_STANDBY_H

#include "error.h"
#include "store.h"

typedef struct StandbyConfig {
    Store *store;
    int listen_fd;  /* bound and listening (http_listen), non-blocking */
    const char *me; /* the URL clients reach this rungd at */
    int stop_fd;    /* readable: a signal's number (main.c); any but SIGHUP stops */
} StandbyConfig;

/* 1 once this rungd leads, 0 when a signal stopped it, -1 on an error
 * (err). */
int standby_run(const StandbyConfig *cfg, RungError *err);

#endif
