/* fetch.c: the collector's detail fetches (see fetch.h). */
#include "fetch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "fnv.h"
#include "json.h"

#define QUEUED_MAX 16   /* fetches waiting to be sent */
#define SLOTS 64        /* fetches remembered, queued or sent */
/* A record reaches the agent within this of its event (a plugin's batch
 * waits at most heartbeat_ms, 1 s by default): the end of a window on the
 * collector's clock is widened by it, as docs/protocol.md asks. */
#define RECV_LAG_NS 2000000000ull
#define JOBS 8          /* an agent's jobs remembered, the last heard */

typedef struct agent {
    char name[64], host[64];
    uint8_t ident[256];
    size_t len;
    int answered;                  /* a chunk came: held_* say what its ring held */
    uint64_t held_from, held_to;
    char jobs[JOBS][64];           /* the last jobs its batches carried: a fetch goes to these agents */
    unsigned njobs;
} agent;

enum { FREE, QUEUED, SENT };
enum { NOT_ASKED, ASKED, ANSWERED };  /* an agent's part in a fetch */

typedef struct asked {
    int state;
    int aligned;               /* the window is on the collector's clock */
    uint64_t id, from_ns, to_ns;
    char job[64];
    size_t nagents;            /* agents [0, nagents) were known when it was sent */
} asked;

struct nsc_cfetch {
    pthread_mutex_t mu;        /* guards everything but items */
    asked slot[SLOTS];
    atomic_uint_fast64_t items[SLOTS];  /* a slot's batches the writer has not freed yet */
    uint8_t *part;             /* [SLOTS][max_agents]: each agent's part (NOT_ASKED, ...) */
    uint64_t next_id;
    nsc_cfetch_clock_fn *clock;
    void *clock_arg;
    agent *agents;
    size_t nagents, max_agents;
};

nsc_cfetch *nsc_cfetch_new(size_t max_agents, nsc_cfetch_clock_fn *clock, void *clock_arg)
{
    nsc_cfetch *f = calloc(1, sizeof *f);
    size_t n = max_agents ? max_agents : 1;
    if (!f || !(f->agents = calloc(n, sizeof *f->agents)) || !(f->part = calloc(SLOTS, n))) {
        if (f)
            free(f->agents);
        free(f);
        return NULL;
    }
    pthread_mutex_init(&f->mu, NULL);
    f->max_agents = max_agents;
    f->next_id = 1;
    f->clock = clock;
    f->clock_arg = clock_arg;
    return f;
}

void nsc_cfetch_free(nsc_cfetch *f)
{
    if (!f)
        return;
    pthread_mutex_destroy(&f->mu);
    free(f->part);
    free(f->agents);
    free(f);
}

/* A slot for a new fetch: a free one, else the oldest sent one with no
 * batch on its way (it is forgotten); -1 when 16 are queued or none is. */
static int take_slot(nsc_cfetch *f)
{
    int best = -1, queued = 0;
    for (int i = 0; i < SLOTS; i++) {
        const asked *a = &f->slot[i];
        queued += a->state == QUEUED;
        if (a->state == FREE && (best < 0 || f->slot[best].state != FREE))
            best = i;
        else if (a->state == SENT && atomic_load(&f->items[i]) == 0 &&
                 (best < 0 || (f->slot[best].state == SENT && a->id < f->slot[best].id)))
            best = i;
    }
    return queued >= QUEUED_MAX ? -1 : best;
}

uint64_t nsc_cfetch_ask(nsc_cfetch *f, const char *job, uint64_t from_ns, uint64_t to_ns, int aligned)
{
    uint64_t id = 0;
    pthread_mutex_lock(&f->mu);
    int i = take_slot(f);
    if (i >= 0) {
        asked *a = &f->slot[i];
        *a = (asked){.state = QUEUED, .aligned = aligned, .id = id = f->next_id++, .from_ns = from_ns, .to_ns = to_ns};
        memcpy(a->job, job, strnlen(job, sizeof a->job - 1));
        memset(f->part + (size_t)i * f->max_agents, 0, f->max_agents);
    }
    pthread_mutex_unlock(&f->mu);
    return id;
}

