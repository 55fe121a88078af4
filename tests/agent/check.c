/* check.c: nsc-agent-check, reads agent spools back and checks them.
 *
 *   nsc-agent-check pxn EMU.json SPOOL...   every PXN call the emulator made is
 *       in the spool, resolved, in its originator's section, under the right
 *       parent, communicator and rank, counted per proxy process
 *   nsc-agent-check kill EMU.json SPOOL...  every process started and died; the
 *       killed one died of exit with last progress = its last Coll received
 *   nsc-agent-check count PID EVENTS SPOOL... process PID has exactly EVENTS events
 *   nsc-agent-check ledger EMU.json SPOOL... one completed ledger record per
 *       (communicator, seq, rank) the emulator completed, none for another,
 *       with its func, count, times and GPU bounds (the emulator's truths)
 *   nsc-agent-check ledger-pxn EMU.json SPOOL... the same for the pxn
 *       scenario, each record with the PXN flag and its network edges
 *   nsc-agent-check ledger-drift EMU.json SPOOL... the same under the
 *       drifting-kernelch quirk: a Broadcast has no GPU times, and another
 *       collective has its own or none, flagged stale; some are
 *
 * Exit 0 when every check holds, 1 with a message for the first that fails.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "a2c.h"
#include "json.h"
#include "ledger.h"
#include "spool.h"

typedef struct rec {
    uint32_t pid;
    nsc_event ev;
    uint64_t comm;  /* from the section's context table; 0 if none */
    int32_t ctx_rank;
} rec;

typedef struct ctxent {
    uint32_t pid;
    uint16_t index;
    uint64_t comm;
    int32_t rank;
} ctxent;

typedef struct life {
    nsc_a2c_life l;
    nsc_a2c_progress prog[64];
} life;

/* A completed ledger record of process pid. */
typedef struct lrec {
    nsc_ledger_rec r;
    uint32_t pid;
} lrec;

/* A string a process defined, in a section or a ledger batch. */
typedef struct strent {
    uint32_t pid;
    nsc_str_def def;
} strent;

static rec *recs;
static size_t nrecs, caprecs;
static lrec *lrecs;
static size_t nlrecs, caplrecs, ninflight;
static strent *strents;
static size_t nstrents, capstrents;
static int pxn;    /* ledger-pxn: every record has its network legs, re-attached */
static int drift;  /* ledger-drift: KernelCh timers of other work were refused */
static uint64_t nstale;
static ctxent ctxs[4096];
static size_t nctxs;
static life lifes[1024];
static size_t nlifes;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("nsc-agent-check: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static const ctxent *find_ctx(uint32_t pid, uint16_t index)
{
    for (size_t i = nctxs; i-- > 0;)  /* the latest definition */
        if (ctxs[i].pid == pid && ctxs[i].index == index)
            return &ctxs[i];
    return NULL;
}

static void take_strs(uint32_t pid, const nsc_str_def *defs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (nstrents == capstrents) {
            capstrents = capstrents ? 2 * capstrents : 256;
            if (!(strents = realloc(strents, capstrents * sizeof *strents)))
                fail("out of memory");
        }
        strents[nstrents++] = (strent){pid, defs[i]};
    }
}

/* The text of process pid's string id s ("" when it defined none). */
static const char *str_of(uint32_t pid, nsc_str s)
{
    for (size_t i = nstrents; i-- > 0;)
        if (strents[i].pid == pid && strents[i].def.id == s)
            return strents[i].def.text;
    return "";
}

static void take_section(const nsc_a2c_section *s)
{
    nsc_batch b;
    int rc = nsc_batch_decode(s->data, s->len, NULL, &b);
    if (rc)
        fail("a section does not decode: %s", nsc_wire_strerror(rc));
    uint32_t pid = b.hdr.proc.pid;
    take_strs(pid, b.strs, b.nstrs);
    for (size_t i = 0; i < b.nctxs; i++) {
        if (nctxs == sizeof ctxs / sizeof ctxs[0])
            fail("too many contexts");
        ctxs[nctxs++] = (ctxent){pid, b.ctxs[i].index, b.ctxs[i].comm_id, b.ctxs[i].rank};
    }
    for (size_t i = 0; i < b.nevents; i++) {
        if (nrecs == caprecs) {
            caprecs = caprecs ? 2 * caprecs : 1024;
            if (!(recs = realloc(recs, caprecs * sizeof *recs)))
                fail("out of memory");
        }
        const ctxent *c = find_ctx(pid, b.events[i].ctx);
        recs[nrecs++] = (rec){pid, b.events[i], c ? c->comm : 0, c ? c->rank : -1};
    }
    nsc_batch_release(&b);
}

