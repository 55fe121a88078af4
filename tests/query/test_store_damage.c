/* test_store_damage.c: queries over a damaged store (qfixture.c's job).
 * A data block that does not decode costs that block only: every endpoint
 * still answers from the others and names the damaged one in its last line
 * (skipped_blocks: comm, rank, start, seq, what is wrong); damage in a part
 * of a block that a reader does not decode costs that reader nothing. A
 * branch page of the blocks' B-tree whose child pointers are garbage fails a
 * scan that reaches them with a precise error (the rank, and that the file
 * is damaged), never an empty one or one that blames the output. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "block.h"
#include "bytes.h"
#include "keys.h"
#include "qfixture.h"
#include "query.h"
#include "storeutil.h"

static char *dir;

static void setup(void)
{
    dir = nsc_tmp_store_dir();
    cr_assert(dir);
    cr_assert_eq(qf_fill(dir), 0);
}

static void teardown(void) { nsc_tmp_store_remove(dir); }

TestSuite(store_damage, .init = setup, .fini = teardown);

/* The key of the first block of (QF_COMM, rank), its value copied to *val. */
static nsc_block_key first_block(int32_t rank, uint8_t **val, size_t *len)
{
    nsc_raw_db r;
    MDB_cursor *cur;
    MDB_val k, v;
    nsc_block_key key = {0};
    int found = 0;
    cr_assert_eq(nsc_raw_open(dir, "blocks", &r), 0);
    cr_assert_eq(mdb_cursor_open(r.txn, r.dbi, &cur), 0);
    /* stops on the block found: v is its value, not the next one's */
    for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        cr_assert_eq(nsc_key_block_parse(k.mv_data, k.mv_size, &key), 0);
        if ((found = key.comm == QF_COMM && key.rank == rank))
            break;
    }
    cr_assert(found, "no block of rank %d", rank);
    *len = v.mv_size;
    cr_assert_not_null(*val = malloc(v.mv_size));
    memcpy(*val, v.mv_data, v.mv_size);
    mdb_cursor_close(cur);
    cr_assert_eq(nsc_raw_close(&r), 0);
    return key;
}

static void put_block(const nsc_block_key *key, const void *val, size_t len)
{
    uint8_t k[NSC_KEY_BLOCK_LEN];
    nsc_key_block(k, key);
    cr_assert_eq(nsc_raw_put(dir, "blocks", k, sizeof k, val, len, 0), 0);
}

static nsc_store *open_ro(void)
{
    nsc_store_opts o = {.read_only = 1};
    nsc_store *st;
    cr_assert_eq(nsc_store_open(dir, &o, &st), 0);
    return st;
}

static unsigned count(const char *text, const char *what)
{
    unsigned n = 0;
    for (const char *p = text; (p = strstr(p, what)); p++)
        n++;
    return n;
}

/* Rank 1's block of the communicator no longer decodes (its magic is gone):
 * before, the timeline failed whole ("stored value failed to decode") and
 * collectives said "the output was closed". */
Test(store_damage, damaged_block_is_skipped_and_named)
{
    uint8_t *val;
    size_t len;
    nsc_block_key key = first_block(1, &val, &len);
    val[0] ^= 0xff;
    put_block(&key, val, len);
    free(val);
    char named[160];
    snprintf(named, sizeof named,
             "\"skipped_blocks\":[{\"comm\":\"0x%llx\",\"rank\":1,\"start_ns\":%llu,\"seq\":%u,\"error\":\"",
             (unsigned long long)QF_COMM, (unsigned long long)key.start_ns, key.seq);
    nsc_store *st = open_ro();
    char qs[64];
    snprintf(qs, sizeof qs, "job=jobA&comm=0x%llx", (unsigned long long)QF_COMM);
    static const char *const endpoints[] = {"timeline", "collectives", "stats", "p2p", "topology"};
    for (size_t e = 0; e < sizeof endpoints / sizeof *endpoints; e++) {
        qf_result r = qf_run(st, endpoints[e], qs);
        cr_assert_eq(r.rc, 0, "%s: %d %s", endpoints[e], r.rc, r.err);
        if (e < 2 || strstr(r.text, "skipped_blocks"))  /* topology reads a rank's first blocks only */
            cr_assert_eq(count(r.text, named), 1, "%s does not name the block once: %s", endpoints[e], r.text);
        if (e == 0) {  /* the other ranks' events are all there, rank 1's are not */
            cr_assert_eq(count(r.text, "\"kind\":\"event\""), (QF_RANKS - 1) * QF_COLLS * QF_EVENTS_PER_COLL, "%s", r.text);
            cr_assert_eq(count(r.text, "\"rank\":1,\"pid\""), 0);
        }
        if (e == 1)  /* every collective still matched across the others */
            cr_assert_eq(count(r.text, "\"ranks_seen\":3"), QF_COLLS, "%s", r.text);
        qf_result_free(&r);
    }
    /* a rank without damage answers as before, with nothing skipped */
    snprintf(qs, sizeof qs, "job=jobA&comm=0x%llx&rank=2", (unsigned long long)QF_COMM);
    qf_result r = qf_run(st, "timeline", qs);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert_eq(count(r.text, "skipped_blocks"), 0);
    cr_assert_eq(count(r.text, "\"kind\":\"event\""), QF_COLLS * QF_EVENTS_PER_COLL);
    qf_result_free(&r);
    nsc_store_close(st);
}