/* The slot of fetch id, or -1 (forgotten). Under mu. */
static int slot_of(const nsc_cfetch *f, uint64_t id)
{
    for (int i = 0; i < SLOTS; i++)
        if (f->slot[i].state != FREE && f->slot[i].id == id)
            return i;
    return -1;
}

/* The agent named name, added if new (NULL: max_agents known already). */
static agent *agent_of(nsc_cfetch *f, const char *name)
{
    size_t i = 0;
    while (i < f->nagents && strcmp(f->agents[i].name, name) != 0)
        i++;
    if (i == f->nagents && f->nagents == f->max_agents)
        return NULL;  /* as many as max_agents: the collector takes no more senders anyway */
    if (i == f->nagents)
        memcpy(f->agents[f->nagents++].name, name, sizeof f->agents[i].name);
    return &f->agents[i];
}

/* Agent a carries job (the last JOBS heard are kept). */
static void carries(agent *a, const char *job)
{
    unsigned n = a->njobs < JOBS ? a->njobs : JOBS;
    for (unsigned i = 0; i < n; i++)
        if (strcmp(a->jobs[(a->njobs - 1 - i) % JOBS], job) == 0)
            return;
    snprintf(a->jobs[a->njobs++ % JOBS], sizeof a->jobs[0], "%s", job);
}

static int has_job(const agent *a, const char *job)
{
    for (unsigned i = 0; i < JOBS && i < a->njobs; i++)
        if (strcmp(a->jobs[i], job) == 0)
            return 1;
    return 0;
}

void nsc_cfetch_agent(nsc_cfetch *f, const nsc_item *it)
{
    pthread_mutex_lock(&f->mu);
    agent *a = agent_of(f, it->a2c.agent);
    if (a) {
        a->len = it->ident_len < sizeof a->ident ? it->ident_len : sizeof a->ident;
        memcpy(a->ident, it->ident, a->len);
        snprintf(a->host, sizeof a->host, "%s", it->a2c.host);
        for (uint32_t i = 0; i < it->a2c.nsections; i++)
            carries(a, it->secs[i].hdr.proc.job);
        for (uint32_t i = 0; i < it->a2c.nlife; i++)
            carries(a, it->a2c.life[i].job);
    }
    pthread_mutex_unlock(&f->mu);
}

/* t + add - sub, held within [0, UINT64_MAX]; the ends of an unbounded
 * window stay where they are. */
static uint64_t move(uint64_t t, uint64_t add, uint64_t sub)
{
    if (t == 0 || t == UINT64_MAX)
        return t;
    t = add > UINT64_MAX - t ? UINT64_MAX : t + add;
    return sub > t ? 0 : t - sub;
}

/* The host's offset (collector - host) as two non-negative halves, and
 * its bound: none without a model. */
static void offset_of(const nsc_cfetch *f, const char *host, uint64_t ref_ns, uint64_t *ahead, uint64_t *behind,
                      uint64_t *err)
{
    uint64_t off = 0;
    *err = 0;
    if (f->clock(f->clock_arg, host, ref_ns, &off, err))
        off = 0;
    *ahead = (int64_t)off > 0 ? off : 0;           /* the collector's clock is ahead by this */
    *behind = (int64_t)off < 0 ? (uint64_t)-(int64_t)off : 0;
}

/* Fetch a's window on agent g's host clock. Under mu. */
static void window_of(const nsc_cfetch *f, const asked *a, const agent *g, uint64_t *from, uint64_t *to)
{
    uint64_t ahead, behind, err;
    *from = a->from_ns;
    *to = a->to_ns;
    if (!a->aligned)
        return;
    offset_of(f, g->host, a->from_ns ? a->from_ns : a->to_ns, &ahead, &behind, &err);
    *from = move(move(*from, behind, ahead), 0, err);
    *to = move(move(*to, behind, ahead), err + RECV_LAG_NS, 0);
}

int nsc_cfetch_done(nsc_cfetch *f, uint64_t id)
{
    pthread_mutex_lock(&f->mu);
    int i = slot_of(f, id), done = i < 0;
    if (i >= 0 && f->slot[i].state == SENT && atomic_load(&f->items[i]) == 0) {
        const uint8_t *part = f->part + (size_t)i * f->max_agents;
        size_t n = 0;
        while (n < f->slot[i].nagents && part[n] != ASKED)
            n++;
        done = n == f->slot[i].nagents;
    }
    pthread_mutex_unlock(&f->mu);
    return done;
}