static void take_ledger(const nsc_a2c_section *s)
{
    nsc_ledger_batch b;
    int rc = nsc_ledger_decode(s->data, s->len, NULL, &b);
    if (rc)
        fail("a ledger batch does not decode: %s", nsc_wire_strerror(rc));
    take_strs(b.pid, b.strs, b.nstrs);
    for (uint32_t i = 0; i < b.nrecs; i++) {
        if (b.recs[i].flags & NSC_LEDGER_INFLIGHT) {
            ninflight++;
            continue;
        }
        if (nlrecs == caplrecs) {
            caplrecs = caplrecs ? 2 * caplrecs : 1024;
            if (!(lrecs = realloc(lrecs, caplrecs * sizeof *lrecs)))
                fail("out of memory");
        }
        lrec *l = &lrecs[nlrecs++];
        memset(l, 0, sizeof *l);
        l->r = b.recs[i];
        l->r.edges = NULL;
        l->pid = b.pid;
        const ctxent *c = l->r.comm_id ? NULL : find_ctx(b.pid, l->r.ctx);
        if (c)  /* an agent restarted after the process defined its context */
            l->r.comm_id = c->comm, l->r.rank = c->rank;
    }
    nsc_ledger_release(&b);
}

static int take_entry(void *arg, const nsc_spool_entry *e)
{
    uint64_t *expect = arg, seq = e->seq;
    nsc_a2c_batch b;
    int rc = nsc_a2c_decode_batch(e->msg, e->len, NULL, &b);
    if (rc)
        fail("spool entry %" PRIu64 " does not decode: %s", seq, nsc_wire_strerror(rc));
    if (b.seq != seq || seq != *expect)
        fail("spool entry %" PRIu64 " carries sequence %" PRIu64 ", expected %" PRIu64, seq, b.seq, *expect);
    (*expect)++;
    for (uint32_t i = 0; i < b.nsections; i++)
        take_section(&b.sections[i]);
    for (uint32_t i = 0; i < b.nledgers; i++)
        take_ledger(&b.ledgers[i]);
    for (uint32_t i = 0; i < b.nlife; i++) {
        if (nlifes == sizeof lifes / sizeof lifes[0] || b.life[i].nprogress > 64)
            fail("too many lifecycle records");
        life *l = &lifes[nlifes++];
        l->l = b.life[i];
        memcpy(l->prog, b.life[i].progress, b.life[i].nprogress * sizeof *l->prog);
        l->l.progress = l->prog;
    }
    nsc_a2c_batch_release(&b);
    return 0;
}

static void load_spools(int n, char **dirs)
{
    for (int i = 0; i < n; i++) {
        nsc_spool *s;
        char err[128];
        uint64_t expect = 0;
        if (nsc_spool_open(&s, dirs[i], 1ull << 30, err))
            fail("%s", err);
        nsc_spool_foreach(s, 0, take_entry, &expect);
        if (expect == 0)
            fail("spool %s is empty", dirs[i]);
        nsc_spool_close(s);
    }
}

static void load_json(const char *path, nsc_json_doc *doc)
{
    FILE *f = fopen(path, "rb");
    static char buf[64 << 20];
    if (!f)
        fail("cannot open %s", path);
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    nsc_json_error err;
    if (nsc_json_parse(buf, n, NULL, doc, &err))
        fail("%s: %s at %zu", path, err.msg, err.offset);
}

static uint64_t sum_counts(const nsc_json *obj)
{
    uint64_t total = 0, v;
    for (const nsc_json *c = obj ? nsc_json_first(obj) : NULL; c; c = nsc_json_next(obj, c))
        if (nsc_json_u64(c, &v) == 0)
            total += v;
    return total;
}

