/* test_golden.c: bytes and text that must not change, compared with files a
 * known-good build recorded (tests/data/golden/, from main before the event
 * field table, common/event_fields.h): the sample batch of wire_samples.c
 * (every field of every event type distinct) on the wire, its events as an
 * uncompressed block, and the timeline over a store that holds them, as
 * JSON and compact, with states. A field moved, dropped or re-encoded in any
 * of them fails here. An intended format change records the files again:
 *   NSC_GOLDEN_WRITE=1 build/bin/test_golden   (then review the diff) */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block.h"
#include "query.h"
#include "storeutil.h"
#include "wire_samples.h"

#define COMM 0x601dull

/* Compare data with the golden file name, or write it when asked to. */
static void check(const char *name, const void *data, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", NSC_GOLDEN_DIR, name);
    if (getenv("NSC_GOLDEN_WRITE")) {
        FILE *f = fopen(path, "wb");
        cr_assert(f, "%s", path);
        cr_assert_eq(fwrite(data, 1, len, f), len);
        cr_assert_eq(fclose(f), 0);
        return;
    }
    FILE *f = fopen(path, "rb");
    cr_assert(f, "%s: missing", path);
    char *want = malloc(len + 1);
    size_t got = fread(want, 1, len + 1, f);
    fclose(f);
    size_t at = 0;
    while (at < len && at < got && ((const char *)data)[at] == want[at])
        at++;
    free(want);
    cr_assert(got == len && at == len, "%s: %zu bytes, golden %zu; first difference at byte %zu",
              name, len, got, at);
}

static uint8_t wire[64 << 10];

static size_t sample(nsc_batch *b)
{
    size_t n = sample_batch(wire, sizeof wire);
    cr_assert_gt(n, 0);
    cr_assert_eq(nsc_batch_decode(wire, n, NULL, b), 0);
    return n;
}

Test(golden, wire_batch)
{
    nsc_batch b;
    size_t n = sample(&b);
    check("wire.bin", wire, n);
    nsc_batch_release(&b);
}

/* The sample's events, with a P2pApi root set: no wire record carries one,
 * yet the block stores its column (docs/protocol.md, "Event fields"). */
Test(golden, block_raw)
{
    nsc_batch b;
    sample(&b);
    nsc_block_enc *e;
    cr_assert_eq(nsc_block_enc_new(0, &e), 0);
    nsc_block_begin(e, 5);
    /* Records of each kind in their order (the kinds are stored apart). */
    for (size_t i = 0; i < b.nevents || i < b.nstates || i < b.ncompletions; i++) {
        nsc_event *ev = i < b.nevents ? &b.events[i] : NULL;
        if (ev && ev->type == NSC_T_P2P_API)
            ev->d.coll_api.root = -9;
        cr_assert(!ev || nsc_block_add_event(e, ev) == 0);
        cr_assert(i >= b.nstates || nsc_block_add_state(e, &b.states[i]) == 0);
        cr_assert(i >= b.ncompletions || nsc_block_add_completion(e, &b.completions[i]) == 0);
    }
    const uint8_t *out;
    size_t len;
    cr_assert_eq(nsc_block_finish(e, &out, &len, NULL), 0);
    check("block.bin", out, len);
    nsc_block_enc_free(e);
    nsc_batch_release(&b);
}

static int append(void *arg, const void *data, size_t len)
{
    FILE *f = arg;
    return fwrite(data, 1, len, f) == len ? 0 : -1;
}

static void timeline(nsc_store *st, const char *qs, const char *name)
{
    nsc_query *q;
    nsc_store_reader *rd;
    char err[256], *text = NULL;
    size_t len = 0;
    cr_assert_eq(nsc_query_parse("timeline", qs, &q, err, sizeof err), 0, "%s", err);
    FILE *f = open_memstream(&text, &len);
    cr_assert(f);
    cr_assert_eq(nsc_store_read_begin(st, &rd), 0);
    cr_assert_eq(nsc_query_run(q, rd, append, f, err, sizeof err), 0, "%s", err);
    nsc_store_read_end(rd);
    cr_assert_eq(fclose(f), 0);
    check(name, text, len);
    free(text);
    nsc_query_free(q);
}

/* Every event in one communicator, its string ids all defined. */
Test(golden, timeline)
{
    static const nsc_str ids[] = {11, 12, 13, 14, 15, 21, 22, 51, 52, 53, 91, 101, UINT16_MAX};
    nsc_str_def strs[sizeof ids / sizeof *ids];
    for (size_t i = 0; i < sizeof ids / sizeof *ids; i++)
        sample_str(&strs[i], ids[i]);
    nsc_batch b;
    sample(&b);
    for (size_t i = 0; i < b.nevents; i++)
        b.events[i].ctx = 0;
    nsc_ctx_def ctx = nsc_test_ctx(0, COMM, 0, 1);
    nsc_store_batch sb = {&b.hdr.proc, &ctx, 1, strs, sizeof ids / sizeof *ids, b.events, b.nevents,
                          b.states, b.nstates, b.completions, b.ncompletions};
    char *dir;
    nsc_store *st = nsc_tmp_store_open(&dir);
    cr_assert_not_null(st);
    cr_assert_eq(nsc_store_begin(st, 1), 0);
    cr_assert_eq(nsc_store_put(st, &sb), 0);
    cr_assert_eq(nsc_store_commit(st), 0);
    timeline(st, "comm=0x601d", "timeline.ndjson");
    timeline(st, "comm=0x601d&format=compact&states=1", "timeline-compact-states.ndjson");
    timeline(st, "comm=0x601d&format=compact", "timeline-compact.ndjson");
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
    nsc_batch_release(&b);
}
