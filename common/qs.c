/* qs.c: URL query strings (see qs.h). */
#include "qs.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int nsc_qs_add(char *qs, size_t cap, const char *name, const char *value)
{
    size_t n = strlen(qs);
    int w = snprintf(qs + n, cap - n, "&%s=", name);
    if (w < 0 || (size_t)w >= cap - n)
        return -1;
    n += (size_t)w;
    for (const unsigned char *p = (const unsigned char *)value; *p; p++) {
        if (n + 4 > cap)
            return -1;
        if (isalnum(*p) || strchr("-_.~", *p))
            qs[n++] = (char)*p;
        else
            n += (size_t)snprintf(qs + n, cap - n, "%%%02X", *p);
    }
    qs[n] = 0;
    return 0;
}

int nsc_qs_u64(const char *value, uint64_t fallback, uint64_t *out)
{
    char *end;
    if (!value) {
        *out = fallback;
        return 0;
    }
    errno = 0;
    *out = strtoull(value, &end, 10);
    return *value && *value != '-' && !*end && errno == 0 ? 0 : -1;
}
