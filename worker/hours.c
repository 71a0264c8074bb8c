/* --hours; see hours.h. */
#include "hours.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define DAY_MINUTES (24 * 60)

static const char *const day_names[7] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};

static void set_minute(Hours *h, int m)
{
    h->bits[m / 8] |= (uint8_t)(1u << (m % 8));
}

bool hours_allowed(const Hours *h, int m)
{
    if (m < 0 || m >= HOURS_WEEK_MINUTES)
        return false;
    return (h->bits[m / 8] >> (m % 8)) & 1u;
}

int hours_week_minute(const struct tm *tm)
{
    int day = (tm->tm_wday + 6) % 7; /* Monday first */
    return day * DAY_MINUTES + tm->tm_hour * 60 + tm->tm_min;
}

int hours_wait(const Hours *h, int m)
{
    for (int k = 0; k < HOURS_WEEK_MINUTES; k++)
        if (hours_allowed(h, (m + k) % HOURS_WEEK_MINUTES))
            return k;
    return HOURS_WEEK_MINUTES; /* none allowed: a parsed Hours never */
}

int hours_left(const Hours *h, int m)
{
    int k = 0;
    while (k < HOURS_WEEK_MINUTES && hours_allowed(h, (m + k) % HOURS_WEEK_MINUTES))
        k++;
    return k;
}

/* ---- parsing ---- */

/* One day name of exactly len bytes: its index (0 = Monday), or -1. */
static int day_index(const char *s, size_t len)
{
    if (len != 3)
        return -1;
    for (int d = 0; d < 7; d++)
        if (strncasecmp(s, day_names[d], 3) == 0)
            return d;
    return -1;
}

/* "HH:MM" of exactly len bytes into minutes of the day (24:00 allowed as
 * 1440 when end is true). 0, or -1 with why. */
static int parse_clock(const char *s, size_t len, bool end, int *out, char *why, size_t why_size)
{
    if (len != 5 || !isdigit((unsigned char)s[0]) || !isdigit((unsigned char)s[1]) || s[2] != ':' ||
        !isdigit((unsigned char)s[3]) || !isdigit((unsigned char)s[4])) {
        snprintf(why, why_size, "'%.*s' is not a time HH:MM", (int)len, s);
        return -1;
    }
    int hh = (s[0] - '0') * 10 + (s[1] - '0');
    int mm = (s[3] - '0') * 10 + (s[4] - '0');
    if (mm > 59 || hh > 24 || (hh == 24 && (mm != 0 || !end))) {
        snprintf(why, why_size, "'%.*s' is not a time of day (00:00 to 23:59%s)", (int)len, s,
                 end ? ", or 24:00" : "");
        return -1;
    }
    *out = hh * 60 + mm;
    return 0;
}

/* Days "Mon" or "Mon-Fri" (wrapping allowed) of len bytes into a mask. */
static int parse_days(const char *s, size_t len, unsigned *mask, char *why, size_t why_size)
{
    const char *dash = memchr(s, '-', len);
    size_t a_len = dash ? (size_t)(dash - s) : len;
    int a = day_index(s, a_len), b = a;
    if (a < 0) {
        snprintf(why, why_size, "no day '%.*s' (Mon Tue Wed Thu Fri Sat Sun)", (int)a_len, s);
        return -1;
    }
    if (dash) {
        size_t b_len = len - a_len - 1;
        b = day_index(dash + 1, b_len);
        if (b < 0) {
            snprintf(why, why_size, "no day '%.*s' (Mon Tue Wed Thu Fri Sat Sun)", (int)b_len,
                     dash + 1);
            return -1;
        }
    }
    *mask = 0;
    for (int d = a;; d = (d + 1) % 7) {
        *mask |= 1u << d;
        if (d == b)
            break;
    }
    return 0;
}

/* "HH:MM-HH:MM" of len bytes. */
static int parse_times(const char *s, size_t len, int *from, int *to, char *why, size_t why_size)
{
    const char *dash = memchr(s, '-', len);
    if (dash == NULL) {
        snprintf(why, why_size, "'%.*s' is not a range of times HH:MM-HH:MM", (int)len, s);
        return -1;
    }
    size_t a_len = (size_t)(dash - s);
    if (parse_clock(s, a_len, false, from, why, why_size) ||
        parse_clock(dash + 1, len - a_len - 1, true, to, why, why_size))
        return -1;
    if (*from == *to) {
        snprintf(why, why_size, "'%.*s' is empty; leave the times out for whole days", (int)len, s);
        return -1;
    }
    return 0;
}

