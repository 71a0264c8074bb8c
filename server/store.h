/* The SQLite store: schema migrations, prepared statements, transactions.
 *
 * One connection, owned by the engine thread. Writes of a batch of requests
 * go in one transaction (group commit) and every reply waits for its commit:
 * WAL with synchronous=NORMAL survives kill -9 of the process, and
 * `durable_full` adds an fsync per commit for power loss. */
#ifndef RUNG_SERVER_STORE_H
#define RUNG_SERVER_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "core.h"
#include "error.h"

typedef struct Store Store;

/* Opens (creating when absent) the database at path and applies the
 * migrations it lacks. *out is new (free with store_close). */
int store_open(const char *path, bool durable_full, Store **out, RungError *err);
void store_close(Store *store);

int store_begin(Store *store, RungError *err);
int store_commit(Store *store, RungError *err);
void store_rollback(Store *store);

/* Writes every queued change of the core (inserts and updates) and marks
 * the objects stored. Call inside a transaction. */
int store_write_changes(Store *store, const CoreChanges *changes, RungError *err);

/* Rebuilds core from the tables. */
int store_load(Store *store, Core *core, int64_t now, RungError *err);

/* Reports of a trial's attempt with step > after_step, ascending, at most
 * limit: *items is a new array of {"step","time","metrics"}. */
int store_reports(Store *store, int64_t trial_id, int64_t attempt, int64_t after_step,
                  int64_t limit, json_t **items, RungError *err);

#endif
