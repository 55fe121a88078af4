/* logsafe.c: peer strings made safe for a log line (see logsafe.h). */
#include "logsafe.h"

static int plain(unsigned char c)
{
    return c >= 0x20 && c < 0x7f && c != '\\';
}

static size_t escaped_len(const unsigned char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += plain(*s) ? 1 : 4;
    return n;
}

const char *nsc_logsafe(char *out, size_t room, const char *v)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)v;
    /* what does not fit whole keeps room for the "..." that says so */
    size_t n = 0, limit = escaped_len(s) < room ? room - 1 : room - 4;
    for (; *s; s++) {
        if (n + (plain(*s) ? 1 : 4) > limit)
            break;
        if (plain(*s)) {
            out[n++] = (char)*s;
            continue;
        }
        out[n++] = '\\';
        out[n++] = 'x';
        out[n++] = hex[*s >> 4];
        out[n++] = hex[*s & 15];
    }
    if (*s)
        for (int i = 0; i < 3; i++)
            out[n++] = '.';
    out[n] = 0;
    return out;
}
