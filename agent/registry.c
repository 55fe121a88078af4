/* registry.c: the process registry (see registry.h). */
#include "registry.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "grow.h"

#define NBUCKETS 4096u
#define MAX_TABLE 65536u  /* ids are u16 */

struct nsc_registry {
    nsc_reg_proc *by_id[NBUCKETS], *by_key[NBUCKETS];
    uint64_t next_key;
    nsc_reg_counts counts;
    struct pollfd *pfds;     /* scratch for nsc_reg_check */
    nsc_reg_proc **pprocs;
    size_t pfds_cap, pprocs_cap;
};

static uint32_t id_hash(const char *host, uint32_t pid)
{
    uint32_t h = 2166136261u ^ pid;
    for (const char *p = host; *p; p++)
        h = (h ^ (uint8_t)*p) * 16777619u;
    return (h ^ (h >> 15)) % NBUCKETS;
}

static uint32_t key_hash(uint64_t key) { return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 52) % NBUCKETS; }

nsc_registry *nsc_reg_new(void) { return calloc(1, sizeof(nsc_registry)); }

static void proc_free(nsc_reg_proc *p)
{
    if (p->pidfd >= 0)
        close(p->pidfd);
    free(p->ctxs);
    free(p->strs);
    free(p);
}

void nsc_reg_free(nsc_registry *r)
{
    if (!r)
        return;
    for (unsigned b = 0; b < NBUCKETS; b++)
        for (nsc_reg_proc *p = r->by_id[b], *n; p; p = n) {
            n = p->next_by_id;
            proc_free(p);
        }
    free(r->pfds);
    free(r->pprocs);
    free(r);
}

nsc_reg_proc *nsc_reg_find(nsc_registry *r, const char *host, uint32_t pid)
{
    nsc_reg_proc *best = NULL;
    for (nsc_reg_proc *p = r->by_id[id_hash(host, pid)]; p; p = p->next_by_id)
        if (p->id.pid == pid && strcmp(p->id.host, host) == 0 && (!best || p->key > best->key))
            best = p;  /* the newest incarnation */
    return best;
}

nsc_reg_proc *nsc_reg_by_key(nsc_registry *r, uint64_t key)
{
    for (nsc_reg_proc *p = r->by_key[key_hash(key)]; p; p = p->next_by_key)
        if (p->key == key)
            return p;
    return NULL;
}

static int open_pidfd(uint32_t pid)
{
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
#else
    (void)pid;
    return -1;
#endif
}

nsc_reg_proc *nsc_reg_get(nsc_registry *r, const nsc_batch_hdr *hdr, uint64_t now_ns, unsigned *news)
{
    nsc_reg_proc *p = nsc_reg_find(r, hdr->proc.host, hdr->proc.pid);
    int created = 0;
    if (p && p->alive && p->finished && !hdr->final) {
        /* The plugin was loaded again after it shut down: reported anew. */
        p->finished = 0;
        created = 1;
    } else if (p && !p->alive && p->reason == NSC_A2C_REASON_SILENT) {
        /* Only slow, not gone: the same incarnation is back, reported anew. */
        p->alive = 1;
        p->reason = NSC_A2C_REASON_NONE;
        p->pidfd = open_pidfd(hdr->proc.pid);
        r->counts.dead--;
        r->counts.alive++;
        created = 1;
    } else if (p && !p->alive && hdr->seq > p->last_seq) {
        /* Its batches were still queued when its exit was seen: the same
         * incarnation, still dead, not a new one (a reused pid starts at 0). */
    } else if (!p || !p->alive) {
        if (!(p = calloc(1, sizeof *p)))
            return NULL;
        p->key = ++r->next_key;
        p->id = hdr->proc;
        p->first_ns = now_ns;
        p->alive = 1;
        p->pidfd = open_pidfd(hdr->proc.pid);
        uint32_t b = id_hash(p->id.host, p->id.pid), k = key_hash(p->key);
        p->next_by_id = r->by_id[b];
        r->by_id[b] = p;
        p->next_by_key = r->by_key[k];
        r->by_key[k] = p;
        r->counts.alive++;
        r->counts.started_total++;
        created = 1;
    }
    *news = created ? NSC_REG_STARTED : 0;
    if (hdr->final && !p->finished) {
        p->finished = 1;
        *news |= NSC_REG_FINISHED;
    }
    p->id = hdr->proc;
    p->clock_err_ns = hdr->clock_err_ns;
    p->last_ns = now_ns;
    p->last_seq = hdr->seq;
    p->batches++;
    return p;
}

/* Make entry `id` of a table indexed by id exist, the new entries zeroed. */
static int grow(void *tabp, size_t *n, uint32_t id, size_t elem)
{
    if (id >= MAX_TABLE)
        return -1;
    return nsc_grow_zeroed(tabp, (size_t)id + 1, n, elem, 16);
}

const char *nsc_reg_str(const nsc_reg_proc *p, nsc_str s) { return s < p->nstrs ? p->strs[s] : ""; }

/* Remember the last Coll seqNumber per (communicator, func). */
static void note_progress(nsc_reg_proc *p, const nsc_event *ev)
{
    if (ev->type != NSC_T_COLL || ev->ctx >= p->nctxs || !p->ctxs[ev->ctx].defined)
        return;
    const nsc_ctx_def *c = &p->ctxs[ev->ctx].def;
    const char *func = nsc_reg_str(p, ev->d.coll.func);
    for (uint32_t i = 0; i < p->nprogress; i++) {
        nsc_a2c_progress *g = &p->progress[i];
        if (g->comm_id == c->comm_id && g->rank == c->rank && strcmp(g->func, func) == 0) {
            if (ev->d.coll.seq >= g->seq)
                g->seq = ev->d.coll.seq;
            return;
        }
    }
    if (p->nprogress == NSC_REG_PROGRESS_MAX)
        return;  /* more (comm, func) pairs than reported; the oldest ones stay */
    nsc_a2c_progress *g = &p->progress[p->nprogress++];
    g->comm_id = c->comm_id;
    g->rank = c->rank;
    g->seq = ev->d.coll.seq;
    strcpy(g->func, func);
}

