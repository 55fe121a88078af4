/* qs.c: URL query strings (see qs.h). */
#include "qs.h"

#include <ctype.h>
#include <stdio.h>
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
