/* test_cli.c: the CLI's parsers and encoder: arguments, URLs, NDJSON and
 * server-sent-event readers (including malformed input), the flat-object
 * scanner against the generic reader, member lookup by name, protobuf varints. */
#include <criterion/criterion.h>
#include <string.h>

#include "args.h"
#include "fields.h"
#include "flat_check.h"
#include "http.h"
#include "pb.h"
#include "stream.h"
#include "units.h"

static const nsc_cli_opt global[] = {{"json", NULL, ""}, {"collector", "URL", ""}, {"help", NULL, ""}, {NULL, NULL, NULL}};
static const nsc_cli_opt verb[] = {{"comm", "ID", ""}, {"output", "FILE", ""}, {NULL, NULL, NULL}};
static const nsc_cli_opt *verb_opts(const char *v) { return strcmp(v, "export") == 0 ? verb : NULL; }

Test(args, options_before_and_after_the_verb)
{
    char *argv[] = {"ncclscope", "--json", "export", "--comm=0x1f", "-o", "f.pftrace", "--collector", "http://h:1"};
    nsc_cli_args a;
    char err[128];
    cr_assert_eq(nsc_cli_parse(8, argv, global, verb_opts, &a, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(a.verb, "export");
    cr_assert(nsc_cli_has(&a, "json"));
    cr_assert_str_eq(nsc_cli_get(&a, "comm"), "0x1f");
    cr_assert_str_eq(nsc_cli_get(&a, "output"), "f.pftrace");
    cr_assert_str_eq(nsc_cli_get(&a, "collector"), "http://h:1");
}

Test(args, rejects_what_it_does_not_know)
{
    nsc_cli_args a;
    char err[128];
    char *bad_verb[] = {"ncclscope", "frobnicate"};
    cr_assert_eq(nsc_cli_parse(2, bad_verb, global, verb_opts, &a, err, sizeof err), -1);
    cr_assert(strstr(err, "unknown command 'frobnicate'"));
    char *bad_opt[] = {"ncclscope", "export", "--nope"};
    cr_assert_eq(nsc_cli_parse(3, bad_opt, global, verb_opts, &a, err, sizeof err), -1);
    cr_assert(strstr(err, "unknown option --nope for export"));
    char *no_value[] = {"ncclscope", "export", "--comm"};
    cr_assert_eq(nsc_cli_parse(3, no_value, global, verb_opts, &a, err, sizeof err), -1);
    cr_assert(strstr(err, "needs a value"));
    char *switch_value[] = {"ncclscope", "--json=1", "export"};
    cr_assert_eq(nsc_cli_parse(3, switch_value, global, verb_opts, &a, err, sizeof err), -1);
}

Test(http, urls)
{
    nsc_http_url u;
    char err[128];
    cr_assert_eq(nsc_http_parse_url("http://10.0.0.1:7761/scope/", &u, err, sizeof err), 0);
    cr_assert_str_eq(u.host, "10.0.0.1");
    cr_assert_str_eq(u.port, "7761");
    cr_assert_str_eq(u.base, "/scope");
    cr_assert_eq(nsc_http_parse_url("http://collector", &u, err, sizeof err), 0);
    cr_assert_str_eq(u.port, "80");
    cr_assert_eq(u.tls, 0);
    cr_assert_eq(nsc_http_parse_url("https://x", &u, err, sizeof err), 0);
    cr_assert_eq(u.tls, 1);
    cr_assert_str_eq(u.port, "443");
    cr_assert_eq(nsc_http_parse_url("ftp://x", &u, err, sizeof err), -1);
    cr_assert_eq(nsc_http_parse_url("http://:80", &u, err, sizeof err), -1);
    cr_assert_eq(nsc_http_parse_url("http://h:7a", &u, err, sizeof err), -1);
    cr_assert_eq(nsc_http_parse_url("http://h:", &u, err, sizeof err), -1);
}

typedef struct seen {
    int n;
    uint64_t sum;
} seen;

static int count_values(void *arg, const nsc_json *v, const char *line, size_t len)
{
    seen *s = arg;
    uint64_t x;
    cr_assert_gt(len, 0);
    cr_assert_eq(line[0], '{');
    cr_assert_eq(nsc_json_u64(nsc_json_get(v, "x"), &x), 0);
    s->n++;
    s->sum += x;
    return 0;
}

Test(ndjson, lines_split_anywhere)
{
    const char *body = "{\"x\":1}\n\n{\"x\":20}\r\n{\"x\":300}";
    for (size_t cut = 0; cut <= strlen(body); cut++) {
        seen s = {0};
        nsc_ndjson r;
        nsc_ndjson_init(&r, count_values, &s);
        cr_assert_eq(nsc_ndjson_feed(&r, body, cut), 0);
        cr_assert_eq(nsc_ndjson_feed(&r, body + cut, strlen(body) - cut), 0);
        cr_assert_eq(nsc_ndjson_end(&r), 0);
        cr_assert_eq(s.n, 3);
        cr_assert_eq(s.sum, 321);
        nsc_ndjson_free(&r);
    }
}

Test(ndjson, malformed)
{
    seen s = {0};
    nsc_ndjson r;
    nsc_ndjson_init(&r, count_values, &s);
    cr_assert_eq(nsc_ndjson_feed(&r, "{\"x\":1}\n{\"x\":\n", 14), 1);
    cr_assert(strstr(r.err, "bad JSON in line 2"), "%s", r.err);
    cr_assert_eq(s.n, 1);
    nsc_ndjson_free(&r);

    nsc_ndjson_init(&r, count_values, &s);
    static char big[1 << 16];
    memset(big, ' ', sizeof big);
    int rc = 0;
    for (int i = 0; i < 80 && rc == 0; i++)  /* 5 MiB without a newline */
        rc = nsc_ndjson_feed(&r, big, sizeof big);
    cr_assert_eq(rc, 1);
    cr_assert(strstr(r.err, "longer than"), "%s", r.err);
    nsc_ndjson_free(&r);
}

static const char *const flat_lines[] = {
    "{\"kind\":\"event\",\"type\":\"Coll\",\"rank\":3,\"pid\":1003,\"tid\":1,\"id\":7,\"parent\":0,"
    "\"start_ns\":1000000000,\"stop_ns\":1000002000,\"err_ns\":0,\"flags\":[\"graph\",\"open\"],\"seq\":0,"
    "\"func\":\"AllReduce\",\"datatype\":\"ncclFloat32\",\"count\":1048576,\"root\":-1,\"algo\":\"RING\","
    "\"complete_ns\":null,\"states\":[]}",
    "{}", "{\"\":\"\"}", "{\"a\":true,\"b\":false,\"c\":null,\"d\":-0,\"e\":18446744073709551615}",
    "{\"a\":[1,-2,\"x\",true,null],\"a\":[]}", "{\"kind\":\"end\",\"events\":3,\"next_cursor\":\"9.1.2\"}",
    "{\"a\":{\"b\":1}}", "{\"a\":{}}", "{\"a\":[[1]]}", "{\"a\":[{}]}", "{\"a\":[[]]}", "{\"a\":{\"b\":[]}}", "{\"a\":{\"b\":{}}}",
    "{\"a\":[{\"x\":1},[2,\"y\"],{\"\":null}],\"b\":{\"c\":[true],\"d\":{}}}"};

/* An event with states, as the timeline writes it (docs/api.md). */
static const char states_line[] =
    "{\"kind\":\"event\",\"type\":\"ProxyStep\",\"rank\":0,\"pid\":4242,\"tid\":1001,\"id\":21,\"parent\":19,"
    "\"start_ns\":5000001000,\"stop_ns\":5000001500,\"err_ns\":1200,\"flags\":[],\"step\":3,"
    "\"states\":[{\"state\":\"ProxyStepSendGPUWait\",\"ts_ns\":5000001100,\"arg\":0},"
    "{\"state\":\"ProxyStepSendWait\",\"ts_ns\":5000001400,\"arg\":-7}]}";

Test(flat, reads_what_the_generic_reader_reads)
{
    nsc_flat f = {0};
    for (size_t i = 0; i < sizeof flat_lines / sizeof flat_lines[0]; i++)
        cr_assert_eq(flat_check(&f, flat_lines[i], strlen(flat_lines[i])), 1, "%s", flat_lines[i]);
    nsc_flat_free(&f);
}

Test(flat, declines_everything_else)
{
    static const char *const lines[] = {
        "", "{", "}", "[1]", "{ \"a\":1}", "{\"a\": 1}", "{\"a\":1 }", "{\"a\":\"x\\\"y\"}",
        "{\"a\":1.5}", "{\"a\":1e3}",
        "{\"a\":01}", "{\"a\":-}", "{\"a\":\"\xc3\xa9\"}", "{\"a\":\"\x01\"}", "{\"a\":1", "{\"a\":\"x",
        "{\"a\":1}x", "{\"a\"1}", "{\"a\":tru}", "{\"a\":truex}", "{\"a\":1,}", "{,}", "{\"a\":[1,]}",
        "{\"a\":[1", "{\"a\":[1]", "{\"a\"", "{\"a\":",
        "{\"a\":12345678901234567890123456789012345678901234567890123456789012345}",
        /* deeper than NSC_FLAT_DEPTH, though good JSON */
        "{\"a\":[{\"b\":[1]}]}", "{\"a\":{\"b\":{\"c\":{}}}}", "{\"a\":[[[]]]}", "{\"a\":[{\"b\":{\"c\":1}}]}",
        /* malformed arrays and objects inside */
        "{\"s\":[{\"x\":1},]}", "{\"s\":[{\"x\":1}", "{\"s\":[{\"x\":1]}", "{\"s\":[{\"x\"}]}",
        "{\"s\":[{1:2}]}", "{\"s\":[{\"x\":1}}", "{\"s\":[{\"x\":1}{\"y\":2}]}", "{\"s\":[{}],}",
        "{\"s\":[\"x\":1]}", "{\"s\":{1,2}}", "{\"s\":[{\"x\":1,}]}", "{\"s\":[{,}]}", "{\"s\":[{\"x\":[}]}",
        "{\"s\":[{\"x\":1} ]}", "{\"s\":[ {\"x\":1}]}", "{\"s\":[{\"x\":1}]}}", "{\"s\":{\"x\":1}]}"};
    nsc_flat f = {0};
    const nsc_json *root;
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
        cr_assert_eq(nsc_flat_scan(&f, lines[i], strlen(lines[i]), &root), NSC_FLAT_DECLINED, "%s", lines[i]);
    /* Every prefix of a good line is declined or read as the generic reader reads it. */
    for (size_t n = 0; n <= strlen(flat_lines[0]); n++)
        cr_assert_neq(flat_check(&f, flat_lines[0], n), -1, "prefix %zu", n);
    nsc_flat_free(&f);
}

Test(flat, states_line_in_one_pass_and_its_prefixes_and_mutations)
{
    nsc_flat f = {0};
    size_t len = strlen(states_line);
    const nsc_json *root;
    cr_assert_eq(flat_check(&f, states_line, len), 1);
    cr_assert_eq(nsc_flat_scan(&f, states_line, len, &root), NSC_FLAT_OK);
    const nsc_json *states = nsc_json_get(root, "states");
    cr_assert_eq(states->count, 2);
    cr_assert_str_eq(nsc_json_str(nsc_json_get(nsc_json_at(states, 1), "state")), "ProxyStepSendWait");
    int64_t arg;
    cr_assert_eq(nsc_json_i64(nsc_json_get(nsc_json_at(states, 1), "arg"), &arg), 0);
    cr_assert_eq(arg, -7);
    /* No proper prefix is JSON: each must be declined. */
    for (size_t n = 0; n < len; n++)
        cr_assert_eq(flat_check(&f, states_line, n), 0, "prefix %zu", n);
    /* Any one byte changed: declined, or read exactly as the generic reader reads it. */
    static const char bytes[] = "{}[],:\"0-a \\.";
    char line[sizeof states_line];
    for (size_t i = 0; i < len; i++)
        for (const char *b = bytes; *b; b++) {
            memcpy(line, states_line, sizeof line);
            line[i] = *b;
            cr_assert_neq(flat_check(&f, line, len), -1, "byte %zu -> '%c'", i, *b);
        }
    nsc_flat_free(&f);
}

Test(ndjson, declined_lines_still_read_or_rejected)
{
    seen s = {0};
    nsc_ndjson r;
    nsc_ndjson_init(&r, count_values, &s);
    const char *body = "{\"x\":1}\n{ \"x\" : 20 , \"s\":[{\"a\":1}] }\n{\"x\":01}\n";
    cr_assert_eq(nsc_ndjson_feed(&r, body, strlen(body)), 1);
    cr_assert_eq(s.n, 2);
    cr_assert_eq(s.sum, 21);
    cr_assert(strstr(r.err, "bad JSON in line 3"), "%s", r.err);
    nsc_ndjson_free(&r);
}

static const nsc_json *member(const nsc_json *obj, int i)
{
    const nsc_json *m = nsc_json_first(obj);
    while (m && i--)
        m = nsc_json_next(obj, m);
    cr_assert(m);
    return m;
}

Test(fields, first_member_of_each_name)
{
    static const char *const names[] = {"kind", "rank", "start_ns", "complete_ns", "stop_ns", "type"};
    nsc_fields k;
    nsc_fields_init(&k, names, 6);
    nsc_json_doc doc;
    nsc_json_error e;
    const char *line = "{\"rank\":1,\"x\":2,\"stop_ns\":3,\"rank\":4,\"ran\":5,\"rank\\u0000\":6}";
    cr_assert_eq(nsc_json_parse(line, strlen(line), NULL, &doc, &e), 0);
    const nsc_json *out[6];
    nsc_fields_pick(&k, nsc_json_root(&doc), out);
    cr_assert_eq(out[1], nsc_json_get(nsc_json_root(&doc), "rank"));
    cr_assert_eq(out[4], nsc_json_get(nsc_json_root(&doc), "stop_ns"));
    cr_assert(!out[0] && !out[2] && !out[3] && !out[5]);
    cr_assert_eq(nsc_fields_id(&k, member(nsc_json_root(&doc), 3)), 1);  /* the second "rank" */
    cr_assert_eq(nsc_fields_id(&k, member(nsc_json_root(&doc), 4)), -1); /* "ran" */
    cr_assert_eq(nsc_fields_id(&k, member(nsc_json_root(&doc), 5)), -1); /* "rank\0" */
    nsc_fields_pick(&k, member(nsc_json_root(&doc), 0), out);             /* not an object */
    cr_assert(!out[0] && !out[1]);
    nsc_json_free(&doc);
}

typedef struct events {
    int n;
    char last_event[32], last_data[64];
} events;

static int on_sse(void *arg, const char *event, const char *data)
{
    events *e = arg;
    e->n++;
    snprintf(e->last_event, sizeof e->last_event, "%s", event);
    snprintf(e->last_data, sizeof e->last_data, "%s", data);
    return 0;
}

Test(sse, events_comments_and_multiline_data)
{
    const char *body = ": keep-alive\n\nevent: summary\ndata: {\"a\":1}\n\ndata: x\ndata: y\r\n\r\nevent: summary\ndata";
    events e = {0};
    nsc_sse s;
    nsc_sse_init(&s, on_sse, &e);
    cr_assert_eq(nsc_sse_feed(&s, body, strlen(body)), 0);
    cr_assert_eq(e.n, 2);
    cr_assert_str_eq(e.last_event, "message");
    cr_assert_str_eq(e.last_data, "x\ny");
    nsc_sse_free(&s);
}

Test(pb, varints_and_nesting)
{
    nsc_pb b = {0}, sub = {0};
    nsc_pb_uint(&b, 1, 150);       /* 08 96 01 */
    nsc_pb_int(&b, 4, -1);         /* 20 ff*9 01 */
    nsc_pb_str(&sub, 2, "ab");     /* 12 02 61 62 */
    nsc_pb_msg(&b, 60, &sub);      /* e2 03 04 ... */
    const unsigned char want[] = {0x08, 0x96, 0x01, 0x20, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                  0xff, 0xff, 0x01, 0xe2, 0x03, 0x04, 0x12, 0x02, 'a', 'b'};
    cr_assert(nsc_pb_ok(&b));
    cr_assert_eq(b.len, sizeof want);
    cr_assert_arr_eq(b.data, want, sizeof want);
    nsc_pb_free(&b);
    nsc_pb_free(&sub);
}

/* Units for people: a member's unit from its name, three significant digits,
 * instants as UTC when the wall clock is known. */
Test(units, formats)
{
    static const nsc_units plain = {0}, wall = {0, 1, 1795887000000000000ll - 1000000000000ll};
    char b[64];
    cr_assert_eq(nsc_unit_of("duration_ns", 11), NSC_UNIT_NS);
    cr_assert_eq(nsc_unit_of("wait_ns_max", 11), NSC_UNIT_NS);
    cr_assert_eq(nsc_unit_of("start_ns", 8), NSC_UNIT_INSTANT);
    cr_assert_eq(nsc_unit_of("bytes_max", 9), NSC_UNIT_BYTES);
    cr_assert_eq(nsc_unit_of("busbw_gbps", 10), NSC_UNIT_GBPS);
    cr_assert_eq(nsc_unit_of("seq", 3), NSC_UNIT_NONE);
    static const struct {
        nsc_unit u;
        double v;
        const char *want;
    } cases[] = {{NSC_UNIT_NS, 812, "812 ns"},        {NSC_UNIT_NS, 4694384, "4.69 ms"},
                 {NSC_UNIT_NS, 75700, "75.7 us"},     {NSC_UNIT_NS, 1.5e9, "1.50 s"},
                 {NSC_UNIT_BYTES, 512, "512 B"},      {NSC_UNIT_BYTES, 4194304, "4.00 MiB"},
                 {NSC_UNIT_BYTES, 1536, "1.50 KiB"},  {NSC_UNIT_GBPS, 12.34, "12.3 GB/s"},
                 {NSC_UNIT_INSTANT, 1216282087127.0, "1216.282087 s"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        nsc_fmt_unit(&plain, cases[i].u, cases[i].v, b, sizeof b);
        cr_assert_str_eq(b, cases[i].want, "%g", cases[i].v);
    }
    nsc_fmt_unit(&wall, NSC_UNIT_INSTANT, 1000000000000.0 + 123456000, b, sizeof b);
    cr_assert_str_eq(b, "2026-11-28T17:30:00.123456Z");
}

/* Times a person types: what parses, and what is refused. */
Test(units, parse_times)
{
    uint64_t ns;
    int64_t utc;
    cr_assert_eq(nsc_parse_span("5m", &ns), 0);
    cr_assert_eq(ns, 300000000000ull);
    cr_assert_eq(nsc_parse_span("250ms", &ns), 0);
    cr_assert_eq(ns, 250000000ull);
    cr_assert_eq(nsc_parse_span("1216282087127", &ns), 0);
    cr_assert_eq(ns, 1216282087127ull);
    cr_assert_eq(nsc_parse_span("1216.5s", &ns), 0);
    cr_assert_eq(ns, 1216500000000ull);
    static const char *const bad_spans[] = {"", "5x", "-5", "m", "1e400", "5 m", "nan", "9999999999d"};
    for (size_t i = 0; i < sizeof bad_spans / sizeof bad_spans[0]; i++)
        cr_assert_eq(nsc_parse_span(bad_spans[i], &ns), -1, "%s", bad_spans[i]);
    cr_assert_eq(nsc_parse_utc("2026-11-28T17:30:00Z", &utc), 0);
    cr_assert_eq(utc, 1795887000000000000ll);
    cr_assert_eq(nsc_parse_utc("2026-11-28T17:30:00.25+00:00", &utc), 0);
    cr_assert_eq(utc, 1795887000250000000ll);
    static const char *const bad_utc[] = {"", "2026-11-28", "2026-11-28T17:30:00", "2026-11-28T17:30:00+01:00",
                                          "2026-13-01T00:00:00Z", "2026-11-28T17:30:00Zjunk", "9999-01-01T00:00:00Z",
                                          "5m"};
    for (size_t i = 0; i < sizeof bad_utc / sizeof bad_utc[0]; i++)
        cr_assert_eq(nsc_parse_utc(bad_utc[i], &utc), -1, "%s", bad_utc[i]);
}
