/* test_json.c: the strict JSON reader: values, exact integers and fixed-point
 * decimals, escapes and UTF-8, limits, and a corpus of malformed inputs each with
 * its exact error message and byte offset. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

static nsc_json_doc parse_ok(const char *s)
{
    nsc_json_doc doc;
    nsc_json_error err;
    int rc = nsc_json_parse(s, strlen(s), NULL, &doc, &err);
    cr_assert_eq(rc, 0, "parse of %s failed: %s at %zu", s, err.msg, err.offset);
    return doc;
}

Test(json, object_members_and_types)
{
    nsc_json_doc doc = parse_ok(" {\"a\": 1, \"b\": [true, false, null, \"x\"], \"c\": {\"d\": -2.5}} ");
    const nsc_json *r = nsc_json_root(&doc);
    cr_assert_eq(r->kind, NSC_JSON_OBJECT);
    cr_assert_eq(r->count, 3);
    uint64_t a;
    cr_assert_eq(nsc_json_u64(nsc_json_get(r, "a"), &a), 0);
    cr_assert_eq(a, 1);
    const nsc_json *b = nsc_json_get(r, "b");
    cr_assert_eq(b->count, 4);
    cr_assert_eq(nsc_json_at(b, 0)->kind, NSC_JSON_TRUE);
    cr_assert_eq(nsc_json_at(b, 1)->kind, NSC_JSON_FALSE);
    cr_assert_eq(nsc_json_at(b, 2)->kind, NSC_JSON_NULL);
    cr_assert_str_eq(nsc_json_str(nsc_json_at(b, 3)), "x");
    cr_assert_null(nsc_json_at(b, 4));
    double d;
    cr_assert_eq(nsc_json_double(nsc_json_get(nsc_json_get(r, "c"), "d"), &d), 0);
    cr_assert_eq(d, -2.5);
    cr_assert_null(nsc_json_get(r, "missing"));
    int n = 0;
    for (const nsc_json *m = nsc_json_first(r); m; m = nsc_json_next(r, m))
        n++;
    cr_assert_eq(n, 3);
    nsc_json_free(&doc);
}

Test(json, exact_u64_and_fixed_point)
{
    nsc_json_doc doc = parse_ok("[12464174370433239723, 9270729183218.514, 1770891945542499520, 7, -3, 1.5e3]");
    const nsc_json *r = nsc_json_root(&doc);
    uint64_t v;
    int64_t s;
    cr_assert_eq(nsc_json_u64(nsc_json_at(r, 0), &v), 0);
    cr_assert_eq(v, 12464174370433239723ull);
    cr_assert_eq(nsc_json_fixed(nsc_json_at(r, 1), 3, &v), 0);
    cr_assert_eq(v, 9270729183218514ull);
    cr_assert_eq(nsc_json_u64(nsc_json_at(r, 2), &v), 0);
    cr_assert_eq(v, 1770891945542499520ull);
    cr_assert_eq(nsc_json_fixed(nsc_json_at(r, 3), 3, &v), 0);
    cr_assert_eq(v, 7000);
    cr_assert_eq(nsc_json_i64(nsc_json_at(r, 4), &s), 0);
    cr_assert_eq(s, -3);
    cr_assert_eq(nsc_json_u64(nsc_json_at(r, 4), &v), -1, "negative is not a u64");
    cr_assert_eq(nsc_json_u64(nsc_json_at(r, 1), &v), -1, "fraction is not an integer");
    cr_assert_eq(nsc_json_fixed(nsc_json_at(r, 1), 2, &v), -1, "too many decimals");
    cr_assert_eq(nsc_json_fixed(nsc_json_at(r, 5), 3, &v), -1, "exponent");
    nsc_json_free(&doc);
    doc = parse_ok("[18446744073709551616, 99999999999999999999.0]");
    cr_assert_eq(nsc_json_u64(nsc_json_at(nsc_json_root(&doc), 0), &v), -1, "2^64 overflows");
    cr_assert_eq(nsc_json_fixed(nsc_json_at(nsc_json_root(&doc), 1), 3, &v), -1, "scaled overflow");
    nsc_json_free(&doc);
}

Test(json, integer_bounds)
{
    nsc_json_doc doc = parse_ok("[18446744073709551615, 9223372036854775807, -9223372036854775808,"
                                " 9223372036854775808, -9223372036854775809, -0, 0, 1e2, -1.0]");
    const nsc_json *r = nsc_json_root(&doc);
    uint64_t v;
    int64_t s;
    cr_assert_eq(nsc_json_u64(nsc_json_at(r, 0), &v), 0);
    cr_assert_eq(v, UINT64_MAX);
    cr_assert_eq(nsc_json_i64(nsc_json_at(r, 0), &s), -1, "2^64-1 is not an i64");
    cr_assert_eq(nsc_json_i64(nsc_json_at(r, 1), &s), 0);
    cr_assert_eq(s, INT64_MAX);
    cr_assert_eq(nsc_json_i64(nsc_json_at(r, 2), &s), 0);
    cr_assert_eq(s, INT64_MIN);
    cr_assert_eq(nsc_json_i64(nsc_json_at(r, 3), &s), -1, "2^63 overflows");
    cr_assert_eq(nsc_json_u64(nsc_json_at(r, 3), &v), 0);
    cr_assert_eq(v, 9223372036854775808ull);
    cr_assert_eq(nsc_json_i64(nsc_json_at(r, 4), &s), -1, "-2^63-1 overflows");
    cr_assert_eq(nsc_json_i64(nsc_json_at(r, 5), &s), 0);
    cr_assert_eq(s, 0);
    cr_assert_eq(nsc_json_u64(nsc_json_at(r, 5), &v), -1, "-0 is negative");
    cr_assert_eq(nsc_json_u64(nsc_json_at(r, 6), &v), 0);
    cr_assert_eq(v, 0);
    cr_assert_eq(nsc_json_u64(nsc_json_at(r, 7), &v), -1, "exponent");
    cr_assert_eq(nsc_json_i64(nsc_json_at(r, 8), &s), -1, "fraction");
    nsc_json_free(&doc);
}

Test(json, escapes_and_utf8)
{
    nsc_json_doc doc = parse_ok("\"a\\\"b\\\\c\\/\\n\\t\\u00e9\\ud83d\\ude00\xc3\xa9\"");
    cr_assert_str_eq(nsc_json_str(nsc_json_root(&doc)), "a\"b\\c/\n\t\xc3\xa9\xf0\x9f\x98\x80\xc3\xa9");
    cr_assert_eq(nsc_json_root(&doc)->count, strlen("a\"b\\c/\n\t") + 2 + 4 + 2);
    nsc_json_free(&doc);
}

Test(json, empty_containers_and_scalars)
{
    nsc_json_doc doc = parse_ok("[[], {}, [[]]]");
    const nsc_json *r = nsc_json_root(&doc);
    cr_assert_eq(r->count, 3);
    cr_assert_eq(r->span, 5);
    cr_assert_null(nsc_json_first(nsc_json_at(r, 0)));
    cr_assert_eq(nsc_json_at(r, 2)->count, 1);
    nsc_json_free(&doc);
    doc = parse_ok("0");
    cr_assert_eq(nsc_json_root(&doc)->kind, NSC_JSON_NUMBER);
    nsc_json_free(&doc);
}

Test(json, write_str_escapes)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    nsc_json_write_str(f, "q\"b\\n\n\x01");
    fclose(f);
    cr_assert_str_eq(buf, "\"q\\\"b\\\\n\\n\\u0001\"");
    nsc_json_doc doc = parse_ok(buf);
    cr_assert_str_eq(nsc_json_str(nsc_json_root(&doc)), "q\"b\\n\n\x01");
    nsc_json_free(&doc);
    free(buf);
}

struct bad {
    const char *in;
    size_t len; /* 0: strlen(in) */
    const char *msg;
    size_t offset;
};

