/* pxn.c: PXN, where a rank's network ProxyOps run in another process.
 *
 * The originator writes one emu_pxn_msg per ProxyOp into a pipe (set up by the
 * launcher) to the process of the next local rank on its node. That process's
 * PXN thread calls startEvent with the originator's context, the originator's
 * Coll handle as parentObj and proxyOp.pid = originator pid, as NCCL's proxy
 * does. Before it passes a foreign address on, it reserves the page PROT_NONE
 * (MAP_FIXED_NOREPLACE) so a plugin that dereferences it faults for sure; an
 * address already mapped in this process is counted as unguarded.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "emu.h"

#define MAX_GUARDED 256

typedef struct emu_pxn {
    int wfd, rfd;        /* -1 when not used */
    pthread_t thread;
    bool serving;
    emu_rank *rank;      /* this process's rank that plays the proxy */
    uint64_t born_ns;    /* the starting thread's time as it started the server */
    uintptr_t seen[MAX_GUARDED]; /* pages already guarded or found mapped */
    int nseen;
} emu_pxn;

/* Set by cluster.c from the worker spec. */
int emu_pxn_setup(emu_world *w, int wfd, int rfd)
{
    if (wfd < 0 && rfd < 0)
        return 0;
    emu_pxn *p = calloc(1, sizeof *p);
    if (!p)
        return -1;
    p->wfd = wfd;
    p->rfd = rfd;
    w->pxn = p;
    return 0;
}

bool emu_pxn_active(const emu_world *w)
{
    return w->pxn && w->pxn->wfd >= 0;
}

int emu_pxn_send(emu_world *w, const emu_pxn_msg *m)
{
    const char *b = (const char *)m;
    size_t left = sizeof *m;
    while (left) {
        ssize_t n = write(w->pxn->wfd, b, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        b += n;
        left -= (size_t)n;
    }
    return 0;
}

int emu_pxn_guard(uintptr_t addr)
{
    long page = sysconf(_SC_PAGESIZE);
    void *base = (void *)(addr & ~(uintptr_t)(page - 1));
    void *m = mmap(base, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (m == base)
        return 1;
    if (m != MAP_FAILED) { /* an old kernel ignored NOREPLACE and placed it elsewhere */
        munmap(m, (size_t)page);
        return 0;
    }
    return errno == EEXIST ? 0 : -1;
}

bool emu_pxn_probe(uintptr_t addr)
{
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL); /* no sanitizer report: just die */
        volatile const char *p = (volatile const char *)addr;
        _exit(*p == 0x5a ? 3 : 2);
    }
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return false;
    return WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV;
}

/* Guard (and optionally probe) each distinct foreign page once. */
static void guard_once(emu_pxn *p, emu_acct *a, uintptr_t addr, bool probe)
{
    if (!addr)
        return;
    uintptr_t page = addr & ~(uintptr_t)(sysconf(_SC_PAGESIZE) - 1);
    for (int i = 0; i < p->nseen; i++)
        if (p->seen[i] == page)
            return;
    if (p->nseen < MAX_GUARDED)
        p->seen[p->nseen++] = page;
    if (emu_pxn_guard(addr) == 1)
        a->pxn_guarded++;
    else
        a->pxn_unguarded++;
    if (probe) {
        a->pxn_probed++;
        a->pxn_probe_segv += emu_pxn_probe(addr);
    }
}

/* One leg of an origin's op; the op's legs run together once its last came,
 * so their steps interleave in time as the origin's would. */
#define MAX_PXN_LEGS 128

static void serve_one(emu_pxn *p, const emu_pxn_msg *m, bool probe, emu_leg_req *legs, int *n)
{
    emu_rank *r = p->rank;
    guard_once(p, r->acct, (uintptr_t)m->origin_ctx, probe);
    guard_once(p, r->acct, (uintptr_t)m->origin_coll, probe);
    emu_leg_req *q = &legs[(*n)++];
    *q = (emu_leg_req){.ev = {.type = NSC_T_PROXY_OP, .mask = m->mask,
                              .parent = (void *)(uintptr_t)m->origin_coll, .rank = m->rank,
                              .comm_id = m->comm_id},
                       .ctx = (void *)(uintptr_t)m->origin_ctx, .step_bytes = (size_t)m->step_bytes,
                       .t0 = m->t0, .t1 = m->t1};
    q->ev.d.proxy_op.pid = (pid_t)m->origin_pid;
    q->ev.d.proxy_op.ch = (uint8_t)m->ch;
    q->ev.d.proxy_op.peer = m->peer;
    q->ev.d.proxy_op.nsteps = m->nsteps;
    q->ev.d.proxy_op.chunk = m->chunk;
    q->ev.d.proxy_op.is_send = m->is_send;
    if (m->last || *n == MAX_PXN_LEGS) {
        emu_timeline_foreign(r, legs, *n);
        *n = 0;
    }
}

static void *serve_main(void *arg)
{
    emu_world *w = arg;
    emu_pxn *p = w->pxn;
    pthread_mutex_lock(&w->lock);
    emu_acct_note_tid(p->rank->acct);
    pthread_mutex_unlock(&w->lock);
    emu_clock_begin(p->born_ns); /* the machine's delay in starting it is no part of the job */
    emu_pxn_msg m;
    size_t got = 0;
    emu_leg_req *legs = calloc(MAX_PXN_LEGS, sizeof *legs);
    int nlegs = 0;
    if (!legs)
        emu_die("out of memory");
    for (;;) {
        ssize_t n = read(p->rfd, (char *)&m + got, sizeof m - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* the originator closed its end: it is done (or dead) */
        got += (size_t)n;
        if (got < sizeof m)
            continue;
        got = 0;
        serve_one(p, &m, w->o->pxn_probe, legs, &nlegs);
    }
    if (nlegs) /* an origin killed mid-op: what it sent still runs */
        emu_timeline_foreign(p->rank, legs, nlegs);
    free(legs);
    return NULL;
}

int emu_pxn_serve_start(emu_world *w, emu_rank *proxy_rank)
{
    emu_pxn *p = w->pxn;
    if (!p || p->rfd < 0)
        return 0;
    p->rank = proxy_rank;
    p->born_ns = emu_clock_stamp_ns();
    if (pthread_create(&p->thread, NULL, serve_main, w))
        return -1;
    p->serving = true;
    return 0;
}

/* Close our sending end (our peer's server sees EOF), then wait for our own
 * server to finish what it was sent. */
void emu_pxn_serve_join(emu_world *w)
{
    emu_pxn *p = w->pxn;
    if (!p)
        return;
    if (p->wfd >= 0)
        close(p->wfd);
    if (p->serving)
        pthread_join(p->thread, NULL);
    if (p->rfd >= 0)
        close(p->rfd);
    free(p);
    w->pxn = NULL;
}
