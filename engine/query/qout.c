/* qout.c: the buffered JSON writer of query results. Numbers are formatted
 * by hand: a timeline writes millions of them and snprintf would dominate. */
#include "qint.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "json.h"

int nsc_q_flush(nsc_q_out *o)
{
    if (!o->err && o->len && o->fn(o->arg, o->buf, o->len))
        o->err = NSC_QUERY_EWRITE;
    o->len = 0;
    return o->err;
}

void nsc_q_raw_slow(nsc_q_out *o, const char *s, size_t n)
{
    while (n) {
        if (o->len == sizeof o->buf && nsc_q_flush(o))
            return;
        size_t room = sizeof o->buf - o->len, k = n < room ? n : room;
        memcpy(o->buf + o->len, s, k);
        o->len += k;
        s += k;
        n -= k;
    }
}

void nsc_q_cs(nsc_q_out *o, const char *s)
{
    nsc_q_raw(o, s, strlen(s));
}

/* Two digits per division. */
static const char digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static const uint64_t pow10[20] = {
    1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull, 100000000ull,
    1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull, 10000000000000ull,
    100000000000000ull, 1000000000000000ull, 10000000000000000ull, 100000000000000000ull,
    1000000000000000000ull, 10000000000000000000ull};

/* Decimal digits of v: log10 from the bit length (1233 / 4096 ~ log10 2). */
static size_t ndigits(uint64_t v)
{
    unsigned t = (unsigned)(64 - __builtin_clzll(v | 1)) * 1233 >> 12;
    return t + ((v | 1) >= pow10[t]); /* | 1: 0 has one digit */
}

/* The last n digits of v, n even, at end - n; 32-bit arithmetic. */
static char *put_pairs(char *end, uint32_t v, int n)
{
    for (; n > 0; n -= 2) {
        unsigned d = v % 100 * 2;
        v /= 100;
        *--end = digit_pairs[d + 1];
        *--end = digit_pairs[d];
    }
    return end;
}

size_t nsc_q_fmt_u64(char *p, uint64_t v)
{
    size_t n = ndigits(v);
    char *end = p + n;
    /* Eight digits at a time in 32 bits: 64-bit divisions cost more. */
    while (v >= 100000000) {
        end = put_pairs(end, (uint32_t)(v % 100000000), 8);
        v /= 100000000;
    }
    uint32_t w = (uint32_t)v;
    while (w >= 100)
        end = put_pairs(end, w, 2), w /= 100;
    if (w >= 10)
        put_pairs(end, w, 2);
    else
        *--end = (char)('0' + w);
    return n;
}

void nsc_q_i64(nsc_q_out *o, int64_t v)
{
    if (v < 0) {
        nsc_q_lit(o, "-");
        nsc_q_u64(o, (uint64_t)0 - (uint64_t)v);
    } else {
        nsc_q_u64(o, (uint64_t)v);
    }
}

void nsc_q_hex(nsc_q_out *o, uint64_t v)
{
    char tmp[24]; /* quotes, 0x, 16 digits, NUL */
    int n = snprintf(tmp, sizeof tmp, "\"0x%llx\"", (unsigned long long)v);
    nsc_q_raw(o, tmp, (size_t)n);
}

void nsc_q_num(nsc_q_out *o, double v)
{
    if (!isfinite(v)) {
        nsc_q_lit(o, "null");
        return;
    }
    char tmp[64];
    int n = snprintf(tmp, sizeof tmp, "%.3f", v);
    nsc_q_raw(o, tmp, (size_t)n);
}

void nsc_q_opt_u64(nsc_q_out *o, int known, uint64_t v)
{
    if (known)
        nsc_q_u64(o, v);
    else
        nsc_q_lit(o, "null");
}

static void put_out(void *arg, const char *p, size_t n) { nsc_q_raw(arg, p, n); }

void nsc_q_str(nsc_q_out *o, const char *s) { nsc_json_escape(s, NSC_JSON_CTL_UNICODE, put_out, o); }

void nsc_q_next_cursor(nsc_q_out *o, int more, uint64_t a, uint64_t b, uint64_t c)
{
    nsc_q_lit(o, ",\"next_cursor\":");
    if (!more) {
        nsc_q_lit(o, "null");
        return;
    }
    nsc_q_lit(o, "\"");
    nsc_q_u64(o, a);
    nsc_q_lit(o, ".");
    nsc_q_u64(o, b);
    nsc_q_lit(o, ".");
    nsc_q_u64(o, c);
    nsc_q_lit(o, "\"");
}
