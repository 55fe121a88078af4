/* units.c: times, sizes and bandwidths for people (see units.h). */
#include "units.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "utc.h"

static int has(const char *key, size_t len, const char *part)
{
    size_t n = strlen(part);
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(key + i, part, n) == 0)
            return 1;
    return 0;
}

static int ends(const char *key, size_t len, const char *tail)
{
    size_t n = strlen(tail);
    return len >= n && memcmp(key + len - n, tail, n) == 0;
}

nsc_unit nsc_unit_of(const char *key, size_t len)
{
    static const char *const instants[] = {"start_ns", "stop_ns", "end_ns", "complete_ns", "arrival_ns",
                                           "enqueue_ns", "t0_ns", "t1_ns", "api_ns", "launch_ns", "done_ns"};
    if (!key)
        return NSC_UNIT_NONE;
    for (size_t i = 0; i < sizeof instants / sizeof instants[0]; i++)
        if (ends(key, len, instants[i]))
            return NSC_UNIT_INSTANT;
    if (ends(key, len, "_ns") || has(key, len, "_ns_"))
        return NSC_UNIT_NS;
    if (has(key, len, "gbps"))
        return NSC_UNIT_GBPS;
    if ((len >= 5 && memcmp(key, "bytes", 5) == 0) || ends(key, len, "_bytes"))
        return NSC_UNIT_BYTES;
    return NSC_UNIT_NONE;
}

/* v scaled by the largest step it reaches, three significant digits. */
static void scaled(double v, const double *step, const char *const *name, size_t n, char *buf, size_t cap)
{
    size_t i = 0;
    while (i + 1 < n && fabs(v) >= step[i + 1])
        i++;
    double x = v / step[i];
    if (i == 0 && x == floor(x))
        snprintf(buf, cap, "%.0f %s", x, name[i]);
    else
        snprintf(buf, cap, fabs(x) < 10 ? "%.2f %s" : fabs(x) < 100 ? "%.1f %s" : "%.0f %s", x, name[i]);
}

void nsc_fmt_unit(const nsc_units *u, nsc_unit unit, double v, char *buf, size_t cap)
{
    static const double ns_step[] = {1, 1e3, 1e6, 1e9};
    static const char *const ns_name[] = {"ns", "us", "ms", "s"};
    static const double b_step[] = {1, 1024.0, 1048576.0, 1073741824.0, 1099511627776.0};
    static const char *const b_name[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    static const double g_step[] = {1};
    static const char *const g_name[] = {"GB/s"};
    if (unit == NSC_UNIT_INSTANT && u->has_wall)
        nsc_utc_iso((int64_t)v + u->wall_ns, buf, cap);
    else if (unit == NSC_UNIT_INSTANT)
        snprintf(buf, cap, "%.6f s", v / 1e9);
    else if (unit == NSC_UNIT_NS)
        scaled(v, ns_step, ns_name, 4, buf, cap);
    else if (unit == NSC_UNIT_BYTES)
        scaled(v, b_step, b_name, 5, buf, cap);
    else if (unit == NSC_UNIT_GBPS)
        scaled(v, g_step, g_name, 1, buf, cap);
    else
        snprintf(buf, cap, "%g", v);
}

const char *nsc_noun(uint64_t n, const char *one, const char *many) { return n == 1 ? one : many; }

void nsc_units_wall(nsc_units *u, const nsc_json *answer)
{
    int64_t off;
    if (nsc_json_i64(nsc_json_get(answer, "wall_offset_ns"), &off) == 0) {
        u->wall_ns = off;
        u->has_wall = 1;
    }
}

int nsc_parse_span(const char *s, uint64_t *ns)
{
    static const struct {
        const char *name;
        double ns;
    } units[] = {{"", 1}, {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}, {"d", 86400e9}};
    char *end;
    if (!isdigit((unsigned char)s[0]) && s[0] != '.')
        return -1;
    double x = strtod(s, &end);
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(end, units[i].name) == 0 && x * units[i].ns < 9.2e18) {
            *ns = (uint64_t)llround(x * units[i].ns);
            return 0;
        }
    return -1;
}

int nsc_parse_utc(const char *s, int64_t *utc_ns)
{
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
    if (!p)
        return -1;
    int64_t frac = 0, scale = 1000000000;
    if (*p == '.') {
        for (p++; isdigit((unsigned char)*p); p++)
            if (scale > 1) {
                scale /= 10;
                frac += (*p - '0') * scale;
            }
    }
    if (strcmp(p, "Z") != 0 && strcmp(p, "+00:00") != 0)
        return -1;
    time_t t = timegm(&tm);
    if (t == (time_t)-1 || t > INT64_MAX / 1000000000 - 1 || t < INT64_MIN / 1000000000 + 1)
        return -1;  /* not a time in ns since the epoch (years 1678 to 2262) */
    *utc_ns = (int64_t)t * 1000000000 + frac;
    return 0;
}
