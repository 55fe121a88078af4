/* flat.c: the shallow-object scanner of NDJSON lines (see flat.h).
 *
 * The line is copied once into the text scratch; keys and strings are read in
 * that copy and end at a NUL written over their closing quote, a number ends
 * at a NUL written over the separator that follows it (read first). Every
 * rule here is one the generic reader enforces too (json.c): where they could
 * differ (number length, node count, input size, nesting) the scanner
 * declines. It recurses, at most NSC_FLAT_DEPTH calls of container() deep.
 */
#include "flat.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

#define NUMBER_MAX_LEN 64  /* json.c's limit on a number literal */

/* Bytes a string may hold as they are: printable ASCII but quote and backslash. */
static int plain(unsigned char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; }

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* A node of kind at the end of the tree; its index, or -1 (out of memory,
 * *nomem set, or more nodes than the generic reader allows). */
static int64_t add_node(nsc_flat *f, nsc_json_kind kind, int *nomem)
{
    if (f->nnodes >= nsc_json_default_limits.max_nodes)
        return -1;
    if (nsc_grow(&f->nodes, f->nnodes, &f->cap, sizeof *f->nodes, 64)) {
        *nomem = 1;
        return -1;
    }
    f->nodes[f->nnodes] = (nsc_json){.kind = kind, .span = 1};
    return f->nnodes++;
}

/* A string's bytes from s (after the opening quote) to its closing quote,
 * which becomes its NUL. Returns what follows the quote, or NULL. */
static char *string_end(char *s, const char *end, uint32_t *len)
{
    char *q = s;
    while (q < end && plain((unsigned char)*q))
        q++;
    if (q == end || *q != '"')
        return NULL;
    *q = 0;
    *len = (uint32_t)(q - s);
    return q + 1;
}

/* An integer literal (JSON grammar) from s; returns its end, or NULL. */
static char *integer_end(char *s, const char *end)
{
    char *q = s;
    if (q < end && *q == '-')
        q++;
    if (q < end && *q == '0')
        q++;
    else if (q < end && is_digit(*q))
        while (q < end && is_digit(*q))
            q++;
    else
        return NULL;
    return q - s <= NUMBER_MAX_LEN ? q : NULL;
}

/* One scalar at p into node i; returns the separator after it (a number's
 * separator is saved in *sep before its NUL replaces it), or NULL. */
static char *scalar(nsc_flat *f, uint32_t i, char *p, const char *end, char *sep)
{
    nsc_json *n = &f->nodes[i];
    static const struct {
        const char *word;
        size_t len;
        nsc_json_kind kind;
    } words[] = {{"true", 4, NSC_JSON_TRUE}, {"false", 5, NSC_JSON_FALSE}, {"null", 4, NSC_JSON_NULL}};
    if (p < end && *p == '"') {
        n->kind = NSC_JSON_STRING;
        n->text = p + 1;
        p = string_end(p + 1, end, &n->count);
    } else if (p < end && (*p == '-' || is_digit(*p))) {
        char *q = integer_end(p, end);
        if (!q || q == end)
            return NULL;
        n->kind = NSC_JSON_NUMBER;
        n->text = p;
        n->count = (uint32_t)(q - p);
        *sep = *q;
        *q = 0;
        return q;
    } else {
        size_t w = 0;
        while (w < 3 && (p >= end || *p != words[w].word[0]))
            w++;
        if (w == 3 || (size_t)(end - p) < words[w].len || memcmp(p, words[w].word, words[w].len) != 0)
            return NULL;
        n->kind = words[w].kind;
        p += words[w].len;
    }
    if (!p || p == end)
        return NULL;
    *sep = *p;
    return p;
}

static char *container(nsc_flat *f, uint32_t i, char *p, const char *end, unsigned depth, int *nomem);

/* A value at p into node i: a scalar, or an array or object at most depth
 * levels deep. Returns the separator after it, with its byte in *sep, or NULL. */
static char *value(nsc_flat *f, uint32_t i, char *p, const char *end, unsigned depth, char *sep, int *nomem)
{
    if (p >= end || (*p != '[' && *p != '{'))
        return scalar(f, i, p, end, sep);
    if (depth == 0 || !(p = container(f, i, p, end, depth - 1, nomem)) || p == end)
        return NULL;
    *sep = *p;
    return p;
}

/* The elements or members of the array or object whose '[' or '{' is at p,
 * into node i, their values at most depth levels deeper. Returns what follows
 * its closing bracket, or NULL. */
static char *container(nsc_flat *f, uint32_t i, char *p, const char *end, unsigned depth, int *nomem)
{
    int object = *p == '{';
    char close = object ? '}' : ']';
    f->nodes[i].kind = object ? NSC_JSON_OBJECT : NSC_JSON_ARRAY;
    p++;
    if (p < end && *p == close) {
        p++;
    } else {
        for (;;) {
            char *key = NULL;
            uint32_t klen = 0;
            if (object && (p >= end || *p != '"' || !(p = string_end(key = p + 1, end, &klen)) ||
                           p == end || *p++ != ':'))
                return NULL;
            int64_t e = add_node(f, NSC_JSON_NULL, nomem);
            if (e < 0)
                return NULL;
            f->nodes[e].key = key;
            f->nodes[e].key_len = klen;
            f->nodes[i].count++;
            char sep;
            if (!(p = value(f, (uint32_t)e, p, end, depth, &sep, nomem)))
                return NULL;
            p++;
            if (sep == close)
                break;
            if (sep != ',')
                return NULL;
        }
    }
    f->nodes[i].span = f->nnodes - i;
    return p;
}

static int grow_text(nsc_flat *f, size_t need)
{
    return nsc_grow_to(&f->text, need, &f->text_cap, 1, 4096);
}

int nsc_flat_scan(nsc_flat *f, const char *line, size_t len, const nsc_json **root)
{
    if (len < 2 || line[0] != '{' || len > nsc_json_default_limits.max_bytes)
        return NSC_FLAT_DECLINED;
    if (grow_text(f, len + 1) != 0)
        return NSC_FLAT_NOMEM;
    memcpy(f->text, line, len);
    f->text[len] = 0;
    f->nnodes = 0;
    int nomem = 0;
    char *end = f->text + len;
    if (add_node(f, NSC_JSON_OBJECT, &nomem) < 0 || container(f, 0, f->text, end, NSC_FLAT_DEPTH - 1, &nomem) != end)
        return nomem ? NSC_FLAT_NOMEM : NSC_FLAT_DECLINED;
    *root = &f->nodes[0];
    return NSC_FLAT_OK;
}

void nsc_flat_free(nsc_flat *f)
{
    free(f->nodes);
    free(f->text);
    memset(f, 0, sizeof *f);
}
