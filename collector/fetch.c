/* fetch.c: the collector's detail fetches (see fetch.h). */
#include "fetch.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "fnv.h"
#include "json.h"

#define ASKED 16   /* fetches waiting to be sent */
#define RECENT 64  /* fetches whose job a chunk is told by */

typedef struct agent {
    char name[64], host[64];
    uint8_t ident[256];
    size_t len;
    int answered;                  /* a chunk came: held_* say what its ring held */
    uint64_t held_from, held_to;
} agent;

typedef struct asked {
    uint64_t id, from_ns, to_ns;
    char job[64];
} asked;

struct nsc_cfetch {
    pthread_mutex_t mu;      /* guards q, nq, next_id and the agents (the HTTP thread asks and reads) */
    asked q[ASKED];
    unsigned nq;
    uint64_t next_id;
    asked recent[RECENT];    /* ingest thread only from here on */
    unsigned nrecent;
    agent *agents;
    size_t nagents, max_agents;
};

nsc_cfetch *nsc_cfetch_new(size_t max_agents)
{
    nsc_cfetch *f = calloc(1, sizeof *f);
    if (!f || !(f->agents = calloc(max_agents ? max_agents : 1, sizeof *f->agents))) {
        free(f);
        return NULL;
    }
    pthread_mutex_init(&f->mu, NULL);
    f->max_agents = max_agents;
    f->next_id = 1;
    return f;
}

void nsc_cfetch_free(nsc_cfetch *f)
{
    if (!f)
        return;
    pthread_mutex_destroy(&f->mu);
    free(f->agents);
    free(f);
}

uint64_t nsc_cfetch_ask(nsc_cfetch *f, const char *job, uint64_t from_ns, uint64_t to_ns)
{
    uint64_t id = 0;
    pthread_mutex_lock(&f->mu);
    if (f->nq < ASKED) {
        asked *a = &f->q[f->nq++];
        a->id = id = f->next_id++;
        a->from_ns = from_ns;
        a->to_ns = to_ns;
        memset(a->job, 0, sizeof a->job);
        memcpy(a->job, job, strnlen(job, sizeof a->job - 1));
    }
    pthread_mutex_unlock(&f->mu);
    return id;
}

/* The agent named name, added if new (NULL: max_agents known already). */
static agent *agent_of(nsc_cfetch *f, const char *name)
{
    size_t i = 0;
    while (i < f->nagents && strcmp(f->agents[i].name, name) != 0)
        i++;
    if (i == f->nagents && f->nagents == f->max_agents)
        return NULL;  /* as many as max_agents: the collector takes no more senders anyway */
    if (i == f->nagents++)
        memcpy(f->agents[i].name, name, sizeof f->agents[i].name);
    return &f->agents[i];
}

void nsc_cfetch_agent(nsc_cfetch *f, const char *name, const uint8_t *ident, size_t len)
{
    pthread_mutex_lock(&f->mu);
    agent *a = agent_of(f, name);
    if (a) {
        a->len = len < sizeof a->ident ? len : sizeof a->ident;
        memcpy(a->ident, ident, a->len);
    }
    pthread_mutex_unlock(&f->mu);
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

/* The ROUTER is the ingest thread's; the agents' table is read under mu. */
static void send_one(const nsc_cfetch *f, void *router, const asked *q, unsigned *sent)
{
    for (size_t i = 0; i < f->nagents; i++) {
        nsc_a2c_fetch m = {.id = q->id, .from_ns = q->from_ns, .to_ns = q->to_ns};
        uint8_t buf[NSC_A2C_FETCH_MAX];
        memcpy(m.agent, f->agents[i].name, sizeof m.agent);
        memcpy(m.job, q->job, sizeof m.job);
        size_t n = nsc_a2c_encode_fetch(&m, buf);
        if (zmq_send(router, f->agents[i].ident, f->agents[i].len, ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0 &&
            zmq_send(router, buf, n, ZMQ_DONTWAIT) == (int)n)
            (*sent)++;
    }
}

unsigned nsc_cfetch_send(nsc_cfetch *f, void *router)
{
    asked q[ASKED];
    unsigned n, sent = 0;
    pthread_mutex_lock(&f->mu);
    n = f->nq;
    memcpy(q, f->q, n * sizeof *q);
    f->nq = 0;
    pthread_mutex_unlock(&f->mu);
    for (unsigned i = 0; i < n; i++) {
        pthread_mutex_lock(&f->mu);
        send_one(f, router, &q[i], &sent);
        pthread_mutex_unlock(&f->mu);
        f->recent[f->nrecent++ % RECENT] = q[i];
    }
    return sent;
}

/* The job fetch id asked for ("" if it is not among the recent ones). */
static const char *job_of(const nsc_cfetch *f, uint64_t id)
{
    unsigned n = f->nrecent < RECENT ? f->nrecent : RECENT;
    for (unsigned i = 0; i < n; i++)
        if (f->recent[i].id == id)
            return f->recent[i].job;
    return "";
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
    const char *job = job_of(f, d.id);
    pthread_mutex_lock(&f->mu);
    agent *a = agent_of(f, d.agent);
    if (a) {
        a->answered = 1;
        memcpy(a->host, d.host, sizeof a->host);
        a->held_from = d.held_from_ns;
        a->held_to = d.held_to_ns;
    }
    pthread_mutex_unlock(&f->mu);
    uint64_t epoch = nsc_fnv1a(d.epoch, job, strlen(job)) | 1ull << 63;
    for (uint32_t i = 0, j; i < d.npieces; i = j) {
        for (j = i + 1; j < d.npieces && d.pieces[j].seq == d.pieces[i].seq; j++)
            ;
        nsc_item *it = item_of(&d, epoch, d.pieces + i, j - i, lim, max_ranks);
        if (!it) {
            (*bad)++;
            continue;
        }
        it->detail = 1;
        emit(arg, it);
    }
    rc = (int)d.npieces;
    nsc_a2c_detail_release(&d);
    return rc;
}