static const rec *find_event(uint32_t pid, uint64_t id, int foreign)
{
    for (size_t i = 0; i < nrecs; i++)
        if (recs[i].pid == pid && recs[i].ev.id == id && !!(recs[i].ev.flags & NSC_EVF_FOREIGN) == foreign)
            return &recs[i];
    return NULL;
}

static void check_foreign(const rec *r)
{
    const nsc_event *e = &r->ev;
    if (e->flags & NSC_EVF_UNRESOLVED)
        fail("pid %u: foreign event %" PRIx64 " left unresolved", r->pid, e->id);
    if (!(e->id >> 63) || e->origin_pid == r->pid)
        fail("pid %u: foreign event %" PRIx64 " was not moved from its proxy", r->pid, e->id);
    const rec *p = e->type == NSC_T_PROXY_OP ? find_event(r->pid, e->parent, 0) : find_event(r->pid, e->parent, 1);
    if (!p)
        fail("pid %u: foreign %s %" PRIx64 ": parent %" PRIx64 " is not in the originator's section", r->pid,
             nsc_type_name(e->type), e->id, e->parent);
    if (e->type == NSC_T_PROXY_OP && p->ev.type != NSC_T_COLL && p->ev.type != NSC_T_P2P)
        fail("pid %u: foreign ProxyOp's parent is a %s", r->pid, nsc_type_name(p->ev.type));
    if (!r->comm || r->comm != p->comm || r->ctx_rank != p->ctx_rank || e->rank != p->ev.rank)
        fail("pid %u: foreign event %" PRIx64 " on comm %" PRIx64 " rank %d (ctx rank %d), parent on %" PRIx64
             " rank %d", r->pid, e->id, r->comm, e->rank, r->ctx_rank, p->comm, p->ev.rank);
}

static int check_pxn(const char *emu)
{
    nsc_json_doc doc;
    load_json(emu, &doc);
    const nsc_json *ranks = nsc_json_get(nsc_json_root(&doc), "ranks");
    uint64_t expected_total = 0, found_total = 0;
    for (size_t i = 0; i < nrecs; i++)
        if (recs[i].ev.flags & NSC_EVF_FOREIGN) {
            check_foreign(&recs[i]);
            found_total++;
        }
    for (const nsc_json *r = ranks ? nsc_json_first(ranks) : NULL; r; r = nsc_json_next(ranks, r)) {
        uint64_t pid, want = sum_counts(nsc_json_get(nsc_json_get(r, "foreign"), "start")), got = 0;
        if (nsc_json_u64(nsc_json_get(r, "pid"), &pid))
            fail("summary rank without pid");
        for (size_t i = 0; i < nrecs; i++)
            got += (recs[i].ev.flags & NSC_EVF_FOREIGN) && recs[i].ev.origin_pid == pid;
        if (got != want)
            fail("proxy pid %" PRIu64 ": emulator made %" PRIu64 " foreign starts, spool has %" PRIu64, pid, want, got);
        expected_total += want;
    }
    if (expected_total == 0 || found_total != expected_total)
        fail("foreign events: emulator %" PRIu64 ", spool %" PRIu64, expected_total, found_total);
    printf("pxn: %" PRIu64 " foreign events, all re-attached to the right rank and parent\n", found_total);
    nsc_json_free(&doc);
    return 0;
}

static const life *find_life(uint32_t pid, uint8_t event)
{
    for (size_t i = 0; i < nlifes; i++)
        if (lifes[i].l.pid == pid && lifes[i].l.event == event)
            return &lifes[i];
    return NULL;
}

static void check_progress(uint64_t pid, const life *d)
{
    if (d->l.nprogress == 0)
        fail("killed pid %" PRIu64 ": no last progress", pid);
    for (uint32_t i = 0; i < d->l.nprogress; i++) {
        const nsc_a2c_progress *g = &d->l.progress[i];
        uint64_t last = 0;
        int any = 0;
        for (size_t k = 0; k < nrecs; k++)
            if (recs[k].pid == pid && recs[k].ev.type == NSC_T_COLL && recs[k].comm == g->comm_id) {
                any = 1;
                last = recs[k].ev.d.coll.seq > last ? recs[k].ev.d.coll.seq : last;
            }
        if (!any || last != g->seq || !g->func[0])
            fail("killed pid %" PRIu64 ": progress %s seq %" PRIu64 " on %" PRIx64 ", last Coll in spool %" PRIu64,
                 pid, g->func, g->seq, g->comm_id, last);
    }
}