int nsc_reg_learn(nsc_registry *r, nsc_reg_proc *p, const nsc_scan *s)
{
    const nsc_batch *b = &s->b;
    int rc = 0;
    (void)r;
    if (b->hdr.seq == 0 && p->batches > 1) {
        /* A new stream from the same process (the plugin was loaded again):
         * its ids start afresh, and so do its tables. */
        memset(p->ctxs, 0, (size_t)p->nctxs * sizeof *p->ctxs);
        memset(p->strs, 0, (size_t)p->nstrs * sizeof *p->strs);
    }
    for (size_t i = 0; i < b->nstrs; i++) {
        const nsc_str_def *s = &b->strs[i];
        if (grow(&p->strs, &p->nstrs, s->id, sizeof *p->strs) == 0)
            memcpy(p->strs[s->id], s->text, sizeof p->strs[0]);
        else
            rc = -1;
    }
    for (size_t i = 0; i < b->nctxs; i++) {
        const nsc_ctx_def *c = &b->ctxs[i];
        if (c->index != 0xffff && grow(&p->ctxs, &p->nctxs, c->index, sizeof *p->ctxs) == 0)
            p->ctxs[c->index] = (nsc_reg_ctx){*c, 1};
        else
            rc = -1;
    }
    for (size_t i = 0; i < b->nevents; i++)
        note_progress(p, &b->events[i]);
    p->events += s->nevents;
    if (b->has_counters)
        p->counters = b->counters;
    return rc;
}

static void mark_dead(nsc_registry *r, nsc_reg_proc *p, uint64_t now_ns, uint8_t reason,
                      void (*died)(void *, nsc_reg_proc *), void *arg)
{
    p->alive = 0;
    p->reason = reason;
    p->death_ns = now_ns;
    if (p->pidfd >= 0) {
        close(p->pidfd);
        p->pidfd = -1;
    }
    r->counts.alive--;
    r->counts.dead++;
    r->counts.died_total++;
    died(arg, p);
}

static int gone_by_kill(uint32_t pid) { return kill((pid_t)pid, 0) != 0 && errno == ESRCH; }

void nsc_reg_check(nsc_registry *r, uint64_t now_ns, uint64_t silent_ns,
                   void (*died)(void *arg, nsc_reg_proc *p), void *arg)
{
    size_t n = 0;
    if (nsc_grow_to(&r->pfds, r->counts.alive, &r->pfds_cap, sizeof *r->pfds, 16) ||
        nsc_grow_to(&r->pprocs, r->counts.alive, &r->pprocs_cap, sizeof *r->pprocs, 16))
        return;  /* checked again at the next tick */
    size_t room = r->pfds_cap < r->pprocs_cap ? r->pfds_cap : r->pprocs_cap;
    for (unsigned b = 0; b < NBUCKETS; b++)
        for (nsc_reg_proc *p = r->by_id[b]; p; p = p->next_by_id) {
            if (!p->alive)
                continue;
            if (p->pidfd < 0 ? gone_by_kill(p->id.pid) : 0)
                mark_dead(r, p, now_ns, NSC_A2C_REASON_EXITED, died, arg);
            else if (!p->finished && now_ns - p->last_ns > silent_ns)
                mark_dead(r, p, now_ns, NSC_A2C_REASON_SILENT, died, arg);
            else if (p->pidfd >= 0 && n < room) {
                r->pfds[n] = (struct pollfd){.fd = p->pidfd, .events = POLLIN};
                r->pprocs[n++] = p;
            }
        }
    if (n == 0 || poll(r->pfds, n, 0) <= 0)
        return;
    for (size_t i = 0; i < n; i++)
        if (r->pfds[i].revents)
            mark_dead(r, r->pprocs[i], now_ns, NSC_A2C_REASON_EXITED, died, arg);
}

static void unlink_key(nsc_registry *r, nsc_reg_proc *p)
{
    for (nsc_reg_proc **q = &r->by_key[key_hash(p->key)]; *q; q = &(*q)->next_by_key)
        if (*q == p) {
            *q = p->next_by_key;
            return;
        }
}

void nsc_reg_reap(nsc_registry *r, uint64_t now_ns, uint64_t linger_ns, void (*gone)(void *arg, nsc_reg_proc *p),
                  void *arg)
{
    for (unsigned b = 0; b < NBUCKETS; b++)
        for (nsc_reg_proc **q = &r->by_id[b]; *q;) {
            nsc_reg_proc *p = *q;
            if (p->alive || now_ns - p->death_ns < linger_ns) {
                q = &p->next_by_id;
                continue;
            }
            *q = p->next_by_id;
            unlink_key(r, p);
            r->counts.dead--;
            gone(arg, p);
            proc_free(p);
        }
}

void nsc_reg_counts_get(const nsc_registry *r, nsc_reg_counts *c) { *c = r->counts; }

void nsc_reg_each(const nsc_registry *r, void (*fn)(void *arg, const nsc_reg_proc *p), void *arg)
{
    for (unsigned b = 0; b < NBUCKETS; b++)
        for (const nsc_reg_proc *p = r->by_id[b]; p; p = p->next_by_id)
            fn(arg, p);
}
