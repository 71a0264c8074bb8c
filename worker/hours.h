/* --hours: the hours of the week in which rung-worker takes trials
 * (docs/workers.md, "Working hours").
 *
 * The text is a comma-separated list of items, each days, times, or both:
 *
 *   Mon-Fri 19:00-07:00,Sat-Sun      weekday nights and the weekend
 *   09:00-17:00                      every day
 *   Fri-Mon                          four whole days (a day range may wrap)
 *
 * Days are Mon Tue Wed Thu Fri Sat Sun (any case), one or a range; times are
 * HH:MM-HH:MM, minutes of local wall-clock time, the start included and the
 * end not (24:00 is the end of the day). Times apply to each listed day: a
 * range that crosses midnight, 19:00-07:00, means on each of those days the
 * minutes from 00:00 to 07:00 and from 19:00 to 24:00. So "Mon-Fri
 * 19:00-07:00,Sat-Sun" leaves out exactly Monday to Friday, 07:00 to 19:00.
 *
 * The parsed set is a bitmap of the 10,080 minutes of a week, so every
 * question is a lookup or a scan of at most one week. Pure, apart from
 * hours_next_allowed and hours_end, which read the local time zone
 * (localtime_r, mktime). */
#ifndef RUNG_WORKER_HOURS_H
#define RUNG_WORKER_HOURS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define HOURS_MAX_TEXT 512               /* bytes of --hours: a week needs far fewer */
#define HOURS_WEEK_MINUTES (7 * 24 * 60) /* minute 0 is Monday 00:00 */

typedef struct Hours {
    uint8_t bits[HOURS_WEEK_MINUTES / 8]; /* bit m set: minute m of the week is allowed */
} Hours;

/* Parses text into out. 0, or -1 with why (why_size bytes) naming the item
 * and the part that is wrong, e.g. "'Mon-Fry 19:00-07:00': no day 'Fry'
 * (Mon Tue Wed Thu Fri Sat Sun)". A parsed Hours allows at least one
 * minute. */
int hours_parse(const char *text, Hours *out, char *why, size_t why_size);

/* The minute of the week of a local broken-down time (tm_wday 0 = Sunday). */
int hours_week_minute(const struct tm *tm);

/* Whether minute m (0 .. HOURS_WEEK_MINUTES - 1) is allowed. */
bool hours_allowed(const Hours *h, int m);
/* Minutes from minute m to the next allowed one: 0 when m is allowed. */
int hours_wait(const Hours *h, int m);
/* Minutes from minute m to the end of the allowed stretch that holds it
 * (wrapping past Sunday into Monday): 0 when m is not allowed,
 * HOURS_WEEK_MINUTES when every minute is. */
int hours_left(const Hours *h, int m);

/* When leasing is next allowed at or after now, in local time: now itself
 * when now is allowed, else the first second of the next allowed minute. */
time_t hours_next_allowed(const Hours *h, time_t now);
/* When the allowed stretch that holds now ends (its first minute not
 * allowed), in local time; 0 when now is not allowed or every minute is. */
time_t hours_end(const Hours *h, time_t now);

#endif
