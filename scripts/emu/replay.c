/* replay.c: --replay, a recorded NCCL profiler call log played into a plugin.
 *
 * The log (format: tests/data/nccl-traces/README.md) has one line per event,
 * written when it stopped, plus state and lifecycle lines. Replay splits events
 * into their start and stop calls, orders every call by timestamp (ties: init,
 * start, state, stop, finalize, then file order), rebuilds each descriptor from
 * `details`, maps recorded handles and contexts to the ones the plugin returns,
 * and runs each call on a thread of its own per recorded tid, in the global
 * order, keeping relative timing scaled by --speed (0: no waiting).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "emu.h"
#include "json.h"

enum call_kind { C_INIT, C_START, C_STATE, C_STOP, C_FINALIZE };

typedef struct call {
    uint64_t ts_ns;
    uint32_t order;   /* position in the file, for ties */
    uint8_t kind;
    uint32_t tid;
    const nsc_json *rec;
} call;

typedef struct handle_slot {
    uint64_t key;     /* recorded address; 0: empty */
    void *h;
    unsigned type;
    emu_rank *r;
} handle_slot;

typedef struct replay {
    const emu_opts *o;
    emu_world w;
    call *calls;
    size_t ncalls;
    handle_slot *map;
    size_t map_cap;
    emu_rank *ranks;
    int nranks;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t turn;
    uint64_t t0_true, t0_log;
    uint64_t unmapped_parents;
    int64_t pid;           /* the one recorded process (0: none seen yet) */
} replay;

static uint64_t hex_of(const nsc_json *n)
{
    const char *s = nsc_json_str(n);
    return s && strcmp(s, "null") != 0 ? strtoull(s, NULL, 16) : 0;
}

static handle_slot *map_find(replay *rp, uint64_t key)
{
    size_t i = (size_t)(emu_splitmix(key) % rp->map_cap);
    while (rp->map[i].key && rp->map[i].key != key)
        i = (i + 1) % rp->map_cap;
    return &rp->map[i];
}

static int ts_of(const nsc_json *n, uint64_t *ns)
{
    uint64_t us_milli;
    if (nsc_json_fixed(n, 3, &us_milli))
        return -1;
    *ns = us_milli; /* microseconds with three decimals = nanoseconds */
    return 0;
}

static emu_rank *rank_of(replay *rp, const nsc_json *rec)
{
    uint64_t id;
    int64_t rank;
    if (nsc_json_u64(nsc_json_get(rec, "commId"), &id) || nsc_json_i64(nsc_json_get(rec, "rank"), &rank))
        return NULL;
    for (int i = 0; i < rp->nranks; i++)
        if (rp->ranks[i].ci.comm_id == id && rp->ranks[i].ci.rank == rank)
            return &rp->ranks[i];
    return NULL;
}

static void *mapped(replay *rp, uint64_t addr)
{
    if (!addr)
        return NULL;
    handle_slot *s = map_find(rp, addr);
    if (!s->key)
        rp->unmapped_parents++;
    return s->key ? s->h : NULL;
}

static const char *str_or(const nsc_json *d, const char *key)
{
    return nsc_json_str(nsc_json_get(d, key));
}

static int64_t int_or(const nsc_json *d, const char *key)
{
    int64_t v = 0;
    nsc_json_i64(nsc_json_get(d, key), &v);
    return v;
}

static bool bool_or(const nsc_json *d, const char *key)
{
    bool v = false;
    nsc_json_bool(nsc_json_get(d, key), &v);
    return v;
}

