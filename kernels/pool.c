/* The trainer's fork-join pool (pool.h). Helpers wait on a condition
 * variable between jobs: a job comes once or twice per training step, a
 * few milliseconds apart, and a spinning helper would take a core from
 * OpenBLAS's threads during the GEMMs in between. */
#include "pool.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct Helper {
    Pool *pool;
    int part;
} Helper;

struct Pool {
    int n; /* threads, the caller included */
    pthread_t th[POOL_MAX_THREADS];
    Helper helpers[POOL_MAX_THREADS];
    pthread_mutex_t mu;
    pthread_cond_t start, done;
    uint64_t gen; /* bumped by each job */
    int running;  /* helpers not yet done with the job */
    bool quit;
    PoolFn fn;
    void *ctx;
};

static void *helper_main(void *arg)
{
    Helper *h = arg;
    Pool *p = h->pool;
    uint64_t seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->gen == seen && !p->quit)
            pthread_cond_wait(&p->start, &p->mu);
        if (p->quit)
            break;
        seen = p->gen;
        PoolFn fn = p->fn;
        void *ctx = p->ctx;
        pthread_mutex_unlock(&p->mu);
        fn(ctx, h->part, p->n);
        pthread_mutex_lock(&p->mu);
        if (--p->running == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

Pool *pool_new(int threads)
{
    if (threads <= 1)
        return NULL;
    if (threads > POOL_MAX_THREADS)
        threads = POOL_MAX_THREADS;
    Pool *p = calloc(1, sizeof *p);
    if (p == NULL)
        return NULL;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->start, NULL);
    pthread_cond_init(&p->done, NULL);
    p->n = 1;
    for (int i = 1; i < threads; i++) {
        p->helpers[i] = (Helper){.pool = p, .part = i};
        if (pthread_create(&p->th[i], NULL, helper_main, &p->helpers[i]) != 0)
            break;
        p->n++;
    }
    if (p->n == 1) {
        pool_free(p);
        return NULL;
    }
    return p;
}

void pool_run(Pool *p, PoolFn fn, void *ctx)
{
    if (p == NULL) {
        fn(ctx, 0, 1);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->running = p->n - 1;
    p->gen++;
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    fn(ctx, 0, p->n);
    pthread_mutex_lock(&p->mu);
    while (p->running > 0)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

int pool_parts(const Pool *p)
{
    return p == NULL ? 1 : p->n;
}

void pool_range(size_t n, int part, int parts, size_t *lo, size_t *hi)
{
    size_t q = n / (size_t)parts, r = n % (size_t)parts, i = (size_t)part;
    *lo = i * q + (i < r ? i : r);
    *hi = *lo + q + (i < r ? 1 : 0);
}

void pool_free(Pool *p)
{
    if (p == NULL)
        return;
    pthread_mutex_lock(&p->mu);
    p->quit = true;
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    for (int i = 1; i < p->n; i++)
        pthread_join(p->th[i], NULL);
    pthread_cond_destroy(&p->start);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
    free(p);
}
