/* prom.c: Prometheus exposition lines (see prom.h). */
#include "prom.h"

#include <event2/buffer.h>
#include <inttypes.h>

void nsc_prom_head(struct evbuffer *b, const char *name, const char *type, const char *help)
{
    evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void nsc_prom_u64(struct evbuffer *b, const char *name, const char *type, const char *help, uint64_t v)
{
    nsc_prom_head(b, name, type, help);
    evbuffer_add_printf(b, "%s %" PRIu64 "\n", name, v);
}

/* Bytes of the valid UTF-8 character at s (1 to 4), or 0 where s starts none:
 * no overlong forms, no surrogates, nothing above U+10FFFF. */
static size_t utf8_len(const unsigned char *s)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xbf;
    size_t n;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        n = 2;
    else if (c >= 0xe0 && c <= 0xef)
        n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    else if (c >= 0xf0 && c <= 0xf4)
        n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    else
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xbf)
            return 0;
    return n;
}

/* The escaped form of the character at s into out (room for 4 bytes): its
 * length; *used is how many bytes of s it stands for. */
static size_t escape_one(const unsigned char *s, char out[4], size_t *used)
{
    size_t n = utf8_len(s);
    *used = n ? n : 1;
    if (n > 1) {
        for (size_t i = 0; i < n; i++)
            out[i] = (char)s[i];
        return n;
    }
    if (n == 1 && (*s == '\\' || *s == '"' || *s == '\n')) {
        out[0] = '\\';
        out[1] = *s == '\n' ? 'n' : (char)*s;
        return 2;
    }
    out[0] = n == 1 && *s >= 0x20 && *s != 0x7f ? (char)*s : '?';
    return 1;
}

size_t nsc_prom_escape(char *out, size_t room, const char *v)
{
    const unsigned char *s = (const unsigned char *)v;
    size_t n = 0, used;
    char one[4];
    while (*s) {
        size_t k = escape_one(s, one, &used);
        if (n + k + 1 > room)
            break;
        for (size_t i = 0; i < k; i++)
            out[n++] = one[i];
        s += used;
    }
    out[n] = 0;
    return n;
}

void nsc_prom_label(struct evbuffer *b, const char *v)
{
    const unsigned char *s = (const unsigned char *)v;
    size_t used;
    char one[4];
    while (*s) {
        evbuffer_add(b, one, escape_one(s, one, &used));
        s += used;
    }
}