/* Sets the minutes of one item: days (a mask) and times [from, to) on each
 * of them; to < from wraps within the day. */
static void set_item(Hours *h, unsigned days, int from, int to)
{
    for (int d = 0; d < 7; d++) {
        if (!(days & (1u << d)))
            continue;
        for (int m = 0; m < DAY_MINUTES; m++) {
            bool in = from < to ? (m >= from && m < to) : (m >= from || m < to);
            if (in)
                set_minute(h, d * DAY_MINUTES + m);
        }
    }
}

/* One item of len bytes (trimmed): "DAYS", "TIMES" or "DAYS TIMES". */
static int parse_item(Hours *h, const char *s, size_t len, char *why, size_t why_size)
{
    char part[160];
    if (len == 0) {
        snprintf(why, why_size, "an empty item (two commas, or a comma at an end)");
        return -1;
    }
    const char *space = memchr(s, ' ', len);
    const char *days = NULL, *times = NULL;
    size_t days_len = 0, times_len = 0;
    if (space != NULL) {
        days = s;
        days_len = (size_t)(space - s);
        times = space;
        while (times < s + len && *times == ' ')
            times++;
        times_len = len - (size_t)(times - s);
        if (memchr(times, ' ', times_len) != NULL) {
            snprintf(why, why_size, "'%.*s': more than days and one range of times", (int)len, s);
            return -1;
        }
    } else if (memchr(s, ':', len) != NULL) {
        times = s;
        times_len = len;
    } else {
        days = s;
        days_len = len;
    }
    unsigned mask = 0x7f;
    int from = 0, to = DAY_MINUTES;
    if ((days && parse_days(days, days_len, &mask, part, sizeof part)) ||
        (times && parse_times(times, times_len, &from, &to, part, sizeof part))) {
        snprintf(why, why_size, "'%.*s': %s", (int)len, s, part);
        return -1;
    }
    set_item(h, mask, from, to);
    return 0;
}

int hours_parse(const char *text, Hours *out, char *why, size_t why_size)
{
    memset(out, 0, sizeof *out);
    size_t n = strlen(text);
    if (n > HOURS_MAX_TEXT) {
        snprintf(why, why_size, "longer than %d bytes", HOURS_MAX_TEXT);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c < 0x20 || c >= 0x7f) {
            snprintf(why, why_size, "byte %zu is not a printable ASCII character", i + 1);
            return -1;
        }
    }
    const char *p = text;
    for (;;) {
        const char *comma = strchr(p, ',');
        const char *end = comma ? comma : p + strlen(p);
        const char *a = p, *b = end;
        while (a < b && *a == ' ')
            a++;
        while (b > a && b[-1] == ' ')
            b--;
        if (parse_item(out, a, (size_t)(b - a), why, why_size) != 0)
            return -1;
        if (comma == NULL)
            break;
        p = comma + 1;
    }
    return 0;
}

/* ---- local time ---- */

time_t hours_next_allowed(const Hours *h, time_t now)
{
    struct tm tm;
    if (localtime_r(&now, &tm) == NULL)
        return now;
    int wait = hours_wait(h, hours_week_minute(&tm));
    if (wait == 0)
        return now;
    /* Wall-clock arithmetic: mktime normalizes the minutes, and a minute
     * that a DST change skips becomes the one after it. */
    tm.tm_min += wait;
    tm.tm_sec = 0;
    tm.tm_isdst = -1;
    return mktime(&tm);
}

time_t hours_end(const Hours *h, time_t now)
{
    struct tm tm;
    if (localtime_r(&now, &tm) == NULL)
        return 0;
    int left = hours_left(h, hours_week_minute(&tm));
    if (left == 0 || left >= HOURS_WEEK_MINUTES)
        return 0;
    tm.tm_min += left;
    tm.tm_sec = 0;
    tm.tm_isdst = -1;
    return mktime(&tm);
}
