/* gpuclock.h: per-rank GPU pTimer -> host CPU time conversion.
 *
 * Owns the fit of one GPU's globaltimer against a CPU time base from pairs
 * (pTimer, CPU time at which the proxy observed it). The query layer gives
 * the CPU times aligned through the host's clock model, so the line is in
 * collector time and a host clock step does not break it. The CPU time
 * is late by the polling delay, never early, so every pair bounds the true
 * line from above. The fit is the line under all pairs that lies closest to
 * them on average: the lower convex hull's edge over the pairs' mean pTimer,
 * its slope held within the drift a timer can have (1000 ppm).
 * Only hull vertices are kept (a pair off the hull never returns to it), so
 * memory stays small however many pairs arrive (docs/collector-clock.md).
 *
 * A pair seen later than the line (with its error bound) allows by more than
 * NSC_GPUCLOCK_LAG_MAX_NS is not a late poll but a timer of other work:
 * NCCL 2.29's KernelCh hands out an older task's timers once its work
 * counter fell behind the kernel's (docs/nccl-abi.md, "Known NCCL bugs"). It
 * is refused (NSC_GPUCLOCK_STALE), for the caller to count: it moves neither the line nor
 * the pairs' mean, and its timers are no fact about the work it came with.
 */
#ifndef NCCLSCOPE_GPUCLOCK_H
#define NCCLSCOPE_GPUCLOCK_H

#include <stddef.h>
#include <stdint.h>

enum nsc_gpuclock_err {
    NSC_GPUCLOCK_OK = 0,
    NSC_GPUCLOCK_ENOMEM = -1,
    NSC_GPUCLOCK_EEMPTY = -2,    /* no pair yet */
    NSC_GPUCLOCK_ETRUNC = -3,    /* serialized: ends early */
    NSC_GPUCLOCK_EMAGIC = -4,    /* serialized: not a GPU clock */
    NSC_GPUCLOCK_EVALUE = -5,    /* serialized: hull out of order or not convex */
    NSC_GPUCLOCK_ETRAILING = -6, /* serialized: bytes after the end */
    NSC_GPUCLOCK_STALE = 1       /* add: a pair far later than the line, refused */
};

/* The most a proxy thread's sight of a timer lags the timer, beyond the
 * line's bound: a poll of the KernelCh ring, not other work's timers. */
#define NSC_GPUCLOCK_LAG_MAX_NS 1000000u

const char *nsc_gpuclock_strerror(int err);

/* A hull vertex, relative to the first pair. */
typedef struct nsc_gpu_vertex {
    int64_t x;  /* pTimer - anchor pTimer */
    int64_t y;  /* (cpu - pTimer) - anchor (cpu - pTimer) */
} nsc_gpu_vertex;

typedef struct nsc_gpuclock {
    uint64_t anchor_ptimer;
    uint64_t anchor_cpu;
    nsc_gpu_vertex *hull;  /* lower convex hull, x strictly increasing */
    size_t nhull, cap;
    uint64_t npairs;
    double sum_x;          /* of all pairs: their mean x picks the fitted edge */
} nsc_gpuclock;

void nsc_gpuclock_init(nsc_gpuclock *g);
void nsc_gpuclock_free(nsc_gpuclock *g);
/* 0, NSC_GPUCLOCK_STALE (refused: the caller counts it) or an error. */
int nsc_gpuclock_add(nsc_gpuclock *g, uint64_t ptimer, uint64_t cpu_ns);

/* Whether a timer seen at cpu_ns is seen later than the line allows by more
 * than NSC_GPUCLOCK_LAG_MAX_NS: other work's timer, as add refuses it
 * (never for a 0 timer or time: missing, not stale). */
int nsc_gpuclock_stale(const nsc_gpuclock *g, uint64_t ptimer, uint64_t cpu_ns);
/* Whether a KernelCh's timers are other work's: its start or its stop timer
 * is stale against the host time it was seen at (the task whose slot it
 * read may have ended just before, so its stop alone can look in time). */
int nsc_gpuclock_kch_stale(const nsc_gpuclock *g, uint64_t ptimer_start, uint64_t seen_start, uint64_t ptimer_stop,
                           uint64_t seen_stop);
/* Convert; err_ns (may be NULL) gets an error bound estimate. */
int nsc_gpuclock_to_cpu(const nsc_gpuclock *g, uint64_t ptimer, uint64_t *cpu_ns,
                        uint64_t *err_ns);
/* The fitted drift (d cpu / d pTimer - 1); 0 with fewer than two vertices. */
double nsc_gpuclock_drift(const nsc_gpuclock *g);

size_t nsc_gpuclock_serialized_size(const nsc_gpuclock *g);
void nsc_gpuclock_serialize(const nsc_gpuclock *g, uint8_t *buf);
int nsc_gpuclock_deserialize(nsc_gpuclock *g, const void *buf, size_t len);

#endif
