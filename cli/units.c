/* units.c: times, sizes and bandwidths for people (see units.h). */
#include "units.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int has(const char *key, size_t len, const char *part)
{
    size_t n = strlen(part);
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(key + i, part, n) == 0)
            return 1;
    return 0;
}

nsc_unit nsc_unit_of(const char *key, size_t len)
{
    if (!key)
        return NSC_UNIT_NONE;
    if ((len > 3 && memcmp(key + len - 3, "_ns", 3) == 0) || has(key, len, "_ns_"))
        return NSC_UNIT_NS;
    if (has(key, len, "gbps"))
        return NSC_UNIT_GBPS;
    if ((len >= 5 && memcmp(key, "bytes", 5) == 0) || (len > 6 && memcmp(key + len - 6, "_bytes", 6) == 0))
        return NSC_UNIT_BYTES;
    return NSC_UNIT_NONE;
}

/* v scaled by the first step of `steps` it reaches, three significant digits. */
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

void nsc_fmt_unit(nsc_unit u, double v, char *buf, size_t cap)
{
    static const double ns_step[] = {1, 1e3, 1e6, 1e9};
    static const char *const ns_name[] = {"ns", "us", "ms", "s"};
    static const double b_step[] = {1, 1024.0, 1048576.0, 1073741824.0, 1099511627776.0};
    static const char *const b_name[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    static const double g_step[] = {1};
    static const char *const g_name[] = {"GB/s"};
    if (u == NSC_UNIT_NS)
        scaled(v, ns_step, ns_name, 4, buf, cap);
    else if (u == NSC_UNIT_BYTES)
        scaled(v, b_step, b_name, 5, buf, cap);
    else if (u == NSC_UNIT_GBPS)
        scaled(v, g_step, g_name, 1, buf, cap);
    else
        snprintf(buf, cap, "%g", v);
}