/* The descriptor fields the log keeps in `details`, per event type. */
static void fill_event(replay *rp, emu_ev *ev, const nsc_json *d)
{
    switch (ev->type) {
    case NSC_T_GROUP_API:
        ev->d.group_api.depth = (int)int_or(d, "depth");
        ev->d.group_api.graph = bool_or(d, "graphCaptured");
        break;
    case NSC_T_COLL_API:
    case NSC_T_P2P_API:
        ev->d.api.func = str_or(d, "func");
        ev->d.api.dtype = str_or(d, "dtype");
        ev->d.api.count = (size_t)int_or(d, "count");
        ev->d.api.root = (int)int_or(d, "root");
        ev->d.api.stream = (void *)(uintptr_t)hex_of(nsc_json_get(d, "stream"));
        ev->d.api.graph = bool_or(d, "graphCaptured");
        break;
    case NSC_T_KERNEL_LAUNCH:
        ev->d.launch.stream = (void *)(uintptr_t)hex_of(nsc_json_get(d, "stream"));
        break;
    case NSC_T_COLL:
        nsc_json_u64(nsc_json_get(d, "seq"), &ev->d.coll.seq);
        ev->d.coll.func = str_or(d, "func");
        ev->d.coll.dtype = str_or(d, "dtype");
        ev->d.coll.algo = str_or(d, "algo");
        ev->d.coll.proto = str_or(d, "proto");
        ev->d.coll.nch = (uint8_t)int_or(d, "channels");
        ev->d.coll.nwarps = (uint8_t)int_or(d, "warps");
        ev->d.coll.count = (size_t)int_or(d, "count");
        ev->d.coll.root = (int)int_or(d, "root");
        ev->d.coll.send = (const void *)(uintptr_t)hex_of(nsc_json_get(d, "sendBuff"));
        ev->d.coll.recv = (void *)(uintptr_t)hex_of(nsc_json_get(d, "recvBuff"));
        ev->d.coll.parent_group = mapped(rp, hex_of(nsc_json_get(d, "parentGroup")));
        break;
    case NSC_T_P2P:
        ev->d.p2p.func = str_or(d, "func");
        ev->d.p2p.dtype = str_or(d, "dtype");
        ev->d.p2p.count = (size_t)int_or(d, "count");
        ev->d.p2p.peer = (int)int_or(d, "peer");
        ev->d.p2p.nch = (uint8_t)int_or(d, "channels");
        ev->d.p2p.buff = (void *)(uintptr_t)hex_of(nsc_json_get(d, "buff"));
        ev->d.p2p.parent_group = mapped(rp, hex_of(nsc_json_get(d, "parentGroup")));
        break;
    case NSC_T_PROXY_OP:
        ev->d.proxy_op.pid = (pid_t)int_or(d, "pid");
        ev->d.proxy_op.ch = (uint8_t)int_or(d, "channel");
        ev->d.proxy_op.peer = (int)int_or(d, "peer");
        ev->d.proxy_op.nsteps = (int)int_or(d, "steps");
        ev->d.proxy_op.chunk = (int)int_or(d, "chunkSize");
        ev->d.proxy_op.is_send = (int)int_or(d, "isSend");
        break;
    case NSC_T_PROXY_STEP:
        ev->d.proxy_step.step = (int)int_or(d, "step");
        break;
    case NSC_T_KERNEL_CH:
        ev->d.kernel_ch.ch = (uint8_t)int_or(d, "channel");
        nsc_json_u64(nsc_json_get(d, "pTimer"), &ev->d.kernel_ch.ptimer);
        break;
    default:
        break;
    }
}

static void do_start(replay *rp, const nsc_json *rec)
{
    emu_rank *r = rank_of(rp, rec);
    const char *tn = str_or(rec, "type");
    int type = tn && strncmp(tn, "ncclProfile", 11) == 0 ? nsc_type_from_name(tn + 11) : -1;
    if (!r || type < 0)
        return;
    /* The log has no operation boundaries: each recorded start reads the mask. */
    emu_ev ev = {.type = (unsigned)type, .mask = emu_mask_now(),
                 .parent = mapped(rp, hex_of(nsc_json_get(rec, "parentObj")))};
    fill_event(rp, &ev, nsc_json_get(rec, "details"));
    void *h = emu_start(r, &ev);
    uint64_t addr = hex_of(nsc_json_get(rec, "eventAddr"));
    *map_find(rp, addr) = (handle_slot){addr, h, (unsigned)type, r};
}

/* A stop or state of an event whose communicator the log finalized before
 * is dropped: NCCL makes no call on a finalized context, whose plugin has
 * freed the event, and the rank's accounting is gone with it. */
static void do_call(replay *rp, const call *c)
{
    handle_slot *s;
    int64_t id;
    uint64_t arg = 0;
    switch (c->kind) {
    case C_INIT: {
        emu_rank *r = &rp->ranks[rp->nranks];
        emu_comm_info ci = {.name = str_or(nsc_json_get(c->rec, "details"), "commName"), .nnodes = 1};
        nsc_json_u64(nsc_json_get(c->rec, "commId"), &ci.comm_id);
        ci.rank = (int)int_or(c->rec, "rank");
        ci.nranks = (int)int_or(nsc_json_get(c->rec, "details"), "nranks");
        if (emu_rank_open(&rp->w, r, &ci, ci.rank, 0) == 0)
            rp->nranks++;
        break;
    }
    case C_FINALIZE: {
        emu_rank *r = rank_of(rp, c->rec);
        if (r)
            emu_rank_close(r);
        break;
    }
    case C_START:
        do_start(rp, c->rec);
        break;
    case C_STOP:
        s = map_find(rp, hex_of(nsc_json_get(c->rec, "eventAddr")));
        if (s->key && s->r->profiled)
            emu_stop(s->r, s->type, s->h);
        break;
    case C_STATE:
        s = map_find(rp, hex_of(nsc_json_get(c->rec, "eventAddr")));
        if (!s->key || !s->r->profiled || nsc_json_i64(nsc_json_get(c->rec, "id"), &id) || id < 0 ||
            id >= NSC_S_COUNT)
            break;
        if (nsc_json_u64(nsc_json_get(c->rec, "pTimer"), &arg) &&
            nsc_json_u64(nsc_json_get(c->rec, "appendedProxyOps"), &arg))
            nsc_json_u64(nsc_json_get(c->rec, "transSize"), &arg);
        emu_state(s->r, s->type, s->h, (int)id, arg, (int)int_or(c->rec, "steps"));
        break;
    }
}

