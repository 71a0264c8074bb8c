/* Who a request is and whether its route lets them in (docs/api.md,
 * "Users, roles and tokens"): the front (http.c) calls these two on the
 * engine thread before a request's body is read. The facts come from the
 * core (in memory) or the store; the decision is auth.c's. */
#include "api_internal.h"

#include <string.h>

#include "gang_members.h"
#include "store.h"

int api_access_lookup(Engine *e, const char *token, Principal *who, RungError *err)
{
    char hash[65];
    auth_token_hash(token, hash);
    return store_token_lookup(engine_store(e), hash, engine_now(e), who, NULL, err);
}

/* The owner of experiment id: from memory, else its row. */
static int owner_of(Engine *e, int64_t id, int64_t *owner, RungError *err)
{
    Experiment *x = core_experiment(engine_core(e), id);
    if (x != NULL) {
        *owner = x->owner_id;
        return 0;
    }
    return store_experiment_owner(engine_store(e), id, owner, err);
}

/* Whether worker_id was registered by user_id; a worker rungd does not
 * know lets the request through to its handler (which answers 404). */
static bool worker_mine(Engine *e, int64_t worker_id, int64_t user_id)
{
    Worker *w = core_worker(engine_core(e), worker_id);
    RungError err;
    if (w == NULL && store_reload_worker(engine_store(e), engine_core(e), worker_id, &err) == 0)
        w = core_worker(engine_core(e), worker_id);
    return w == NULL || w->owner_id == user_id;
}

/* Whether no worker of another token holds trial_id: a trial that is not
 * held (or not in memory) goes on to its handler, which answers with the
 * lease's own error, as it does for the worker that lost it. */
static bool trial_mine(Engine *e, int64_t trial_id, int64_t user_id)
{
    Trial *t = core_trial(engine_core(e), trial_id);
    if (t == NULL || t->state != TRIAL_RUNNING)
        return true;
    if (t->gang != NULL) {
        for (int64_t i = 0; i < t->gang->nnodes; i++)
            if (t->gang->members[i].worker_id > 0 &&
                worker_mine(e, t->gang->members[i].worker_id, user_id))
                return true;
        return false;
    }
    return t->worker_id <= 0 || worker_mine(e, t->worker_id, user_id);
}

int api_access_check(Engine *e, Access a, const int64_t ids[2], const Principal *who,
                     RungError *err)
{
    AccessFacts f = {.owner_id = -1, .holds = false};
    if (who->role == ROLE_MEMBER && access_needs_owner(a)) {
        int64_t exp = ids[0];
        if (a == ACCESS_STEER_TRIAL) {
            Trial *t = core_trial(engine_core(e), ids[0]);
            if (t != NULL)
                exp = t->exp->id;
            else if (store_trial_experiment(engine_store(e), ids[0], &exp, err))
                return err->code;
        }
        if (owner_of(e, exp, &f.owner_id, err))
            return err->code;
    }
    if (who->role == ROLE_WORKER && access_needs_holder(a))
        f.holds = a == ACCESS_WORKER_ID ? worker_mine(e, ids[0], who->user_id)
                                        : trial_mine(e, ids[0], who->user_id);
    return auth_decide(who, a, &f, err);
}
