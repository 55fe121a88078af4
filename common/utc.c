/* utc.c: instants as UTC ISO-8601 (see utc.h). */
#include "utc.h"

#include <stdio.h>
#include <time.h>

void nsc_utc_iso(int64_t utc_ns, char *buf, size_t cap)
{
    /* seconds rounded down, so the fraction is never negative */
    int64_t sec = utc_ns >= 0 ? utc_ns / 1000000000 : -((-utc_ns + 999999999) / 1000000000);
    time_t t = (time_t)sec;
    struct tm tm;
    char day[32];
    if (!gmtime_r(&t, &tm) || !strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm)) {
        snprintf(buf, cap, "?");
        return;
    }
    snprintf(buf, cap, "%s.%06lldZ", day, (long long)((utc_ns - sec * 1000000000) / 1000));
}