static void wait_until(const replay *rp, uint64_t ts)
{
    if (rp->o->speed <= 0)
        return;
    uint64_t due = rp->t0_true + (uint64_t)((double)(ts - rp->t0_log) / rp->o->speed);
    for (uint64_t now = emu_true_ns(); now < due; now = emu_true_ns()) {
        struct timespec d = {(time_t)((due - now) / 1000000000u), (long)((due - now) % 1000000000u)};
        nanosleep(&d, NULL);
    }
}

typedef struct replayer {
    replay *rp;
    uint32_t tid;
} replayer;

/* Each thread runs the calls of one recorded tid when their turn comes. */
static void *replay_thread(void *arg)
{
    replayer *t = arg;
    replay *rp = t->rp;
    for (size_t i = 0; i < rp->ncalls; i++) {
        if (rp->calls[i].tid != t->tid)
            continue;
        pthread_mutex_lock(&rp->mu);
        while (rp->turn != i)
            pthread_cond_wait(&rp->cv, &rp->mu);
        pthread_mutex_unlock(&rp->mu);
        wait_until(rp, rp->calls[i].ts_ns);
        do_call(rp, &rp->calls[i]);
        pthread_mutex_lock(&rp->mu);
        rp->turn++;
        pthread_cond_broadcast(&rp->cv);
        pthread_mutex_unlock(&rp->mu);
    }
    return NULL;
}