/* Why agent g (index j) holds less than fetch a (slot i) asked for, or NULL. */
static const char *missing(const nsc_cfetch *f, int i, size_t j, const agent *g)
{
    uint64_t from, to;
    uint8_t part = f->part[(size_t)i * f->max_agents + j];
    if (part != ANSWERED)
        return part == ASKED ? "no answer" : NULL;
    if (!g->held_from && !g->held_to)
        return "ring empty";
    window_of(f, &f->slot[i], g, &from, &to);
    return f->slot[i].from_ns && from < g->held_from ? "older than the ring" : NULL;
}

int nsc_cfetch_report_json(nsc_cfetch *f, uint64_t id, FILE *out, int *complete)
{
    pthread_mutex_lock(&f->mu);
    int i = slot_of(f, id), rc = 0;
    size_t n = 0, nagents = i >= 0 ? f->slot[i].nagents : 0;
    fprintf(out, "{\"fetch\":%llu,\"missing\":[", (unsigned long long)id);
    for (size_t j = 0; j < nagents && !rc; j++) {
        const agent *g = &f->agents[j];
        const char *why = missing(f, i, j, g);
        if (!why)
            continue;
        fputs(n++ ? ",{\"agent\":" : "{\"agent\":", out);
        nsc_json_write_str(out, g->name);
        fputs(",\"host\":", out);
        nsc_json_write_str(out, g->host);
        fputs(",\"reason\":", out);
        nsc_json_write_str(out, why);
        if (why[0] != 'n') {
            uint64_t ahead = 0, behind = 0, err;
            if (f->slot[i].aligned)
                offset_of(f, g->host, g->held_from, &ahead, &behind, &err);
            fprintf(out, ",\"held_from_ns\":%llu,\"held_to_ns\":%llu",
                    (unsigned long long)move(g->held_from, ahead, behind),
                    (unsigned long long)move(g->held_to, ahead, behind));
        }
        rc = fputs("}", out) < 0;
    }
    pthread_mutex_unlock(&f->mu);
    *complete = i >= 0 && !n;
    return rc || fprintf(out, "],\"complete\":%s}", *complete ? "true" : "false") < 0 ? -1 : 0;
}

int nsc_cfetch_held_json(nsc_cfetch *f, FILE *out)
{
    int rc = fputs("[", out) < 0;
    pthread_mutex_lock(&f->mu);
    for (size_t i = 0, n = 0; i < f->nagents && !rc; i++) {
        const agent *a = &f->agents[i];
        if (!a->answered)
            continue;
        fputs(n++ ? ",{\"agent\":" : "{\"agent\":", out);
        nsc_json_write_str(out, a->name);
        fputs(",\"host\":", out);
        nsc_json_write_str(out, a->host);
        rc = fprintf(out, ",\"from_ns\":%llu,\"to_ns\":%llu}", (unsigned long long)a->held_from,
                     (unsigned long long)a->held_to) < 0;
    }
    pthread_mutex_unlock(&f->mu);
    return rc || fputs("]", out) < 0 ? -1 : 0;
}

/* Send a's window (slot k) to every agent that carried its job (the
 * ROUTER is the ingest thread's). Under mu. */