static int check_kill(const char *emu)
{
    nsc_json_doc doc;
    load_json(emu, &doc);
    const nsc_json *procs = nsc_json_get(nsc_json_root(&doc), "processes");
    unsigned killed = 0;
    for (const nsc_json *p = procs ? nsc_json_first(procs) : NULL; p; p = nsc_json_next(procs, p)) {
        uint64_t pid, sig = 0;
        if (nsc_json_u64(nsc_json_get(p, "pid"), &pid))
            fail("summary process without pid");
        nsc_json_u64(nsc_json_get(p, "signal"), &sig);
        const life *s = find_life((uint32_t)pid, NSC_A2C_STARTED), *d = find_life((uint32_t)pid, NSC_A2C_DIED);
        if (!s || !d || d->l.reason != NSC_A2C_REASON_EXITED || d->l.ts_ns < s->l.ts_ns)
            fail("pid %" PRIu64 ": started %d, died %d (reason %d)", pid, !!s, !!d, d ? d->l.reason : -1);
        if (sig == 9) {
            killed++;
            check_progress(pid, d);
            printf("kill: pid %" PRIu64 " reported dead with %u progress entries (%s seq %" PRIu64 ")\n", pid,
                   d->l.nprogress, d->l.progress[0].func, d->l.progress[0].seq);
        }
    }
    if (killed != 1)
        fail("expected one killed process in the summary, found %u", killed);
    nsc_json_free(&doc);
    return 0;
}

static int check_count(const char *pid_s, const char *events_s)
{
    uint32_t pid = (uint32_t)strtoul(pid_s, NULL, 10);
    uint64_t want = strtoull(events_s, NULL, 10), got = 0;
    for (size_t i = 0; i < nrecs; i++)
        got += recs[i].pid == pid;
    if (got != want)
        fail("pid %u: %" PRIu64 " events in the spool, expected %" PRIu64, pid, got, want);
    printf("count: pid %u has all %" PRIu64 " events\n", pid, got);
    return 0;
}

/* The records of (comm, func, seq, rank): NCCL counts seq per function; of
 * a Send/Recv (p2p its func, else NULL), those of that peer, whose seq
 * counts per peer and func. */
static const lrec *find_lrec(uint64_t comm, const char *func, uint64_t seq, int32_t rank, const char *p2p,
                             int32_t peer, unsigned *n)
{
    const lrec *found = NULL;
    *n = 0;
    for (size_t i = 0; i < nlrecs; i++) {
        const nsc_ledger_rec *r = &lrecs[i].r;
        if (r->comm_id != comm || r->seq != seq || r->rank != rank || !(r->flags & NSC_LEDGER_P2P) != !p2p ||
            strcmp(str_of(lrecs[i].pid, r->func), func) != 0 || (p2p && r->peer != peer))
            continue;
        found = &lrecs[i];
        (*n)++;
    }
    return found;
}

static uint64_t u64_of(const nsc_json *o, const char *key)
{
    uint64_t v = 0;
    if (nsc_json_u64(nsc_json_get(o, key), &v))
        fail("summary: no %s", key);
    return v;
}

static uint64_t absdiff(uint64_t a, uint64_t b) { return a > b ? a - b : b - a; }

/* A host time the plugin converted from the CPU's counter between the
 * emulator's stamps from and to, within the conversion's bound. */
static int host_within(uint64_t t, uint64_t from, uint64_t to)
{
    return t + NSC_CLOCK_BOUND_NS >= from && t <= to + NSC_CLOCK_BOUND_NS;
}

/* The distance from t to the nearest true time of a GPU timer value the
 * emulator gave the rank. */
