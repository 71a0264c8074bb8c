/* The engine's inbox (engine_internal.h): how other threads (the
 * proposer's answers) hand the loop an internal job and wake it. */
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#include "engine_internal.h"

void engine_wake(Engine *e)
{
    uint64_t one = 1;
    if (write(e->wake_fd, &one, sizeof one) < 0) {
        /* The counter is saturated: the engine is awake anyway. */
    }
}

void engine_inbox_push(Engine *e, Job *job)
{
    pthread_mutex_lock(&e->mu);
    job->next = e->inbox;
    e->inbox = job;
    pthread_mutex_unlock(&e->mu);
    engine_wake(e);
}