static void send_one(nsc_cfetch *f, void *router, int k, unsigned *sent)
{
    asked *a = &f->slot[k];
    uint8_t *part = f->part + (size_t)k * f->max_agents;
    a->state = SENT;
    a->nagents = f->nagents;
    for (size_t i = 0; i < f->nagents; i++) {
        if (!has_job(&f->agents[i], a->job))
            continue;
        nsc_a2c_fetch m = {.id = a->id};
        uint8_t buf[NSC_A2C_FETCH_MAX];
        window_of(f, a, &f->agents[i], &m.from_ns, &m.to_ns);
        memcpy(m.agent, f->agents[i].name, sizeof m.agent);
        memcpy(m.job, a->job, sizeof m.job);
        size_t n = nsc_a2c_encode_fetch(&m, buf);
        part[i] = ASKED;  /* one the socket did not take is an agent that does not answer */
        if (zmq_send(router, f->agents[i].ident, f->agents[i].len, ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0 &&
            zmq_send(router, buf, n, ZMQ_DONTWAIT) == (int)n)
            (*sent)++;
    }
}

unsigned nsc_cfetch_send(nsc_cfetch *f, void *router)
{
    unsigned sent = 0;
    pthread_mutex_lock(&f->mu);
    for (int i = 0; i < SLOTS; i++)
        if (f->slot[i].state == QUEUED)
            send_one(f, router, i, &sent);
    pthread_mutex_unlock(&f->mu);
    return sent;
}

static void free_msg(void *data, void *hint)
{
    (void)hint;
    free(data);
}

/* The n pieces of one seq as a batch item (NULL: it did not decode). */
static nsc_item *item_of(const nsc_a2c_detail *d, uint64_t epoch, const nsc_a2c_piece *p, uint32_t n,
                         const nsc_dec_limits *lim, int32_t max_ranks)
{
    nsc_a2c_section *secs = calloc(n, sizeof *secs);
    if (!secs)
        return NULL;
    for (uint32_t i = 0; i < n; i++)
        secs[i] = (nsc_a2c_section){p[i].data, p[i].len};
    nsc_a2c_batch b = {.epoch = epoch, .seq = p[0].seq, .nsections = n, .sections = secs};
    memcpy(b.agent, d->agent, sizeof b.agent);
    memcpy(b.host, d->host, sizeof b.host);
    uint8_t *data = malloc(nsc_a2c_batch_bound(&b));
    nsc_item *it = NULL;
    zmq_msg_t body;
    if (data && zmq_msg_init_data(&body, data, nsc_a2c_encode_batch(&b, data), free_msg, NULL) == 0) {
        unsigned reason;
        char name[64];
        uint64_t applied = 0, unplaced = 0;
        it = nsc_item_batch(&body, lim, max_ranks, &reason, name, &applied, &unplaced);
        zmq_msg_close(&body);
    } else {
        free(data);
    }
    free(secs);
    return it;
}

int nsc_cfetch_take(nsc_cfetch *f, const void *buf, size_t len, const nsc_dec_limits *lim, int32_t max_ranks,
                    nsc_cfetch_emit_fn *emit, void *arg, uint64_t *bad)
{
    nsc_a2c_detail d;
    int rc = nsc_a2c_decode_detail(buf, len, lim, &d);
    if (rc != NSC_WIRE_OK)
        return rc;
    char job[64] = "";  /* stays "" for a fetch forgotten: its pieces are stored apart */
    atomic_uint_fast64_t *items = NULL;
    pthread_mutex_lock(&f->mu);
    int i = slot_of(f, d.id);
    agent *a = agent_of(f, d.agent);
    if (a) {
        a->answered = 1;
        memcpy(a->host, d.host, sizeof a->host);
        a->held_from = d.held_from_ns;
        a->held_to = d.held_to_ns;
    }
    if (i >= 0 && f->slot[i].state == SENT) {
        memcpy(job, f->slot[i].job, sizeof job);
        items = &f->items[i];
        atomic_fetch_add(items, 1);  /* the chunk itself, until its batches count: the slot stays its fetch's */
        if (a && d.last)
            f->part[(size_t)i * f->max_agents + (size_t)(a - f->agents)] = ANSWERED;
    }
    pthread_mutex_unlock(&f->mu);
    uint64_t epoch = nsc_fnv1a(d.epoch, job, strlen(job)) | 1ull << 63;
    for (uint32_t k = 0, j; k < d.npieces; k = j) {
        for (j = k + 1; j < d.npieces && d.pieces[j].seq == d.pieces[k].seq; j++)
            ;
        nsc_item *it = item_of(&d, epoch, d.pieces + k, j - k, lim, max_ranks);
        if (!it) {
            (*bad)++;
            continue;
        }
        it->detail = 1;
        if (items) {  /* counted until the writer frees it (item.h) */
            atomic_fetch_add(items, 1);
            it->inflight = items;
        }
        emit(arg, it);
    }
    if (items)
        atomic_fetch_sub(items, 1);
    rc = (int)d.npieces;
    nsc_a2c_detail_release(&d);
    return rc;
}