static uint64_t nearest(const nsc_json *rk, uint64_t t)
{
    const nsc_json *ks = nsc_json_get(rk, "kernel_samples");
    uint64_t best = UINT64_MAX, v;
    for (const nsc_json *k = ks ? nsc_json_first(ks) : NULL; k; k = nsc_json_next(ks, k)) {
        const nsc_json *tru = nsc_json_next(k, nsc_json_first(k));
        if (tru && nsc_json_u64(tru, &v) == 0 && absdiff(v, t) < best)
            best = absdiff(v, t);
    }
    return best;
}

/* One rank's collectives against its records: one each, the truths hold. */
static uint64_t check_rank_ledger(const nsc_json *rk, uint64_t count, uint64_t *worst_err)
{
    uint64_t comm = u64_of(rk, "comm_id"), rank = u64_of(rk, "rank"), checked = 0;
    const nsc_json *colls = nsc_json_get(rk, "collectives");
    for (const nsc_json *c = colls ? nsc_json_first(colls) : NULL; c; c = nsc_json_next(colls, c)) {
        const char *func = nsc_json_str(nsc_json_get(c, "func"));
        uint64_t seq = u64_of(c, "seq"), done = u64_of(c, "complete_ns");
        if (!func)
            fail("summary: a collective without func");
        const char *p2p = strcmp(func, "Send") == 0 || strcmp(func, "Recv") == 0 ? func : NULL;
        int32_t peer = p2p ? (int32_t)u64_of(c, "peer") : -1;
        unsigned n;
        const lrec *l = find_lrec(comm, func, seq, (int32_t)rank, p2p, peer, &n);
        if (done == 0) {
            if (n)
                fail("comm %" PRIx64 " seq %" PRIu64 " rank %" PRIu64 ": never completed, %u records", comm, seq, rank, n);
            continue;
        }
        if (n != 1)
            fail("comm %" PRIx64 " seq %" PRIu64 " rank %" PRIu64 ": %u completed records", comm, seq, rank, n);
        const nsc_ledger_rec *r = &l->r;
        const char *lfunc = str_of(l->pid, r->func);
        if (strcmp(lfunc, func) != 0 || (count && r->count != count))
            fail("seq %" PRIu64 " rank %" PRIu64 ": %s count %" PRIu64 ", emulator %s count %" PRIu64, seq, rank,
                 lfunc, r->count, func, count);
        /* The emulator stamps before and after each call the plugin reads its
         * clock in: the group began, then the CollApi; the Coll's start call;
         * the device's end, then the last KernelCh's stop call. */
        uint64_t api = u64_of(c, "api_start_ns"), start = u64_of(c, "start_ns"), stop = u64_of(c, "stop_ns");
        uint64_t end = u64_of(c, "end_ns"), ready = u64_of(c, "ready_ns");
        /* NCCL makes no KernelCh for a Broadcast under drifting-kernelch: it
         * completes at its last ProxyOp's stop, which on a rank whose legs
         * carry none of the chain is its device's start, not its end. */
        int no_kernel = drift && strcmp(func, "Broadcast") == 0;
        if (!host_within(r->api_ns, api, start) || !host_within(r->enqueue_ns, start, stop) ||
            !host_within(r->done_ns, no_kernel ? ready : end, done))
            fail("seq %" PRIu64 " rank %" PRIu64 ": api/enqueue/done %" PRIu64 "/%" PRIu64 "/%" PRIu64
                 ", emulator group %" PRIu64 ", Coll %" PRIu64 "..%" PRIu64 ", end %" PRIu64 "..%" PRIu64,
                 seq, rank, r->api_ns, r->enqueue_ns, r->done_ns, api, start, stop, end, done);
        /* GPU times: each is a pTimer the emulator gave, converted; its true
         * time is in kernel_samples, within gpu_err_ns of it, and it is this
         * collective's (its start timer is read 1.5 us before the proxy's
         * call, when the device was ready for it; its end before it completed).
         * Under drifting-kernelch a Broadcast has no KernelCh, and a
         * collective whose timers were all other work's has none either. */
        nstale += (r->flags & NSC_LEDGER_GPU_STALE) != 0;
        int none_ok = no_kernel || (drift && (r->flags & NSC_LEDGER_GPU_STALE));
        if (!(r->flags & NSC_LEDGER_NO_GPU) &&
            (r->gpu_start_ns + r->gpu_err_ns + 2000 < ready || r->gpu_end_ns > done + r->gpu_err_ns))
            fail("seq %" PRIu64 " rank %" PRIu64 ": GPU %" PRIu64 "..%" PRIu64 " +- %u: not its own (device ready %"
                 PRIu64 ", completed %" PRIu64 ")", seq, rank, r->gpu_start_ns, r->gpu_end_ns, r->gpu_err_ns, ready,
                 done);
        if ((r->flags & NSC_LEDGER_NO_GPU) ? !none_ok
                                           : nearest(rk, r->gpu_start_ns) > r->gpu_err_ns ||
                                                 nearest(rk, r->gpu_end_ns) > r->gpu_err_ns ||
                                                 r->gpu_end_ns < r->gpu_start_ns)
            fail("seq %" PRIu64 " rank %" PRIu64 ": GPU %" PRIu64 "..%" PRIu64 " +- %u: no GPU timer's truth that near",
                 seq, rank, r->gpu_start_ns, r->gpu_end_ns, r->gpu_err_ns);
        /* ... and the agent, which cannot tell, counts its channels as lost */
        if (r->dropped && !no_kernel)
            fail("seq %" PRIu64 " rank %" PRIu64 ": %u events or states dropped, none was", seq, rank, r->dropped);
        if (pxn && (!(r->flags & NSC_LEDGER_PXN) || r->nedges == 0))
            fail("seq %" PRIu64 " rank %" PRIu64 ": flags %#x, %u edges: not its PXN network legs", seq, rank,
                 r->flags, r->nedges);
        if (r->gpu_err_ns > *worst_err)
            *worst_err = r->gpu_err_ns;
        checked++;
    }
    return checked;
}