static const struct bad corpus[] = {
    {"", 0, "unexpected end of input", 0},
    {"   ", 0, "unexpected end of input", 3},
    {"{\"a\":1", 0, "unexpected end of input", 6},
    {"[1, 2", 0, "unexpected end of input", 5},
    {"\"abc", 0, "unexpected end of input", 4},
    {"{\"a\"", 0, "unexpected end of input", 4},
    {"[1 2]", 0, "expected ',' or ']'", 3},
    {"{\"a\":1 \"b\":2}", 0, "expected ',' or '}'", 7},
    {"{\"a\" 1}", 0, "expected ':'", 5},
    {"{1:2}", 0, "expected string key", 1},
    {"{\"a\":1,}", 0, "expected string key", 7},
    {"[1,]", 0, "unexpected character", 3},
    {"[1] x", 0, "trailing garbage", 4},
    {"{} {}", 0, "trailing garbage", 3},
    {"tru", 0, "bad literal", 0},
    {"nul", 0, "bad literal", 0},
    {"\"a\\x\"", 0, "bad escape", 2},
    {"\"\\u12G4\"", 0, "bad unicode escape", 1},
    {"\"\\u12\"", 0, "bad unicode escape", 1},
    {"\"\\ud800\"", 0, "lone surrogate", 1},
    {"\"\\udc00\"", 0, "lone surrogate", 1},
    {"\"a\nb\"", 0, "control character in string", 2},
    {"\"\xc3\x28\"", 0, "invalid UTF-8", 1},
    {"\"\xed\xa0\x80\"", 0, "invalid UTF-8", 1},
    {"\"\xff\"", 0, "invalid UTF-8", 1},
    {"01", 0, "trailing garbage", 1},
    {"-", 0, "bad number", 0},
    {"1.", 0, "bad number", 0},
    {"1e", 0, "bad number", 0},
    {"+1", 0, "unexpected character", 0},
    {"1e999", 0, "number out of range", 0},
    {"[-1e99999]", 0, "number out of range", 1},
    {"12345678901234567890123456789012345678901234567890123456789012345", 0, "number too long", 0},
    {"[1]\0", 4, "trailing garbage", 3},
};