/* The block val, its last column (the completions' times) cut short: its last
 * varint says more bytes follow. Stored uncompressed, so that the damage is
 * where it is put; a decoder that reads that column fails on it. */
static uint8_t *cut_completions(const uint8_t *val, size_t len, size_t *out_len)
{
    size_t raw_len = nsc_get_be32(val + 24);
    uint8_t *out = malloc(NSC_BLOCK_HDR_LEN + raw_len);
    cr_assert_not_null(out);
    memcpy(out, val, NSC_BLOCK_HDR_LEN);
    if (nsc_get_be32(val + 4) == 0)  /* raw already */
        memcpy(out + NSC_BLOCK_HDR_LEN, val + NSC_BLOCK_HDR_LEN, raw_len);
    else
        cr_assert_eq(ZSTD_decompress(out + NSC_BLOCK_HDR_LEN, raw_len, val + NSC_BLOCK_HDR_LEN,
                                     len - NSC_BLOCK_HDR_LEN), raw_len);
    nsc_put_be32(out + 4, 0);
    out[NSC_BLOCK_HDR_LEN + raw_len - 1] |= 0x80;
    *out_len = NSC_BLOCK_HDR_LEN + raw_len;
    return out;
}

/* The answer of endpoint to qs on the store, its text copied. */
static char *answer(const char *endpoint, const char *qs)
{
    nsc_store *st = open_ro();
    qf_result r = qf_run(st, endpoint, qs);
    cr_assert_eq(r.rc, 0, "%s: %d %s", endpoint, r.rc, r.err);
    char *text = strdup(r.text);
    cr_assert_not_null(text);
    qf_result_free(&r);
    nsc_store_close(st);
    return text;
}

/* Rank 2's block holds its completions, now damaged: the readers of the
 * events only (p2p, topology: every root-cause pass runs them) answer as
 * before, byte for byte, for they decode no completions nor states (before,
 * they decoded both and skipped the block); collectives, which reads the
 * completions, still names the block. */
Test(store_damage, damaged_completions_cost_nothing_to_readers_of_events)
{
    static const char *const readers[] = {"p2p", "topology"};
    enum { NREADERS = sizeof readers / sizeof *readers };
    char qs[64], *before[NREADERS];
    snprintf(qs, sizeof qs, "job=jobA&comm=0x%llx", (unsigned long long)QF_COMM);
    for (size_t e = 0; e < NREADERS; e++)
        before[e] = answer(readers[e], qs);
    uint8_t *val, *cut;
    size_t len, cut_len;
    nsc_block_key key = first_block(2, &val, &len);
    cr_assert_gt(nsc_get_be32(val + 20), 0, "rank 2's block has no completions");
    cut = cut_completions(val, len, &cut_len);
    put_block(&key, cut, cut_len);
    free(cut);
    free(val);
    for (size_t e = 0; e < NREADERS; e++) {
        char *after = answer(readers[e], qs);
        cr_assert_str_eq(after, before[e], "%s", readers[e]);
        free(after);
        free(before[e]);
    }
    char *colls = answer("collectives", qs);
    cr_assert(strstr(colls, "\"skipped_blocks\":[{") && strstr(colls, "\"rank\":2,\"start_ns\""), "%s", colls);
    free(colls);
}

