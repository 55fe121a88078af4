/* json.c: the strict JSON reader and string escaping declared in json.h.
 *
 * One pass, no recursion: `stack` holds the indices of the open containers, so
 * the nesting depth costs nothing but that bounded array. Decoded strings never
 * need more bytes than their quoted source, and a number literal plus its NUL
 * never needs more than the literal plus the separator after it, so one text
 * arena of len + 1 bytes, allocated once, holds every string of the document.
 */
#include "json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const nsc_json_limits nsc_json_default_limits = {64u << 20, 64, 4u << 20};

#define NUMBER_MAX_LEN 64

typedef struct parser {
    const unsigned char *in;
    size_t len, pos;
    const nsc_json_limits *lim;
    nsc_json_doc *doc;
    uint32_t cap;
    size_t text_used;
    nsc_json_error *err;
} parser;

static int fail(parser *p, size_t at, const char *msg)
{
    p->err->offset = at;
    snprintf(p->err->msg, sizeof p->err->msg, "%s", msg);
    return -1;
}

static void skip_ws(parser *p)
{
    while (p->pos < p->len) {
        unsigned char c = p->in[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            return;
        p->pos++;
    }
}

/* Append a node; its key (if any) was decoded by the caller. */
static int add_node(parser *p, nsc_json_kind kind, uint32_t *index)
{
    nsc_json_doc *d = p->doc;
    if (d->nnodes >= p->lim->max_nodes)
        return fail(p, p->pos, "too many values");
    if (d->nnodes == p->cap) {
        uint32_t cap = p->cap ? p->cap * 2 : 64;
        if (cap > p->lim->max_nodes)
            cap = p->lim->max_nodes;
        nsc_json *n = realloc(d->nodes, (size_t)cap * sizeof *n);
        if (!n)
            return fail(p, p->pos, "out of memory");
        d->nodes = n;
        p->cap = cap;
    }
    *index = d->nnodes++;
    d->nodes[*index] = (nsc_json){.kind = kind, .span = 1};
    return 0;
}

static int hex4(const unsigned char *s, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = s[i], d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
            d = (c | 0x20) - 'a' + 10;
        else
            return -1;
        v = v << 4 | d;
    }
    *out = v;
    return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18);
    o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Length of the valid UTF-8 sequence at s (at most `avail` bytes), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t avail)
{
    unsigned c = s[0];
    size_t n;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (avail < n || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

/* \uXXXX (and its low surrogate) at p->pos, which points after the 'u'. */
static int unicode_escape(parser *p, size_t esc_at, char *out, size_t *outlen)
{
    unsigned cp, lo;
    if (p->len - p->pos < 4 || hex4(p->in + p->pos, &cp))
        return fail(p, esc_at, "bad unicode escape");
    p->pos += 4;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return fail(p, esc_at, "lone surrogate");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (p->len - p->pos < 6 || p->in[p->pos] != '\\' || p->in[p->pos + 1] != 'u' ||
            hex4(p->in + p->pos + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
            return fail(p, esc_at, "lone surrogate");
        p->pos += 6;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    *outlen = put_utf8(out, cp);
    return 0;
}

/* A string at p->pos (on the opening quote); decoded into the text arena. */
static int parse_string(parser *p, const char **text, uint32_t *len)
{
    char *start = p->doc->text + p->text_used, *o = start;
    p->pos++;
    for (;;) {
        if (p->pos >= p->len)
            return fail(p, p->pos, "unexpected end of input");
        unsigned char c = p->in[p->pos];
        if (c == '"') {
            p->pos++;
            break;
        }
        if (c < 0x20)
            return fail(p, p->pos, "control character in string");
        if (c == '\\') {
            size_t at = p->pos;
            if (++p->pos >= p->len)
                return fail(p, p->pos, "unexpected end of input");
            static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
            const char *hit = strchr(from, p->in[p->pos]);
            if (p->in[p->pos] == 'u') {
                size_t n;
                p->pos++;
                if (unicode_escape(p, at, o, &n))
                    return -1;
                o += n;
            } else if (hit && p->in[p->pos]) {
                *o++ = to[hit - from];
                p->pos++;
            } else
                return fail(p, at, "bad escape");
        } else if (c < 0x80) {
            *o++ = (char)c;
            p->pos++;
        } else {
            size_t n = utf8_seq(p->in + p->pos, p->len - p->pos);
            if (!n)
                return fail(p, p->pos, "invalid UTF-8");
            memcpy(o, p->in + p->pos, n);
            o += n;
            p->pos += n;
        }
    }
    *o++ = '\0';
    *text = start;
    *len = (uint32_t)(o - start - 1);
    p->text_used += (size_t)(o - start);
    return 0;
}

static size_t digits(parser *p)
{
    size_t n = 0;
    while (p->pos < p->len && p->in[p->pos] >= '0' && p->in[p->pos] <= '9')
        p->pos++, n++;
    return n;
}

/* A number literal, checked against JSON's grammar, kept as text. */
static int parse_number(parser *p, nsc_json *node)
{
    size_t start = p->pos;
    if (p->in[p->pos] == '-')
        p->pos++;
    if (p->pos < p->len && p->in[p->pos] == '0')
        p->pos++;
    else if (!digits(p))
        return fail(p, start, "bad number");
    bool real = false;
    if (p->pos < p->len && p->in[p->pos] == '.') {
        p->pos++;
        if (!digits(p))
            return fail(p, start, "bad number");
        real = true;
    }
    if (p->pos < p->len && (p->in[p->pos] | 0x20) == 'e') {
        p->pos++;
        if (p->pos < p->len && (p->in[p->pos] == '+' || p->in[p->pos] == '-'))
            p->pos++;
        if (!digits(p))
            return fail(p, start, "bad number");
        real = true;
    }
    size_t n = p->pos - start;
    if (n > NUMBER_MAX_LEN)
        return fail(p, start, "number too long");
    char *t = p->doc->text + p->text_used;
    memcpy(t, p->in + start, n);
    t[n] = '\0';
    if (real && !isfinite(strtod(t, NULL)))
        return fail(p, start, "number out of range");
    p->text_used += n + 1;
    node->text = t;
    node->count = (uint32_t)n;
    return 0;
}

static int parse_literal(parser *p, const char *word, nsc_json_kind kind, nsc_json *node)
{
    size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->in + p->pos, word, n) != 0)
        return fail(p, p->pos, "bad literal");
    p->pos += n;
    node->kind = kind;
    return 0;
}

enum want { WANT_VALUE, WANT_FIRST_ELEM, WANT_FIRST_MEMBER, WANT_KEY, WANT_AFTER };

typedef struct frame {
    const char *key; /* decoded key for the next member of the open object */
    uint32_t key_len;
} frame;

/* Parse a scalar or open a container at p->pos; *opened tells which. */
static int parse_value(parser *p, const frame *k, uint32_t *index, bool *opened)
{
    if (p->pos >= p->len)
        return fail(p, p->pos, "unexpected end of input");
    if (add_node(p, NSC_JSON_NULL, index))
        return -1;
    nsc_json *node = &p->doc->nodes[*index];
    node->key = k->key;
    node->key_len = k->key_len;
    *opened = false;
    unsigned char c = p->in[p->pos];
    switch (c) {
    case '{':
    case '[':
        node->kind = c == '{' ? NSC_JSON_OBJECT : NSC_JSON_ARRAY;
        p->pos++;
        *opened = true;
        return 0;
    case '"':
        node->kind = NSC_JSON_STRING;
        return parse_string(p, &node->text, &node->count);
    case 't':
        return parse_literal(p, "true", NSC_JSON_TRUE, node);
    case 'f':
        return parse_literal(p, "false", NSC_JSON_FALSE, node);
    case 'n':
        return parse_literal(p, "null", NSC_JSON_NULL, node);
    default:
        if (c == '-' || (c >= '0' && c <= '9')) {
            node->kind = NSC_JSON_NUMBER;
            return parse_number(p, node);
        }
        return fail(p, p->pos, "unexpected character");
    }
}

static int parse_key(parser *p, frame *k)
{
    if (p->pos >= p->len)
        return fail(p, p->pos, "unexpected end of input");
    if (p->in[p->pos] != '"')
        return fail(p, p->pos, "expected string key");
    if (parse_string(p, &k->key, &k->key_len))
        return -1;
    skip_ws(p);
    if (p->pos >= p->len)
        return fail(p, p->pos, "unexpected end of input");
    if (p->in[p->pos] != ':')
        return fail(p, p->pos, "expected ':'");
    p->pos++;
    return 0;
}

static int parse_doc(parser *p, uint32_t *stack)
{
    uint32_t depth = 0;
    enum want want = WANT_VALUE;
    frame k = {0};
    for (;;) {
        skip_ws(p);
        nsc_json *nodes = p->doc->nodes;
        if (want == WANT_VALUE) {
            uint32_t idx;
            bool opened;
            if (depth)
                p->doc->nodes[stack[depth - 1]].count++;
            if (parse_value(p, &k, &idx, &opened))
                return -1;
            k = (frame){0};
            want = WANT_AFTER;
            if (opened) {
                if (depth == p->lim->max_depth)
                    return fail(p, p->pos - 1, "too deeply nested");
                stack[depth++] = idx;
                want = p->doc->nodes[idx].kind == NSC_JSON_ARRAY ? WANT_FIRST_ELEM : WANT_FIRST_MEMBER;
            }
            continue;
        }
        if (want == WANT_KEY) {
            if (parse_key(p, &k))
                return -1;
            want = WANT_VALUE;
            continue;
        }
        if (want == WANT_AFTER && depth == 0) {
            if (p->pos != p->len)
                return fail(p, p->pos, "trailing garbage");
            return 0;
        }
        if (p->pos >= p->len)
            return fail(p, p->pos, "unexpected end of input");
        nsc_json *top = &nodes[stack[depth - 1]];
        bool array = top->kind == NSC_JSON_ARRAY;
        unsigned char c = p->in[p->pos];
        if (c == (array ? ']' : '}')) {
            p->pos++;
            top->span = p->doc->nnodes - stack[depth - 1];
            depth--;
            want = WANT_AFTER;
        } else if (want == WANT_FIRST_ELEM) {
            want = WANT_VALUE;
        } else if (want == WANT_FIRST_MEMBER) {
            want = WANT_KEY;
        } else if (c == ',') {
            p->pos++;
            want = array ? WANT_VALUE : WANT_KEY;
        } else {
            return fail(p, p->pos, array ? "expected ',' or ']'" : "expected ',' or '}'");
        }
    }
}

int nsc_json_parse(const char *in, size_t len, const nsc_json_limits *limits, nsc_json_doc *doc,
                   nsc_json_error *err)
{
    parser p = {.in = (const unsigned char *)in, .len = len, .doc = doc, .err = err,
                .lim = limits ? limits : &nsc_json_default_limits};
    *doc = (nsc_json_doc){0};
    if (len > p.lim->max_bytes)
        return fail(&p, 0, "input too large");
    uint32_t *stack = malloc((size_t)p.lim->max_depth * sizeof *stack + 1);
    doc->text = malloc(len + 1);
    int rc = stack && doc->text ? parse_doc(&p, stack) : fail(&p, 0, "out of memory");
    free(stack);
    if (rc)
        nsc_json_free(doc);
    return rc;
}

void nsc_json_free(nsc_json_doc *doc)
{
    free(doc->nodes);
    free(doc->text);
    *doc = (nsc_json_doc){0};
}

const nsc_json *nsc_json_first(const nsc_json *c)
{
    if (!c || (c->kind != NSC_JSON_ARRAY && c->kind != NSC_JSON_OBJECT) || c->count == 0)
        return NULL;
    return c + 1;
}

const nsc_json *nsc_json_next(const nsc_json *c, const nsc_json *child)
{
    const nsc_json *n = child + child->span;
    return n < c + c->span ? n : NULL;
}

const nsc_json *nsc_json_get(const nsc_json *object, const char *key)
{
    if (!object || object->kind != NSC_JSON_OBJECT)
        return NULL;
    size_t klen = strlen(key);
    for (const nsc_json *m = nsc_json_first(object); m; m = nsc_json_next(object, m))
        if (m->key_len == klen && memcmp(m->key, key, klen) == 0)
            return m;
    return NULL;
}

const nsc_json *nsc_json_at(const nsc_json *array, uint32_t i)
{
    if (!array || array->kind != NSC_JSON_ARRAY || i >= array->count)
        return NULL;
    const nsc_json *e = nsc_json_first(array);
    while (i--)
        e = nsc_json_next(array, e);
    return e;
}

/* The magnitude of an integer literal (no fraction, no exponent), at most
 * max, with its sign. Read digit by digit: it runs for every number a reader
 * asks for, and the literal is known to be valid JSON. */
static int integer_text(const nsc_json *n, bool allow_minus, uint64_t max, uint64_t *mag, bool *neg)
{
    if (!n || n->kind != NSC_JSON_NUMBER)
        return -1;
    const char *s = n->text;
    *neg = *s == '-';
    if (*neg && !allow_minus)
        return -1;
    uint64_t v = 0, top = max / 10;
    unsigned last = (unsigned)(max % 10);
    for (s += *neg; *s; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (d > 9 || v > top || (v == top && d > last))
            return -1;
        v = v * 10 + d;
    }
    *mag = v;
    return 0;
}

int nsc_json_u64(const nsc_json *n, uint64_t *out)
{
    bool neg;
    return integer_text(n, false, UINT64_MAX, out, &neg);
}

int nsc_json_i64(const nsc_json *n, int64_t *out)
{
    uint64_t mag;
    bool neg;
    if (integer_text(n, true, (uint64_t)INT64_MAX + 1, &mag, &neg) != 0 || (!neg && mag > INT64_MAX))
        return -1;
    *out = neg && mag ? -(int64_t)(mag - 1) - 1 : (int64_t)mag;
    return 0;
}

int nsc_json_double(const nsc_json *n, double *out)
{
    if (!n || n->kind != NSC_JSON_NUMBER)
        return -1;
    *out = strtod(n->text, NULL);
    return 0;
}

int nsc_json_bool(const nsc_json *n, bool *out)
{
    if (!n || (n->kind != NSC_JSON_TRUE && n->kind != NSC_JSON_FALSE))
        return -1;
    *out = n->kind == NSC_JSON_TRUE;
    return 0;
}

int nsc_json_fixed(const nsc_json *n, unsigned decimals, uint64_t *out)
{
    if (!n || n->kind != NSC_JSON_NUMBER || n->text[0] == '-' || strpbrk(n->text, "eE"))
        return -1;
    uint64_t v = 0;
    unsigned frac = 0;
    bool in_frac = false;
    for (const char *s = n->text; *s; s++) {
        if (*s == '.') {
            in_frac = true;
            continue;
        }
        if (in_frac && ++frac > decimals)
            return -1;
        if (v > (UINT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    for (; frac < decimals; frac++) {
        if (v > UINT64_MAX / 10)
            return -1;
        v *= 10;
    }
    *out = v;
    return 0;
}

const char *nsc_json_str(const nsc_json *n)
{
    return n && n->kind == NSC_JSON_STRING ? n->text : NULL;
}

const char *nsc_json_str_or(const nsc_json *obj, const char *key, const char *dflt)
{
    const char *s = nsc_json_str(nsc_json_get(obj, key));
    return s ? s : dflt;
}

void nsc_json_escape(const char *s, enum nsc_json_ctl ctl, nsc_json_put_fn put, void *arg)
{
    static const char hex[] = "0123456789abcdef";
    put(arg, "\"", 1);
    const char *run = s;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        put(arg, run, (size_t)(s - run));
        run = s + 1;
        char esc[6] = {'\\', (char)c, '0', '0', hex[c >> 4], hex[c & 15]};
        if (ctl == NSC_JSON_CTL_SHORT && (c == '\n' || c == '\t'))
            esc[1] = c == '\n' ? 'n' : 't';
        else if (c < 0x20)
            esc[1] = 'u';
        put(arg, esc, esc[1] == 'u' ? 6 : 2);
    }
    put(arg, run, (size_t)(s - run));
    put(arg, "\"", 1);
}

static void put_file(void *arg, const char *p, size_t n) { fwrite(p, 1, n, arg); }

void nsc_json_write_str(FILE *f, const char *s) { nsc_json_escape(s, NSC_JSON_CTL_SHORT, put_file, f); }
