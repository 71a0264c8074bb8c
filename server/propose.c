/* The proposer thread; see propose.h. */
#include "propose.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "auto.h"
#include "cmaes.h"
#include "log.h"
#include "tpe.h"

typedef struct Request {
    int64_t exp_id, first, count;
    json_t *space;
    SearcherSpec searcher;
    json_t *points;          /* points_to_evaluate, or NULL */
    Warm *warm;              /* warm_start's trials, or NULL */
    ProposeHistory *history; /* bayes only */
    PbtExplore *explore;     /* a pb2 explore instead of configs, or NULL */
    struct Request *next;
} Request;

/* cmaes: a memo of its replay per experiment (cmaes_propose_cached), for
 * the PROPOSE_CMAES_MEMOS experiments that asked last; only the proposer
 * thread touches them. A memo gives what a full replay gives, so losing
 * one (evicted, or rungd restarted) costs time, never a different config. */
#define PROPOSE_CMAES_MEMOS 8

typedef struct CmaesMemo {
    int64_t exp_id;
    CmaesCache *cache; /* NULL: a free slot */
    uint64_t used;     /* the proposer's tick when it last served */
} CmaesMemo;

struct Proposer {
    CmaesMemo memos[PROPOSE_CMAES_MEMOS];
    uint64_t tick;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    Request *head, *tail;
    bool stopping;
    ProposeDone done;
    ExploreDone explored;
    void *ctx;
};

void propose_history_free(ProposeHistory *h)
{
    if (h == NULL)
        return;
    for (int64_t i = 0; i < h->n_obs; i++)
        json_decref((json_t *)h->obs[i].config);
    for (int64_t i = 0; i < h->n_pending; i++)
        json_decref(h->pending[i]);
    for (int64_t i = 0; i < h->n_rungs; i++)
        json_decref((json_t *)h->rungs[i].config);
    free(h->obs);
    free(h->pending);
    free(h->rungs);
    free(h);
}

static void request_free(Request *r)
{
    json_decref(r->space);
    json_decref(r->points);
    warm_free(r->warm);
    propose_history_free(r->history);
    pbt_explore_free(r->explore);
    free(r);
}

void proposals_free(Proposals *p)
{
    if (p == NULL)
        return;
    for (int64_t i = 0; i < p->count; i++)
        json_decref(p->configs[i]);
    free(p->configs);
    free(p);
}

/* The memo of experiment exp_id: its own, else a free slot's, else the
 * least recently used one's, emptied. NULL when out of memory (a full
 * replay then). */
static CmaesCache *memo_of(Proposer *p, int64_t exp_id)
{
    CmaesMemo *pick = NULL;
    for (int i = 0; i < PROPOSE_CMAES_MEMOS; i++) {
        CmaesMemo *m = &p->memos[i];
        if (m->cache != NULL && m->exp_id == exp_id) {
            pick = m;
            break;
        }
        if (pick == NULL || (pick->cache != NULL && (m->cache == NULL || m->used < pick->used)))
            pick = m;
    }
    if (pick->cache == NULL || pick->exp_id != exp_id) {
        cmaes_cache_free(pick->cache);
        pick->cache = cmaes_cache_new();
        pick->exp_id = exp_id;
    }
    pick->used = ++p->tick;
    return pick->cache;
}

