/* test_escape.c: peer strings in a Prometheus label value (common/prom.c) and
 * in a log line (common/logsafe.c) can neither end their label or line nor
 * carry bytes the format forbids: a forged series or log line stays inside
 * its value, invalid UTF-8 is replaced, values too long are cut cleanly. */
#include <criterion/criterion.h>
#include <event2/buffer.h>
#include <string.h>

#include "logsafe.h"
#include "prom.h"

#define FORGED "x\"} 1\nncclscope_injected_total 42\n"

Test(escape, prom_label_values)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"node-0", "node-0"},
        {FORGED, "x\\\"} 1\\nncclscope_injected_total 42\\n"},
        {"back\\slash", "back\\\\slash"},
        {"tab\there\r\x1b[2J\x7f", "tab?here??[2J?"},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
        {"bad\xc3", "bad?"},                   /* a lead byte with nothing after it */
        {"\xc0\xaf", "??"},                     /* overlong '/' */
        {"\xed\xa0\x80", "???"},                /* a surrogate */
        {"\xf4\x90\x80\x80", "????"},           /* above U+10FFFF */
        {"\xff\xfe", "??"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[128];
        size_t n = nsc_prom_escape(out, sizeof out, cases[i].in);
        cr_assert_str_eq(out, cases[i].out, "case %zu", i);
        cr_assert_eq(n, strlen(cases[i].out));
        struct evbuffer *b = evbuffer_new();
        nsc_prom_label(b, cases[i].in);
        size_t len = evbuffer_get_length(b);
        cr_assert_eq(len, n, "case %zu: the evbuffer form differs", i);
        cr_assert(memcmp(evbuffer_pullup(b, -1), out, n) == 0, "case %zu", i);
        evbuffer_free(b);
    }
}

Test(escape, prom_cut_at_a_character)
{
    char out[6];
    cr_assert_eq(nsc_prom_escape(out, sizeof out, "ab\xe2\x82\xac"), 5);  /* the euro just fits */
    cr_assert_eq(nsc_prom_escape(out, sizeof out, "abc\xe2\x82\xac"), 3);  /* not half of it */
    cr_assert_str_eq(out, "abc");
    cr_assert_eq(nsc_prom_escape(out, sizeof out, "abc\"d"), 5);
    cr_assert_str_eq(out, "abc\\\"");
    cr_assert_eq(nsc_prom_escape(out, sizeof out, "abcd\""), 4);  /* never half an escape */
    cr_assert_str_eq(out, "abcd");
    cr_assert_eq(nsc_prom_escape(out, 1, "abc"), 0);
}

Test(escape, log_fields)
{
    char out[NSC_LOGSAFE_ID];
    cr_assert_str_eq(nsc_logsafe(out, sizeof out, "node0-agent"), "node0-agent");
    cr_assert_str_eq(nsc_logsafe(out, sizeof out, FORGED),
                     "x\"} 1\\x0ancclscope_injected_total 42\\x0a");
    cr_assert_str_eq(nsc_logsafe(out, sizeof out, "a'b\\c\x1b\xc3\xa9"), "a'b\\x5cc\\x1b\\xc3\\xa9");
    cr_assert_eq(strchr(nsc_logsafe(out, sizeof out, FORGED), '\n'), NULL);
    char id[64];  /* every byte escaped still fits whole */
    memset(id, '\n', sizeof id - 1);
    id[63] = 0;
    cr_assert_eq(strlen(nsc_logsafe(out, sizeof out, id)), 4 * 63);
}

Test(escape, log_cut_says_so)
{
    char out[8];
    cr_assert_str_eq(nsc_logsafe(out, sizeof out, "abcdefg"), "abcdefg");  /* fits exactly */
    cr_assert_str_eq(nsc_logsafe(out, sizeof out, "abcdefgh"), "abcd...");
    cr_assert_str_eq(nsc_logsafe(out, sizeof out, "ab\ncdefgh"), "ab...");  /* not half an escape */
    cr_assert_str_eq(nsc_logsafe(out, 4, "abcdef"), "...");
}