Test(json, malformed_corpus)
{
    for (size_t i = 0; i < sizeof corpus / sizeof corpus[0]; i++) {
        const struct bad *b = &corpus[i];
        nsc_json_doc doc;
        nsc_json_error err;
        size_t len = b->len ? b->len : strlen(b->in);
        cr_assert_eq(nsc_json_parse(b->in, len, NULL, &doc, &err), -1, "case %zu parsed", i);
        cr_expect_str_eq(err.msg, b->msg, "case %zu (%s)", i, b->in);
        cr_expect_eq(err.offset, b->offset, "case %zu (%s): offset %zu", i, b->in, err.offset);
        cr_assert_null(doc.nodes);
    }
}

Test(json, depth_limit)
{
    char deep[200];
    memset(deep, '[', 100);
    memset(deep + 100, ']', 100);
    nsc_json_doc doc;
    nsc_json_error err;
    cr_assert_eq(nsc_json_parse(deep, 200, NULL, &doc, &err), -1);
    cr_assert_str_eq(err.msg, "too deeply nested");
    cr_assert_eq(err.offset, 64, "the 65th '[' is at offset 64");
    nsc_json_limits lim = nsc_json_default_limits;
    lim.max_depth = 100;
    cr_assert_eq(nsc_json_parse(deep, 200, &lim, &doc, &err), 0, "%s", err.msg);
    cr_assert_eq(doc.nnodes, 100);
    nsc_json_free(&doc);
}

Test(json, size_and_node_limits)
{
    nsc_json_limits lim = nsc_json_default_limits;
    nsc_json_doc doc;
    nsc_json_error err;
    lim.max_bytes = 4;
    cr_assert_eq(nsc_json_parse("[1,2]", 5, &lim, &doc, &err), -1);
    cr_assert_str_eq(err.msg, "input too large");
    lim = nsc_json_default_limits;
    lim.max_nodes = 3;
    cr_assert_eq(nsc_json_parse("[1,2,3]", 7, &lim, &doc, &err), -1);
    cr_assert_str_eq(err.msg, "too many values");
    cr_assert_eq(err.offset, 5);
    cr_assert_eq(nsc_json_parse("[1,2]", 5, &lim, &doc, &err), 0);
    nsc_json_free(&doc);
}

/* nsc_json_escape's pieces, gathered: one call per run, so a long plain run
 * comes in one piece and the result equals the stdio writer's. */
typedef struct pieces {
    char text[256];
    size_t len, calls;
} pieces;

static void gather(void *arg, const char *p, size_t n)
{
    pieces *g = arg;
    cr_assert_lt(g->len + n, sizeof g->text);
    memcpy(g->text + g->len, p, n);
    g->len += n;
    g->text[g->len] = 0;
    g->calls++;
}

Test(json, escape_in_runs)
{
    pieces g = {.len = 0};
    nsc_json_escape("plain text\ttab\x1f" "end\"", NSC_JSON_CTL_SHORT, gather, &g);
    cr_assert_str_eq(g.text, "\"plain text\\ttab\\u001fend\\\"\"");
    /* quote, "plain text", \t, "tab", \u001f, "end", \", "", quote */
    cr_assert_eq(g.calls, 9);
    pieces e = {.len = 0};
    nsc_json_escape("", NSC_JSON_CTL_SHORT, gather, &e);
    cr_assert_str_eq(e.text, "\"\"");
    pieces u = {.len = 0};
    nsc_json_escape("a\nb\tc\\", NSC_JSON_CTL_UNICODE, gather, &u);
    cr_assert_str_eq(u.text, "\"a\\u000ab\\u0009c\\\\\"");
}