static Proposals *compute(Proposer *proposer, const Request *r)
{
    Proposals *p = calloc(1, sizeof *p);
    json_t **configs = calloc((size_t)r->count, sizeof *configs);
    if (p == NULL || configs == NULL)
        abort();
    p->exp_id = r->exp_id;
    p->first = r->first;
    p->count = r->count;
    p->configs = configs;
    Space *space = NULL;
    RungError err;
    if (space_parse(r->space, &space, &err) != 0)
        return p; /* cannot happen for a spec that was validated; entries stay NULL */
    /* auto: the searcher its rule picks for this many results (auto.h). */
    SearcherSpec searcher = r->searcher;
    if (searcher.type == SEARCHER_AUTO) {
        const ProposeHistory *ph = r->history;
        searcher = auto_spec(&r->searcher,
                             auto_pick(space, &r->searcher, ph ? ph->n_obs : 0,
                                       ph ? ph->n_objectives : 0, ph ? ph->n_constraints : 0));
    }
    if (searcher.type == SEARCHER_BAYES || searcher.type == SEARCHER_TPE) {
        BayesHistory h = {0};
        if (r->history) {
            h.obs = r->history->obs;
            h.n_obs = r->history->n_obs;
            h.pending = (const json_t *const *)r->history->pending;
            h.n_pending = r->history->n_pending;
            h.n_objectives = r->history->n_objectives;
            h.n_constraints = r->history->n_constraints;
            h.rungs = r->history->rungs;
            h.n_rungs = r->history->n_rungs;
        }
        if (searcher.type == SEARCHER_TPE) {
            /* multi_fidelity: ranked by the rung each trial reached (tpe.h). */
            if ((searcher.multi_fidelity == 1
                     ? tpe_mf_propose(space, &searcher, r->first, r->count, &h, configs, &err)
                     : tpe_propose(space, &searcher, r->first, r->count, &h, configs, &err)) != 0)
                LOG_ERROR("tpe proposal for experiment %lld failed: %s", (long long)r->exp_id,
                          err.message);
            else /* what it learned from: after a restart, the stored results too */
                LOG_INFO("experiment %lld: tpe proposed trial %lld from %lld results, %lld rung "
                         "records and %lld pending",
                         (long long)r->exp_id, (long long)(r->first + r->count - 1),
                         (long long)h.n_obs,
                         (long long)(searcher.multi_fidelity == 1 ? h.n_rungs : 0),
                         (long long)h.n_pending);
        } else if (searcher.multi_fidelity == 1) {
            double *levels = calloc((size_t)r->count, sizeof *levels);
            if (levels == NULL)
                abort();
            if (bayes_mf_propose(space, &searcher, r->first, r->count, &h, configs, levels, &err) !=
                0) {
                LOG_ERROR("bayes proposal for experiment %lld failed: %s", (long long)r->exp_id,
                          err.message);
            } else if (r->first + r->count > searcher.n_initial) {
                /* Which rung level the model learned from (docs/searchers.md,
                 * "Multi-fidelity"); 0: final results, too few rung records. */
                double level = levels[r->count - 1];
                int64_t at = 0;
                for (int64_t i = 0; i < h.n_rungs; i++)
                    at += h.rungs[i].level == level;
                LOG_INFO("experiment %lld: bayes proposed trial %lld from rung level %g (%lld "
                         "records there, %lld in all)",
                         (long long)r->exp_id, (long long)(r->first + r->count - 1), level,
                         (long long)at, (long long)h.n_rungs);
            }
            free(levels);
        } else if (bayes_propose(space, &searcher, r->first, r->count, &h, configs, &err) != 0) {
            /* Entries stay NULL: the engine asks again later. */
            LOG_ERROR("bayes proposal for experiment %lld failed: %s", (long long)r->exp_id,
                      err.message);
        }
    } else if (searcher.type == SEARCHER_CMAES) {
        BayesHistory h = {0};
        if (r->history) {
            h.obs = r->history->obs;
            h.n_obs = r->history->n_obs;
        }
        if (cmaes_propose_cached(memo_of(proposer, r->exp_id), space, &searcher, r->first, r->count,
                                 &h, configs, &err) != 0)
            LOG_ERROR("cmaes proposal for experiment %lld failed: %s", (long long)r->exp_id,
                      err.message); /* entries stay NULL: the engine asks again later */
    } else {
        for (int64_t i = 0; i < r->count; i++)
            configs[i] = warm_config(r->warm, space, &searcher, r->first + i);
    }
    /* points_to_evaluate: the first trials, in order. */
    int64_t n_points = (int64_t)json_array_size(r->points);
    for (int64_t i = 0; i < r->count && r->first + i < n_points; i++)
        configs[i] = propose_lay_over(space, configs[i],
                                      json_array_get(r->points, (size_t)(r->first + i)));
    space_free(space);
    return p;
}

json_t *propose_lay_over(const Space *space, json_t *config, const json_t *point)
{
    if (config == NULL || json_object_size(point) == 0)
        return config;
    /* A new object: the keys stay in the space's order whatever order the
     * point gives them in, and a point that names another branch brings
     * that branch's parameters (space_lay_over). */
    json_t *out = space_lay_over(space, config, point);
    json_decref(config);
    return out;
}

static void *run(void *arg)
{
    Proposer *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->head == NULL && !p->stopping)
            pthread_cond_wait(&p->cond, &p->mu);
        if (p->stopping)
            break;
        Request *r = p->head;
        p->head = r->next;
        if (p->head == NULL)
            p->tail = NULL;
        pthread_mutex_unlock(&p->mu);
        if (r->explore != NULL) {
            PbtExplore *x = r->explore;
            r->explore = NULL;
            x->result = pbt_explore_compute(x);
            request_free(r);
            p->explored(p->ctx, x);
        } else {
            Proposals *out = compute(p, r);
            request_free(r);
            p->done(p->ctx, out);
        }
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

Proposer *proposer_start(ProposeDone done, ExploreDone explored, void *ctx)
{
    Proposer *p = calloc(1, sizeof *p);
    if (p == NULL)
        return NULL;
    p->done = done;
    p->explored = explored;
    p->ctx = ctx;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cond, NULL);
    if (pthread_create(&p->thread, NULL, run, p) != 0) {
        free(p);
        return NULL;
    }
    return p;
}

static void enqueue(Proposer *p, Request *r)
{
    pthread_mutex_lock(&p->mu);
    if (p->tail)
        p->tail->next = r;
    else
        p->head = r;
    p->tail = r;
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->mu);
}

void proposer_explore(Proposer *p, PbtExplore *x)
{
    Request *r = calloc(1, sizeof *r);
    if (r == NULL)
        abort();
    r->exp_id = x->exp_id;
    r->explore = x;
    x->next = NULL;
    enqueue(p, r);
}

void proposer_request(Proposer *p, int64_t exp_id, json_t *search_space,
                      const SearcherSpec *searcher, json_t *points, Warm *warm, int64_t first,
                      int64_t count, ProposeHistory *history)
{
    Request *r = calloc(1, sizeof *r);
    if (r == NULL)
        abort();
    r->exp_id = exp_id;
    r->first = first;
    r->count = count;
    r->space = json_incref(search_space);
    r->searcher = *searcher;
    r->points = json_incref(points);
    r->warm = warm_ref(warm);
    r->history = history;
    enqueue(p, r);
}

void proposer_stop(Proposer *p)
{
    if (p == NULL)
        return;
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    while (p->head) {
        Request *r = p->head;
        p->head = r->next;
        request_free(r);
    }
    for (int i = 0; i < PROPOSE_CMAES_MEMOS; i++)
        cmaes_cache_free(p->memos[i].cache);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cond);
    free(p);
}
