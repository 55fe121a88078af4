/* Unit tests for the spool: dense sequence numbers, exact accounting when the
 * cap refuses entries, persistence of both across a reopen, ordered reading,
 * the quarantine, the spool's epoch. */
#include <criterion/criterion.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spool.h"

static char dir[64];

static void make_dir(void)
{
    strcpy(dir, "/tmp/nsc-spool-test-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

typedef struct seen {
    uint64_t n, first, last, bytes, events;
    int in_order;
} seen;

static int count(void *arg, const nsc_spool_entry *e)
{
    seen *s = arg;
    if (s->n == 0)
        s->first = e->seq;
    else if (e->seq != s->last + 1)
        s->in_order = 0;
    cr_assert_eq(((const uint8_t *)e->msg)[0], (uint8_t)e->seq, "entry %llu holds what was stored",
                 (unsigned long long)e->seq);
    cr_assert_eq(e->tally.records, 2 * e->tally.events, "the tally stored beside the entry");
    s->last = e->seq;
    s->n++;
    s->bytes += e->len;
    s->events += e->tally.events;
    return 0;
}

Test(spool, cap_accounting_is_exact, .init = make_dir, .fini = remove_dir)
{
    nsc_spool *s;
    char err[128];
    uint8_t buf[1000];
    const uint64_t cap = 10 * 1000 + 500;  /* ten 1000-byte entries fit, the 11th does not */
    cr_assert_eq(nsc_spool_open(&s, dir, cap, err), 0, "%s", err);
    uint64_t stored = 0, refused = 0;
    for (unsigned i = 0; i < 25; i++) {
        memset(buf, (uint8_t)nsc_spool_next_seq(s), sizeof buf);
        nsc_spool_tally t = {.events = i, .records = 2 * i};
        int rc = nsc_spool_put(s, buf, i == 12 ? 400 : sizeof buf, &t, NULL, 0);
        cr_assert(rc == 0 || rc == 1);
        if (rc == 0)
            stored++;
        else
            refused++;
    }
    /* 10 x 1000 fit; then 1000 is refused until the 400-byte entry (i = 12) fits. */
    cr_assert_eq(stored, 11);
    cr_assert_eq(refused, 14);
    nsc_spool_stats st;
    nsc_spool_stats_get(s, &st);
    cr_assert_eq(st.entries, 11);
    cr_assert_eq(st.bytes, 10400);
    cr_assert_eq(st.next_seq, 11);
    cr_assert_eq(st.refused_entries, 14);
    cr_assert_eq(st.refused_bytes, 14000);
    uint64_t ev = 0;
    for (unsigned i = 10; i < 25; i++)
        ev += i == 12 ? 0 : i;
    cr_assert_eq(st.refused_events, ev);
    cr_assert_eq(st.refused_records, 2 * ev);
    cr_assert_eq(st.errors, 0);
    nsc_spool_close(s);

    /* Everything survives a reopen, and sequences continue densely. */
    cr_assert_eq(nsc_spool_open(&s, dir, cap, err), 0, "%s", err);
    nsc_spool_stats again;
    nsc_spool_stats_get(s, &again);
    cr_assert(memcmp(&st, &again, sizeof st) == 0);
    seen sn = {.in_order = 1};
    cr_assert_eq(nsc_spool_foreach(s, 0, count, &sn), 0);
    cr_assert_eq(sn.n, 11);
    cr_assert_eq(sn.first, 0);
    cr_assert_eq(sn.last, 10);
    cr_assert(sn.in_order);
    cr_assert_eq(sn.bytes, 10400);
    cr_assert_eq(sn.events, 0 + 1 + 2 + 3 + 4 + 5 + 6 + 7 + 8 + 9 + 12);
    seen tail = {.in_order = 1};
    nsc_spool_foreach(s, 7, count, &tail);
    cr_assert_eq(tail.n, 4);
    cr_assert_eq(tail.first, 7);
    nsc_spool_close(s);
}

Test(spool, bad_directory)
{
    nsc_spool *s;
    char err[128];
    cr_assert_eq(nsc_spool_open(&s, "/proc/nonexistent/spool", 1 << 20, err), -1);
    cr_assert_null(s);
    cr_assert_neq(err[0], 0);
}

/* Acknowledged entries leave in any order; absent ones are skipped; the freed
 * bytes make room under the cap; the sequence never goes back, even after a
 * reopen of an empty spool. */
Test(spool, delete_acknowledged, .init = make_dir, .fini = remove_dir)
{
    nsc_spool *s;
    char err[128];
    uint8_t buf[1000];
    cr_assert_eq(nsc_spool_open(&s, dir, 5000, err), 0, "%s", err);
    for (unsigned i = 0; i < 5; i++) {
        memset(buf, (uint8_t)i, sizeof buf);
        nsc_spool_tally t = {.events = 10 + i, .records = 2 * (10 + i)};
        cr_assert_eq(nsc_spool_put(s, buf, sizeof buf, &t, NULL, 0), 0);
    }
    nsc_spool_tally t = {1, 2};
    cr_assert_eq(nsc_spool_put(s, buf, sizeof buf, &t, NULL, 0), 1, "the cap is reached");
    uint64_t deleted = 0, acks[] = {3, 1, 99, 3};
    nsc_spool_tally gone = {0, 0};
    cr_assert_eq(nsc_spool_delete(s, acks, 4, &deleted, &gone), 0);
    cr_assert_eq(deleted, 2, "3 and 1; 99 was never stored and 3 is gone already");
    cr_assert_eq(gone.events, 13 + 11);
    cr_assert_eq(gone.records, 2 * (13 + 11));
    nsc_spool_stats st;
    nsc_spool_stats_get(s, &st);
    cr_assert_eq(st.entries, 3);
    cr_assert_eq(st.bytes, 3000);
    seen sn = {.in_order = 1};
    nsc_spool_foreach(s, 0, count, &sn);
    cr_assert_eq(sn.n, 3);
    cr_assert_eq(sn.events, 10 + 12 + 14);
    memset(buf, 5, sizeof buf);
    cr_assert_eq(nsc_spool_put(s, buf, sizeof buf, &t, NULL, 0), 0, "deleting made room");
    uint64_t rest[] = {0, 2, 4, 5};
    cr_assert_eq(nsc_spool_delete(s, rest, 4, &deleted, &gone), 0);
    cr_assert_eq(deleted, 6);
    nsc_spool_close(s);
    cr_assert_eq(nsc_spool_open(&s, dir, 5000, err), 0, "%s", err);
    nsc_spool_stats_get(s, &st);
    cr_assert_eq(st.entries, 0);
    cr_assert_eq(st.bytes, 0);
    cr_assert_eq(st.next_seq, 6, "an emptied spool keeps its next sequence");
    nsc_spool_close(s);
}

/* A quarantined entry leaves the spool (not read, not counted in its entries
 * and bytes, not deleted by an ack) for the quarantine, which counts it and
 * what it held, across a reopen; its seq is never reused. */
Test(spool, quarantine_moves_aside, .init = make_dir, .fini = remove_dir)
{
    nsc_spool *s;
    char err[128];
    uint8_t buf[100];
    cr_assert_eq(nsc_spool_open(&s, dir, 1 << 20, err), 0, "%s", err);
    for (unsigned i = 0; i < 4; i++) {
        memset(buf, (uint8_t)i, sizeof buf);
        nsc_spool_tally t = {.events = 10 + i, .records = 2 * (10 + i)};
        cr_assert_eq(nsc_spool_put(s, buf, sizeof buf - i, &t, NULL, 0), 0);
    }
    size_t len = 0;
    nsc_spool_tally t = {0, 0};
    cr_assert_eq(nsc_spool_quarantine(s, 3, &len, &t), 0);
    cr_assert_eq(len, 97);
    cr_assert_eq(t.events, 13);
    cr_assert_eq(t.records, 26);
    cr_assert_eq(nsc_spool_quarantine(s, 1, &len, &t), 0);
    cr_assert_eq(nsc_spool_quarantine(s, 1, &len, &t), 1, "gone already");
    cr_assert_eq(nsc_spool_quarantine(s, 99, &len, &t), 1, "never stored");
    uint64_t deleted = 0, acks[] = {1};
    nsc_spool_tally gone = {0, 0};
    cr_assert_eq(nsc_spool_delete(s, acks, 1, &deleted, &gone), 0);
    cr_assert_eq(deleted, 0, "an ack does not reach the quarantine");
    for (int reopen = 0; reopen < 2; reopen++) {
        nsc_spool_stats st;
        nsc_spool_stats_get(s, &st);
        cr_assert_eq(st.entries, 2);
        cr_assert_eq(st.bytes, 100 + 98);
        cr_assert_eq(st.quarantined_entries, 2);
        cr_assert_eq(st.quarantined_bytes, 99 + 97);
        cr_assert_eq(st.quarantined_events, 11 + 13);
        cr_assert_eq(st.quarantined_records, 22 + 26);
        cr_assert_eq(st.next_seq, 4, "seq 3 is not reused");
        seen sn = {.in_order = 1};
        nsc_spool_foreach(s, 0, count, &sn);
        cr_assert_eq(sn.n, 2);
        cr_assert_eq(sn.first, 0);
        cr_assert_eq(sn.last, 2);
        nsc_spool_close(s);
        cr_assert_eq(nsc_spool_open(&s, dir, 1 << 20, err), 0, "%s", err);
    }
    /* a spool holding only quarantined entries still starts after them */
    uint64_t rest[] = {0, 2};
    cr_assert_eq(nsc_spool_delete(s, rest, 2, &deleted, &gone), 0);
    nsc_spool_close(s);
    cr_assert_eq(nsc_spool_open(&s, dir, 1 << 20, err), 0, "%s", err);
    cr_assert_eq(nsc_spool_next_seq(s), 4);
    nsc_spool_close(s);
}

/* The epoch of a spool made in DIR/sub (removed again). */
static uint64_t epoch_of_new_spool(const char *sub)
{
    nsc_spool *s;
    char err[128], path[96], cmd[128];
    snprintf(path, sizeof path, "%s/%s", dir, sub);
    cr_assert_eq(nsc_spool_open(&s, path, 1 << 20, err), 0, "%s", err);
    uint64_t e = nsc_spool_epoch(s);
    nsc_spool_close(s);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    cr_assert_eq(system(cmd), 0);
    return e;
}

/* Remove the epoch from a spool's meta, as a spool an older agent made. */
static void drop_epoch(void)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi meta;
    MDB_val k = {sizeof "epoch", "epoch"};
    cr_assert_eq(mdb_env_create(&env), 0);
    cr_assert_eq(mdb_env_set_maxdbs(env, 3), 0);
    cr_assert_eq(mdb_env_open(env, dir, 0, 0640), 0);
    cr_assert_eq(mdb_txn_begin(env, NULL, 0, &txn), 0);
    cr_assert_eq(mdb_dbi_open(txn, "meta", 0, &meta), 0);
    cr_assert_eq(mdb_del(txn, meta, &k, NULL), 0);
    cr_assert_eq(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
}

/* A spool made anew gets a fresh non-zero epoch, kept across reopens even when
 * emptied; a spool without one that holds batches (an older agent's) is epoch 0. */
Test(spool, epoch, .init = make_dir, .fini = remove_dir)
{
    nsc_spool *s;
    char err[128];
    uint8_t buf[16] = {0};
    nsc_spool_tally t = {1, 1};
    cr_assert_eq(nsc_spool_open(&s, dir, 1 << 20, err), 0, "%s", err);
    uint64_t e = nsc_spool_epoch(s);
    cr_assert_neq(e, 0);
    cr_assert_eq(nsc_spool_put(s, buf, sizeof buf, &t, NULL, 0), 0);
    uint64_t seq = 0, deleted = 0;
    nsc_spool_tally gone = {0, 0};
    cr_assert_eq(nsc_spool_delete(s, &seq, 1, &deleted, &gone), 0);
    nsc_spool_close(s);
    cr_assert_eq(nsc_spool_open(&s, dir, 1 << 20, err), 0, "%s", err);
    cr_assert_eq(nsc_spool_epoch(s), e, "an emptied spool keeps its epoch");
    cr_assert_eq(nsc_spool_next_seq(s), 1, "and its sequence");
    nsc_spool_close(s);

    drop_epoch();
    cr_assert_eq(nsc_spool_open(&s, dir, 1 << 20, err), 0, "%s", err);
    cr_assert_eq(nsc_spool_epoch(s), 0);
    nsc_spool_close(s);
    cr_assert_eq(nsc_spool_open(&s, dir, 1 << 20, err), 0, "%s", err);
    cr_assert_eq(nsc_spool_epoch(s), 0, "epoch 0 is kept too");
    nsc_spool_close(s);

    uint64_t a = epoch_of_new_spool("x"), b = epoch_of_new_spool("x");
    cr_assert(a != 0 && b != 0 && a != b && a != e, "every new spool has its own epoch");
}

/* A plugin stream's mark is stored with the batch that holds its records, and
 * with a refusal too (what was refused is counted, not to be sent again); it
 * survives a reopen (the agent's kill) and is gone once forgotten. */
Test(spool, stream_marks_persist, .init = make_dir, .fini = remove_dir)
{
    nsc_spool *s;
    char err[128];
    uint8_t buf[1000] = {0};
    nsc_spool_tally t = {1, 1};
    nsc_spool_mark a = {0xa, 5}, b = {0xb, 9}, both[] = {{0xa, 7}, {0xb, 12}};
    cr_assert_eq(nsc_spool_open(&s, dir, 2500, err), 0, "%s", err);
    cr_assert_eq(nsc_spool_stream_next(s, 0xa), 0, "an unknown stream");
    cr_assert_eq(nsc_spool_put(s, buf, sizeof buf, &t, &a, 1), 0);
    cr_assert_eq(nsc_spool_put(s, buf, sizeof buf, &t, &b, 1), 0);
    cr_assert_eq(nsc_spool_put(s, buf, sizeof buf, &t, both, 2), 1, "over the cap: refused");
    nsc_spool_close(s);
    cr_assert_eq(nsc_spool_open(&s, dir, 2500, err), 0, "%s", err);
    cr_assert_eq(nsc_spool_stream_next(s, 0xa), 7);
    cr_assert_eq(nsc_spool_stream_next(s, 0xb), 12);
    nsc_spool_stream_forget(s, 0xa);
    cr_assert_eq(nsc_spool_stream_next(s, 0xa), 0);
    cr_assert_eq(nsc_spool_stream_next(s, 0xb), 12);
    nsc_spool_close(s);
}

typedef struct held_seen {
    uint64_t ids[8];
    uint32_t pids[8];
    unsigned n;
} held_seen;

static int note_held(void *arg, const nsc_spool_held *h)
{
    held_seen *s = arg;
    cr_assert_lt(s->n, 8);
    cr_assert_eq(h->ev.id, h->id * 10, "the event saved with its id");
    s->pids[s->n] = h->proxy.pid;
    s->ids[s->n++] = h->id;
    return 0;
}

static nsc_spool_held held_rec(uint64_t id)
{
    nsc_spool_held h;
    memset(&h, 0, sizeof h);
    h.id = id;
    h.proxy.pid = 4000 + (uint32_t)id;
    snprintf(h.proxy.host, sizeof h.proxy.host, "node0");
    h.ev = (nsc_event){.id = id * 10, .type = NSC_T_PROXY_OP, .flags = NSC_EVF_FOREIGN};
    return h;
}

/* Held PXN events (and the resolver's last id) go in and out with the put
 * that stores (or refuses) its batch. */
Test(spool, held_events_commit_with_the_batch, .init = make_dir, .fini = remove_dir)
{
    nsc_spool *s;
    char err[128];
    uint8_t buf[1000] = {0};
    nsc_spool_tally t = {1, 1};
    nsc_spool_held add[] = {held_rec(1), held_rec(2), held_rec(3)}, late = held_rec(4);
    uint64_t del[] = {2, 99};  /* 99 was never saved: skipped */
    cr_assert_eq(nsc_spool_open(&s, dir, 2500, err), 0, "%s", err);
    nsc_spool_held_change c = {.add = add, .nadd = 3};
    nsc_spool_held_stage(s, &c);
    cr_assert_eq(nsc_spool_put(s, buf, sizeof buf, &t, NULL, 0), 0);
    cr_assert_eq(c.written, 1);
    cr_assert_eq(nsc_spool_pxn_last_id(s), 0, "no re-attached id given yet");
    nsc_spool_held_change d = {.add = &late, .nadd = 1, .del = del, .ndel = 2, .last_id = 42};
    nsc_spool_held_stage(s, &d);
    cr_assert_eq(nsc_spool_put(s, buf, 2000, &t, NULL, 0), 1, "over the cap: refused");
    cr_assert_eq(d.written, 1, "the refusal counts the batch, and writes the held events' changes");
    nsc_spool_held_stage(s, NULL);
    nsc_spool_close(s);
    cr_assert_eq(nsc_spool_open(&s, dir, 2500, err), 0, "%s", err);
    held_seen seen = {0};
    cr_assert_eq(nsc_spool_held_foreach(s, note_held, &seen), 0);
    cr_assert_eq(seen.n, 3);
    cr_assert_eq(seen.ids[0], 1);
    cr_assert_eq(seen.ids[1], 3);
    cr_assert_eq(seen.ids[2], 4);
    cr_assert_eq(seen.pids[2], 4004, "with its proxy's identity");
    cr_assert_eq(nsc_spool_pxn_last_id(s), 42, "the resolver's last id, for its successor");
    nsc_spool_close(s);
}

Test(spool, streams_listed_and_counted, .init = make_dir, .fini = remove_dir)
{
    nsc_spool *s;
    char err[128];
    uint8_t buf[100] = {0};
    nsc_spool_tally t = {1, 1};
    nsc_spool_mark m[] = {{0xb, 3}, {0xa, 5}};
    cr_assert_eq(nsc_spool_open(&s, dir, 2500, err), 0, "%s", err);
    cr_assert_eq(nsc_spool_streams_count(s), 0);
    cr_assert_eq(nsc_spool_put(s, buf, sizeof buf, &t, m, 2), 0);
    uint64_t *ids;
    size_t n;
    cr_assert_eq(nsc_spool_streams(s, &ids, &n), 0);
    cr_assert_eq(n, 2);
    cr_assert_eq(ids[0], 0xa);
    cr_assert_eq(ids[1], 0xb);
    free(ids);
    nsc_spool_stream_forget(s, 0xa);
    cr_assert_eq(nsc_spool_streams_count(s), 1);
    nsc_spool_close(s);
}

static int note_cand(void *arg, const nsc_spool_cand *c)
{
    uint64_t *ids = arg;
    cr_assert_lt(ids[0], 16);
    ids[1 + ids[0]++] = c->id;
    return 0;
}

/* The resolver's memory goes in chunks with each put; the chunks older than
 * the newest cand_keep go, the rest is read in order after a reopen. */
Test(spool, candidates_kept_newest, .init = make_dir, .fini = remove_dir)
{
    nsc_spool *s;
    char err[128];
    uint8_t buf[100] = {0};
    nsc_spool_tally t = {1, 1};
    nsc_spool_cand c[4];
    memset(c, 0, sizeof c);
    for (unsigned i = 0; i < 4; i++)
        c[i] = (nsc_spool_cand){.id = i + 1, .host = nsc_spool_host_hash("node0"), .pid = 7};
    cr_assert_neq(nsc_spool_host_hash("node0"), nsc_spool_host_hash("node1"));
    cr_assert_eq(nsc_spool_open(&s, dir, 1 << 20, err), 0, "%s", err);
    nsc_spool_held_change a = {.cand = c, .ncand = 2, .cand_keep = 3}, b = {.cand = c + 2, .ncand = 2, .cand_keep = 2};
    nsc_spool_held_stage(s, &a);
    cr_assert_eq(nsc_spool_put(s, buf, sizeof buf, &t, NULL, 0), 0);
    nsc_spool_close(s);
    cr_assert_eq(nsc_spool_open(&s, dir, 1 << 20, err), 0, "%s", err);
    nsc_spool_held_stage(s, &b);
    cr_assert_eq(nsc_spool_put(s, buf, sizeof buf, &t, NULL, 0), 0);
    nsc_spool_held_stage(s, NULL);
    uint64_t ids[17] = {0};
    cr_assert_eq(nsc_spool_cands_foreach(s, note_cand, ids), 0);
    /* 1 and 2 were one chunk, both older than the newest 2: it went (a
     * chunk goes whole, once none of it is among the newest). */
    cr_assert_eq(ids[0], 2);
    cr_assert_eq(ids[1], 3);
    cr_assert_eq(ids[2], 4);
    nsc_spool_close(s);
}

typedef struct lsave_seen {
    uint32_t pids[4];
    size_t lens[4];
    char first[4];
    unsigned n;
} lsave_seen;

static int note_lsave(void *arg, const nsc_spool_lsave *l)
{
    lsave_seen *s = arg;
    cr_assert_lt(s->n, 4);
    cr_assert_eq(l->host, 0x1122334455667788ull, "named by its host hash");
    s->pids[s->n] = l->pid;
    s->lens[s->n] = l->len;
    s->first[s->n++] = *(const char *)l->data;
    return 0;
}

/* The ledger builder's states go in with the put that stores its batch, are
 * replaced by a later one, and deleted by a zero length. */
Test(spool, ledger_states_commit_with_the_batch, .init = make_dir, .fini = remove_dir)
{
    nsc_spool *s;
    char err[128];
    uint8_t buf[100] = {0};
    nsc_spool_tally t = {1, 1};
    const uint64_t host = 0x1122334455667788ull;
    cr_assert_eq(nsc_spool_open(&s, dir, 1 << 20, err), 0, "%s", err);
    nsc_spool_lsave first[] = {{host, 7, "aaa", 3}, {host, 8, "bbbb", 4}, {host, 9, "c", 1}};
    nsc_spool_held_change c = {.lsave = first, .nlsave = 3};
    nsc_spool_held_stage(s, &c);
    cr_assert_eq(nsc_spool_put(s, buf, sizeof buf, &t, NULL, 0), 0);
    cr_assert_eq(c.written, 1);
    nsc_spool_lsave next[] = {{host, 7, "zz", 2}, {host, 9, NULL, 0}, {host, 10, NULL, 0}};
    nsc_spool_held_change d = {.lsave = next, .nlsave = 3};
    nsc_spool_held_stage(s, &d);
    cr_assert_eq(nsc_spool_put(s, buf, sizeof buf, &t, NULL, 0), 0);
    nsc_spool_held_stage(s, NULL);
    nsc_spool_close(s);
    cr_assert_eq(nsc_spool_open(&s, dir, 1 << 20, err), 0, "%s", err);
    lsave_seen seen = {0};
    cr_assert_eq(nsc_spool_lsave_foreach(s, note_lsave, &seen), 0);
    cr_assert_eq(seen.n, 2, "9 deleted; 10 was never saved");
    cr_assert_eq(seen.pids[0], 7);
    cr_assert_eq(seen.lens[0], 2, "replaced");
    cr_assert_eq(seen.first[0], 'z');
    cr_assert_eq(seen.pids[1], 8);
    cr_assert_eq(seen.lens[1], 4);
    nsc_spool_close(s);
}