static int check_ledger(const char *emu)
{
    nsc_json_doc doc;
    load_json(emu, &doc);
    const nsc_json *ranks = nsc_json_get(nsc_json_root(&doc), "ranks");
    uint64_t count = 0, checked = 0, worst = 0;
    nsc_json_u64(nsc_json_get(nsc_json_root(&doc), "count"), &count);
    for (const nsc_json *r = ranks ? nsc_json_first(ranks) : NULL; r; r = nsc_json_next(ranks, r))
        checked += check_rank_ledger(r, count, &worst);
    if (checked == 0 || checked != nlrecs)
        fail("%zu completed ledger records, the emulator completed %" PRIu64, nlrecs, checked);
    if (drift && nstale == 0)
        fail("drifting-kernelch: no record flagged with stale GPU timers");
    printf("ledger: %" PRIu64 " records, one per completed collective and rank, %zu in flight, %" PRIu64
           " with stale GPU timers; worst gpu_err %" PRIu64 " ns\n", checked, ninflight, nstale, worst);
    nsc_json_free(&doc);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && strcmp(argv[1], "pxn") == 0) {
        load_spools(argc - 3, argv + 3);
        return check_pxn(argv[2]);
    }
    if (argc >= 4 && strcmp(argv[1], "kill") == 0) {
        load_spools(argc - 3, argv + 3);
        return check_kill(argv[2]);
    }
    if (argc >= 4 && strcmp(argv[1], "ledger") == 0) {
        load_spools(argc - 3, argv + 3);
        return check_ledger(argv[2]);
    }
    if (argc >= 4 && strcmp(argv[1], "ledger-pxn") == 0) {
        pxn = 1;
        load_spools(argc - 3, argv + 3);
        return check_ledger(argv[2]);
    }
    if (argc >= 4 && strcmp(argv[1], "ledger-drift") == 0) {
        drift = 1;
        load_spools(argc - 3, argv + 3);
        return check_ledger(argv[2]);
    }
    if (argc >= 5 && strcmp(argv[1], "count") == 0) {
        load_spools(argc - 4, argv + 4);
        return check_count(argv[2], argv[3]);
    }
    fprintf(stderr, "usage: nsc-agent-check pxn|kill|ledger|ledger-pxn EMU.json SPOOL... | count PID EVENTS SPOOL...\n");
    return 2;
}
