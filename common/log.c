/* Leveled logging; see log.h. One fprintf per line keeps lines whole when
 * several threads log. */
#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"

static int level = RUNG_LOG_INFO;
static pthread_once_t level_once = PTHREAD_ONCE_INIT;

static void read_level(void)
{
    const char *env = getenv("RUNG_LOG");
    if (env && strcmp(env, "debug") == 0)
        level = RUNG_LOG_DEBUG;
    else if (env && strcmp(env, "warn") == 0)
        level = RUNG_LOG_WARN;
    else if (env && strcmp(env, "error") == 0)
        level = RUNG_LOG_ERROR;
}

/* Read once, whichever thread logs first. */
static int threshold(void)
{
    pthread_once(&level_once, read_level);
    return level;
}

void rung_log(RungLogLevel level, const char *fmt, ...)
{
    if ((int)level < threshold())
        return;
    static const char *names[] = {"debug", "info", "warn", "error"};
    char when[RUNG_TIME_LEN];
    rung_time_format(rung_now_ms(), when, sizeof when);
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s %-5s %s\n", when, names[level], msg);
}