/* The blocks' B-tree: its root page number, and the page size. */
static uint64_t blocks_root(size_t *psize, unsigned *depth)
{
    nsc_raw_db r;
    MDB_val k = {6, "blocks"}, v;
    MDB_stat ms;
    cr_assert_eq(nsc_raw_open(dir, NULL, &r), 0);
    cr_assert_eq(mdb_get(r.txn, r.dbi, &k, &v), 0);
    cr_assert_eq(v.mv_size, 48, "an LMDB database record");
    uint16_t d;
    uint64_t root;
    memcpy(&d, (const uint8_t *)v.mv_data + 6, sizeof d);       /* md_depth */
    memcpy(&root, (const uint8_t *)v.mv_data + 40, sizeof root); /* md_root */
    cr_assert_eq(mdb_env_stat(r.env, &ms), 0);
    *psize = ms.ms_psize;
    *depth = d;
    cr_assert_eq(nsc_raw_close(&r), 0);
    return root;
}

#define P_BRANCH 0x01
#define P_LEAF 0x02

/* Page pgno of the file: its flags, and the child pointers of a branch. */
static void read_page(int fd, size_t psize, uint64_t pgno, uint8_t *page)
{
    cr_assert_eq(pread(fd, page, psize, (off_t)(pgno * psize)), (ssize_t)psize);
}

static uint64_t child(const uint8_t *page, unsigned i)
{
    uint16_t at, lo, hi, fl;
    memcpy(&at, page + 16 + 2 * i, 2);
    memcpy(&lo, page + at, 2);
    memcpy(&hi, page + at + 2, 2);
    memcpy(&fl, page + at + 4, 2);
    return lo | (uint64_t)hi << 16 | (uint64_t)fl << 32;
}

/* Rank 0 gets 400 more blocks (copies of its own) after its first, so that
 * its scan runs over many leaves; then the lowest branch page on the way to
 * the first leaf gets garbage for every child pointer but the first: a scan
 * of rank 0 starts well and fails when it steps to the second leaf. */
Test(store_damage, damaged_branch_page_is_a_precise_error)
{
    uint8_t *val;
    size_t len;
    nsc_block_key key = first_block(0, &val, &len);
    for (uint32_t i = 1; i <= 400; i++) {
        nsc_block_key more = key;
        more.start_ns += i;
        more.seq = 100000 + i;
        put_block(&more, val, len);
    }
    free(val);
    size_t psize;
    unsigned depth;
    uint64_t pgno = blocks_root(&psize, &depth);
    cr_assert_geq(depth, 2, "the blocks fit in one page");
    char path[512];
    snprintf(path, sizeof path, "%s/data.mdb", dir);
    int fd = open(path, O_RDWR);
    cr_assert_geq(fd, 0);
    uint8_t *page = malloc(psize);
    cr_assert_not_null(page);
    for (unsigned level = 1; level < depth - 1; level++) {  /* down the leftmost branches */
        read_page(fd, psize, pgno, page);
        pgno = child(page, 0);
    }
    read_page(fd, psize, pgno, page);
    uint16_t flags, lower;
    memcpy(&flags, page + 10, 2);
    memcpy(&lower, page + 12, 2);
    cr_assert_eq(flags & (P_BRANCH | P_LEAF), P_BRANCH);
    unsigned n = (lower - 16u) / 2;
    cr_assert_geq(n, 2);
    for (unsigned i = 1; i < n; i++) {
        uint16_t at;
        memcpy(&at, page + 16 + 2 * i, 2);
        memset(page + at, 0xff, 6);  /* the child's page number: past the end */
    }
    cr_assert_eq(pwrite(fd, page, psize, (off_t)(pgno * psize)), (ssize_t)psize);
    close(fd);
    free(page);

    nsc_store *st = open_ro();
    char qs[64];
    snprintf(qs, sizeof qs, "job=jobA&comm=0x%llx&rank=0", (unsigned long long)QF_COMM);
    static const char *const endpoints[] = {"collectives", "stats", "timeline"};
    for (size_t e = 0; e < sizeof endpoints / sizeof *endpoints; e++) {
        qf_result r = qf_run(st, endpoints[e], qs);
        cr_assert_eq(r.rc, NSC_QUERY_ESTORE, "%s: %d (%s)", endpoints[e], r.rc, r.err);
        cr_assert(strstr(r.err, "rank 0") && strstr(r.err, "the store's file is damaged"), "%s: \"%s\"",
                  endpoints[e], r.err);
        cr_assert_eq(nsc_query_http_status(r.rc), 500);
        qf_result_free(&r);
    }
    nsc_store_close(st);
}
