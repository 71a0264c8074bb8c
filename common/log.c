/* Leveled logging; see log.h. One fprintf per line keeps lines whole when
 * several threads log. */
#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clock.h"

static int level = RUNG_LOG_INFO;
static bool to_journal; /* stderr is systemd's journal */
static pthread_once_t level_once = PTHREAD_ONCE_INIT;

/* systemd sets JOURNAL_STREAM to "DEV:INODE" of the stream it connects to a
 * service's stderr; when that is still our stderr, lines are read by
 * journald, which stamps them itself and takes a "<N>" prefix as the
 * line's syslog priority (sd-daemon(3)), so `journalctl -p warning` finds
 * rungd's warnings. */
static bool stderr_is_journal(void)
{
    const char *env = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    struct stat st;
    char end;
    return env != NULL && sscanf(env, "%llu:%llu%c", &dev, &ino, &end) == 2 && fstat(2, &st) == 0 &&
           (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

static void read_level(void)
{
    to_journal = stderr_is_journal();
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
    static const int priorities[] = {7, 6, 4, 3}; /* syslog's debug, info, warning, err */
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (to_journal) {
        fprintf(stderr, "<%d>%s\n", priorities[level], msg);
        return;
    }
    char when[RUNG_TIME_LEN];
    rung_time_format(rung_now_ms(), when, sizeof when);
    fprintf(stderr, "%s %-5s %s\n", when, names[level], msg);
}