static int cmp_call(const void *a, const void *b)
{
    const call *x = a, *y = b;
    if (x->ts_ns != y->ts_ns)
        return x->ts_ns < y->ts_ns ? -1 : 1;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static int add_call(replay *rp, const nsc_json *rec, const nsc_json *when, uint8_t kind, uint32_t order)
{
    call *c = &rp->calls[rp->ncalls];
    int64_t tid = 0;
    const nsc_json *ts = nsc_json_get(when, "ts");
    if (ts_of(ts ? ts : nsc_json_get(rec, "ts"), &c->ts_ns))
        return -1;
    nsc_json_i64(nsc_json_get(ts ? when : rec, "tid"), &tid);
    int64_t pid = 0;
    nsc_json_i64(nsc_json_get(ts ? when : rec, "pid"), &pid);
    if (pid && rp->pid && pid != rp->pid) {
        fprintf(stderr, "ncclscope-emu: --replay: the log has several processes (pids %lld and "
                        "%lld); only single-process logs can be replayed (docs/emulator.md)\n",
                (long long)rp->pid, (long long)pid);
        return -1;
    }
    rp->pid = pid ? pid : rp->pid;
    c->tid = (uint32_t)tid;
    c->kind = kind;
    c->order = order;
    c->rec = rec;
    rp->ncalls++;
    return 0;
}

/* One line -> its calls. Unknown lines (CUPTI activity) are skipped. */
static int add_line(replay *rp, const nsc_json *rec, uint32_t order)
{
    const char *rt = str_or(rec, "recordType"), *type = str_or(rec, "type"), *fn = str_or(rec, "func");
    if (rt && strcmp(rt, "event") == 0)
        return add_call(rp, rec, nsc_json_get(rec, "start"), C_START, order) ||
               add_call(rp, rec, nsc_json_get(rec, "stop"), C_STOP, order);
    if (rt && strcmp(rt, "state") == 0)
        return add_call(rp, rec, NULL, C_STATE, order);
    if (type && strcmp(type, "ProfilerLifecycle") == 0 && fn)
        return add_call(rp, rec, nsc_json_get(rec, "start"),
                        strcmp(fn, "ProfilerInit") == 0 ? C_INIT : C_FINALIZE, order);
    return 0;
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t cap = 0;
    *len = 0;
    for (;;) {
        if (*len + 65536 > cap) {
            char *n = realloc(buf, cap = cap * 2 + 65536);
            if (!n)
                break;
            buf = n;
        }
        size_t got = fread(buf + *len, 1, cap - *len, f);
        *len += got;
        if (got == 0)
            break;
    }
    fclose(f);
    return buf;
}

/* Parse every line; docs[] keeps the trees alive while calls point into them. */
static int load_log(replay *rp, const char *path, nsc_json_doc **docs, size_t *ndocs)
{
    size_t len;
    char *buf = read_all(path, &len);
    if (!buf)
        emu_die("--replay: cannot read %s: %s", path, strerror(errno));
    size_t lines = 1;
    for (size_t i = 0; i < len; i++)
        lines += buf[i] == '\n';
    *docs = calloc(lines, sizeof **docs);
    rp->calls = calloc(lines * 2, sizeof *rp->calls);
    if (!*docs || !rp->calls)
        emu_die("out of memory");
    size_t lineno = 0;
    int rc = 0;
    for (size_t start = 0; start < len && rc == 0; lineno++) {
        size_t end = start;
        while (end < len && buf[end] != '\n')
            end++;
        if (end > start) {
            nsc_json_error err;
            if (nsc_json_parse(buf + start, end - start, NULL, &(*docs)[*ndocs], &err)) {
                fprintf(stderr, "ncclscope-emu: %s:%zu: byte %zu: %s\n", path, lineno + 1, err.offset, err.msg);
                rc = -1;
            } else if (add_line(rp, nsc_json_root(&(*docs)[(*ndocs)++]), (uint32_t)lineno)) {
                fprintf(stderr, "ncclscope-emu: %s:%zu: cannot replay this line\n", path, lineno + 1);
                rc = -1;
            }
        }
        start = end + 1;
    }
    free(buf);
    return rc;
}

static int replay_calls(replay *rp)
{
    qsort(rp->calls, rp->ncalls, sizeof *rp->calls, cmp_call);
    uint32_t tids[256];
    int ntids = 0;
    for (size_t i = 0; i < rp->ncalls; i++) {
        int k = 0;
        while (k < ntids && tids[k] != rp->calls[i].tid)
            k++;
        if (k == ntids) {
            if (ntids == 256)
                emu_die("--replay: more than 256 threads in the log");
            tids[ntids++] = rp->calls[i].tid;
        }
    }
    replayer th[256];
    pthread_t t[256];
    rp->t0_log = rp->ncalls ? rp->calls[0].ts_ns : 0;
    rp->t0_true = emu_true_ns();
    for (int k = 0; k < ntids; k++) {
        th[k] = (replayer){rp, tids[k]};
        if (pthread_create(&t[k], NULL, replay_thread, &th[k]))
            emu_die("cannot start a replay thread");
    }
    for (int k = 0; k < ntids; k++)
        pthread_join(t[k], NULL);
    return 0;
}

int emu_replay_run(const emu_opts *o)
{
    replay rp = {.o = o};
    rp.w = (emu_world){.o = o, .plugin_spec = o->plugin ? o->plugin : getenv("NCCL_PROFILER_PLUGIN")};
    pthread_mutex_init(&rp.w.lock, NULL);
    pthread_mutex_init(&rp.mu, NULL);
    pthread_cond_init(&rp.cv, NULL);
    nsc_json_doc *docs = NULL;
    size_t ndocs = 0;
    int rc = load_log(&rp, o->replay, &docs, &ndocs);
    char acct[] = "/tmp/ncclscope-emu-replay.XXXXXX";
    int fd = rc ? -1 : mkstemp(acct);
    if (fd >= 0) {
        close(fd);
        size_t ninit = 0;
        for (size_t i = 0; i < rp.ncalls; i++)
            ninit += rp.calls[i].kind == C_INIT;
        rp.map_cap = rp.ncalls * 2 + 16;
        rp.map = calloc(rp.map_cap, sizeof *rp.map);
        rp.ranks = calloc(ninit + 1, sizeof *rp.ranks);
        rp.w.epoch_ns = emu_true_ns();
        if (!rp.map || !rp.ranks || emu_acct_create(acct, (uint32_t)ninit, 1, 1) ||
            emu_acct_map(acct, &rp.w.acct))
            emu_die("cannot set up the replay");
        rc = replay_calls(&rp);
        for (int i = 0; i < rp.nranks; i++)
            emu_rank_close(&rp.ranks[i]); /* those the log never finalized */
        emu_acct_unmap(&rp.w.acct);
        emu_proc_result proc = {.pid = getpid(), .status = 0};
        snprintf(proc.acct_path, sizeof proc.acct_path, "%s", acct);
        rc |= emu_summary_write(o, o->summary, &proc, 1, rp.w.epoch_ns);
        unlink(acct);
        if (rp.unmapped_parents)
            fprintf(stderr, "ncclscope-emu: %llu parent handles were not in the log\n",
                    (unsigned long long)rp.unmapped_parents);
    } else if (rc == 0) {
        emu_die("cannot create a temporary file");
    }
    for (size_t i = 0; i < ndocs; i++)
        nsc_json_free(&docs[i]);
    free(docs);
    free(rp.calls);
    free(rp.map);
    free(rp.ranks);
    pthread_mutex_destroy(&rp.w.lock);
    return rc ? 1 : 0;
}
