/* Unit tests for the clock probe datagram (common/uprobe.c): a request and
 * an answer round trip, a request is as large as its answer, and every
 * malformed datagram is refused with its reason. */
#include <criterion/criterion.h>
#include <string.h>

#include "uprobe.h"

static void same(const nsc_uprobe *a, const nsc_uprobe *b)
{
    cr_assert(a->kind == b->kind && a->id == b->id && a->token == b->token && a->t2 == b->t2 && a->t3 == b->t3);
}

Test(uprobe, round_trip)
{
    uint8_t buf[NSC_UPROBE_LEN];
    nsc_uprobe q = {.kind = NSC_UPROBE_REQUEST, .id = UINT64_MAX, .token = 0x0102030405060708ull}, d;
    nsc_uprobe_encode(&q, buf);
    cr_assert_eq(memcmp(buf, "NSCK\x01\x01\x00\x00\xff", 9), 0, "magic, version, kind, id big-endian");
    cr_assert_eq(nsc_uprobe_decode(buf, sizeof buf, NSC_UPROBE_REQUEST, &d), NSC_UPROBE_OK);
    same(&q, &d);
    nsc_uprobe a = {.kind = NSC_UPROBE_ANSWER, .id = 3, .token = 4, .t2 = 5, .t3 = 6};
    nsc_uprobe_encode(&a, buf);
    cr_assert_eq(nsc_uprobe_decode(buf, sizeof buf, NSC_UPROBE_ANSWER, &d), NSC_UPROBE_OK);
    same(&a, &d);
}

Test(uprobe, malformed_refused)
{
    uint8_t buf[NSC_UPROBE_LEN + 1] = {0}, bad[NSC_UPROBE_LEN];
    nsc_uprobe q = {.kind = NSC_UPROBE_REQUEST, .id = 1, .token = 2}, d;
    nsc_uprobe_encode(&q, buf);
    for (size_t n = 0; n <= sizeof buf; n++)
        if (n != NSC_UPROBE_LEN)
            cr_assert_eq(nsc_uprobe_decode(buf, n, NSC_UPROBE_REQUEST, &d), NSC_UPROBE_BAD_SIZE, "%zu bytes", n);
    struct { size_t at; uint8_t v; int kind, rc; } cases[] = {
        {0, 'X', NSC_UPROBE_REQUEST, NSC_UPROBE_BAD_MAGIC},
        {4, 2, NSC_UPROBE_REQUEST, NSC_UPROBE_BAD_VERSION},
        {5, 2, NSC_UPROBE_REQUEST, NSC_UPROBE_BAD_KIND},   /* an answer reflected at the port */
        {5, 3, NSC_UPROBE_REQUEST, NSC_UPROBE_BAD_KIND},
        {5, 3, 3, NSC_UPROBE_BAD_KIND},                    /* no such kind, even when asked for */
        {6, 1, NSC_UPROBE_REQUEST, NSC_UPROBE_BAD_FIELD},
        {7, 1, NSC_UPROBE_REQUEST, NSC_UPROBE_BAD_FIELD},
        {24, 1, NSC_UPROBE_REQUEST, NSC_UPROBE_BAD_FIELD}, /* a request's t2 */
        {39, 1, NSC_UPROBE_REQUEST, NSC_UPROBE_BAD_FIELD}, /* a request's t3 */
        {5, 1, NSC_UPROBE_ANSWER, NSC_UPROBE_BAD_KIND},    /* a request is no answer */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memcpy(bad, buf, sizeof bad);
        bad[cases[i].at] = cases[i].v;
        cr_assert_eq(nsc_uprobe_decode(bad, sizeof bad, (uint8_t)cases[i].kind, &d), cases[i].rc, "case %zu", i);
        cr_assert_eq(d.id, 0, "nothing decoded");
        cr_assert_str_neq(nsc_uprobe_strerror(cases[i].rc), "ok");
    }
}
