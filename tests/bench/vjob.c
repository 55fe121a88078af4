/* vjob.c: the ring job nsc-vfeed plays, and its ground truth (vjob.h).
 *
 * One communicator of all ranks, one AllReduce called every pace_ns on
 * each rank (a few microseconds of jitter a rank), on a ring of two
 * channels in rank order. A rank's device starts a collective when its
 * host launched it and its previous one ended; the ring moves once every
 * rank started, 2(n-1) steps a channel, each step paced by the ring's
 * slowest link. Only the legs between nodes have network steps (NVLink and
 * shared memory have no proxy): the last rank of a node sends to the first
 * of the next, and their records carry those edges, as the agent folds a
 * rank's ProxyOps and ProxySteps. Faults:
 *   hang       rank `place` never calls collective `from`; the others wait
 *              in it (in-flight records hang_ns after their enqueue)
 *   stall      rank `place` stops sending on channel 0 at step 0 of
 *              collective `from`; every rank waits in it
 *   host_late  rank `place` calls 4 ms late from collective `from` on
 *   slow_link  node `place`'s link to the next node at a quarter of its
 *              bandwidth from collective `from` on
 * A stuck collective's progress on the stuck channels follows the ring: the
 * k-th rank after the one that stopped sent k steps, received k - 1.
 */
#include "vjob.h"

#include <stdlib.h>
#include <string.h>

#include "busbw.h"
#include "mix.h"

#define US 1000ull
#define LATE_NS (4000 * US)
#define ENQ_NS (3 * US)        /* API call to enqueue */
#define LAUNCH_NS (8 * US)     /* enqueue to kernel launch */
#define DONE_NS (12 * US)      /* kernel end to the host seeing it */
#define STEP_LAT_NS 1000ull    /* a network step's latency */
#define STEP_BYTES 98304ull    /* per step and channel */
#define CH_GBPS 12.5           /* a channel's share of a 25 GB/s NIC (bytes per ns) */
#define RING_NS (20 * US)      /* kernel start and end around the steps */
#define TRUTH_COLLS 12         /* collectives of a late fault listed in the summary */

static uint64_t mix(uint64_t a, uint64_t b)
{
    uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull) * 0xc2b2ae3d27d4eb4full;
    return h ^ (h >> 29);
}

static uint64_t steps_of(const nsc_vjob *j)
{
    return 2 * (uint64_t)(j->nranks - 1);
}

/* The fault's link is sent by the last rank of node `place`. */
static int slow_sender(const nsc_vjob *j, int rank, uint64_t k)
{
    return j->kind == NSC_VJ_SLOW_LINK && k >= j->from && rank == j->place * j->rpn + j->rpn - 1;
}

/* A step of the link rank sends on: latency plus its bytes at the channel's
 * bandwidth (a quarter of it on the slow link). */
static uint64_t step_ns(const nsc_vjob *j, int rank, uint64_t k)
{
    double bw = slow_sender(j, rank, k) ? CH_GBPS / 4 : CH_GBPS;
    return STEP_LAT_NS + (uint64_t)((double)STEP_BYTES / bw);
}

static int stuck(const nsc_vjob *j, uint64_t k)
{
    return (j->kind == NSC_VJ_HANG || j->kind == NSC_VJ_STALL) && k == j->from;
}

static uint64_t api_of(const nsc_vjob *j, int rank, uint64_t k)
{
    uint64_t t = j->t0 + k * j->pace_ns + mix(k, (uint64_t)rank) % (20 * US);
    return t + (j->kind == NSC_VJ_HOST_LATE && rank == j->place && k >= j->from ? LATE_NS : 0);
}

static uint64_t launch_of(const nsc_vjob *j, int rank, uint64_t k)
{
    return api_of(j, rank, k) + ENQ_NS + LAUNCH_NS;
}

static uint64_t kstart_of(const nsc_vjob *j, int rank, uint64_t k)
{
    uint64_t l = launch_of(j, rank, k), prev = k ? j->end[k - 1] : 0;
    return l > prev ? l : prev;
}

/* The ring's time for collective k: every step at the slowest link's pace. */
static uint64_t ring_ns(const nsc_vjob *j, uint64_t k)
{
    uint64_t slow = step_ns(j, j->place * j->rpn + j->rpn - 1, k), ok = step_ns(j, -1, k);
    return RING_NS + steps_of(j) * (slow > ok ? slow : ok);
}

int nsc_vj_init(nsc_vjob *j, int nodes, int rpn, uint64_t iters, uint64_t t0, uint64_t pace_ns, uint64_t hang_ns,
                int kind, int place, uint64_t from)
{
    *j = (nsc_vjob){.nodes = nodes, .rpn = rpn, .nranks = nodes * rpn, .nch = 2, .kind = kind, .place = place,
                    .from = from, .iters = iters, .t0 = t0, .pace_ns = pace_ns, .hang_ns = hang_ns};
    if (nodes < 1 || rpn < 1 || !iters || place < 0 ||
        place >= (kind == NSC_VJ_SLOW_LINK ? nodes : j->nranks) || from >= iters || !(j->end = calloc(iters, 8)))
        return -1;
    for (uint64_t k = 0; k < iters; k++) {
        if (k && j->end[k - 1] == NSC_VJ_NEVER) {
            j->end[k] = NSC_VJ_NEVER;
            continue;
        }
        uint64_t s = 0;
        for (int r = 0; r < j->nranks; r++) {
            uint64_t t = kstart_of(j, r, k);
            s = t > s ? t : s;
        }
        j->end[k] = stuck(j, k) ? NSC_VJ_NEVER : s + ring_ns(j, k);
    }
    return 0;
}

void nsc_vj_free(nsc_vjob *j)
{
    free(j->end);
    j->end = NULL;
}

uint64_t nsc_vj_colls(const nsc_vjob *j)
{
    return j->kind == NSC_VJ_HANG || j->kind == NSC_VJ_STALL ? j->from + 1 : j->iters;
}

static uint64_t gpu_end_of(const nsc_vjob *j, int rank, uint64_t k)
{
    return j->end[k] - mix((uint64_t)rank, k) % (4 * US);
}

uint64_t nsc_vj_due(const nsc_vjob *j, int rank, uint64_t k)
{
    if (k >= nsc_vj_colls(j) || (j->kind == NSC_VJ_HANG && rank == j->place && k == j->from))
        return NSC_VJ_NEVER;
    if (j->end[k] == NSC_VJ_NEVER)
        return api_of(j, rank, k) + ENQ_NS + j->hang_ns;
    return gpu_end_of(j, rank, k) + DONE_NS;
}

/* Steps rank completed sending (receiving, send 0) on a stuck channel: the
 * ring behind the rank that stopped. A hung rank never launched, so its
 * predecessor could not send either. */
static uint64_t stuck_steps(const nsc_vjob *j, int rank, int send)
{
    uint64_t n = (uint64_t)j->nranks, d = ((uint64_t)rank + n - (uint64_t)j->place) % n;
    if (!send)
        d = d ? d - 1 : n - 1;  /* it received what its predecessor sent */
    if (d == 0 || (j->kind == NSC_VJ_HANG && d == n - 1))
        return 0;
    return d < steps_of(j) ? d : steps_of(j);
}

/* One edge: steps of a channel in one direction, their times as the agent
 * folds them (a step's send wait to its end is the link's step, the rest
 * of a step waits for the GPU; a receive waits for the data). */
static nsc_ledger_edge edge_of(const nsc_vjob *j, int rank, uint64_t k, int ch, int send, uint64_t steps)
{
    int peer = (rank + (send ? 1 : j->nranks - 1)) % j->nranks;
    uint64_t link = step_ns(j, send ? rank : peer, k);
    uint64_t each = j->end[k] == NSC_VJ_NEVER ? link : (ring_ns(j, k) - RING_NS) / steps_of(j);
    nsc_ledger_edge e = {.peer = peer, .channel = (uint8_t)ch, .is_send = (uint8_t)send,
                         .last_state = send ? NSC_S_PROXY_STEP_SEND_WAIT : NSC_S_PROXY_STEP_RECV_WAIT,
                         .last_step = (int32_t)steps - 1, .steps = (uint32_t)steps, .bytes = steps * STEP_BYTES,
                         .step_sum_ns = steps * each, .step_max_ns = steps ? (uint32_t)(each + US / 2) : 0};
    if (send) {
        e.wait_send_ns = steps * link;
        e.wait_gpu_ns = e.step_sum_ns - e.wait_send_ns;
    } else {
        e.wait_gpu_ns = steps * (US / 2);
        e.wait_recv_ns = e.step_sum_ns - e.wait_gpu_ns;
    }
    return e;
}

static uint32_t edges_of(const nsc_vjob *j, int rank, uint64_t k, nsc_ledger_edge *edges)
{
    uint32_t n = 0;
    int local = rank % j->rpn;
    if (j->nodes < 2)
        return 0;
    for (int ch = 0; ch < j->nch; ch++)
        for (int send = 1; send >= 0; send--) {
            if (send ? local != j->rpn - 1 : local != 0)
                continue;
            int halted = j->end[k] == NSC_VJ_NEVER && (j->kind == NSC_VJ_HANG || ch == 0);
            edges[n++] = edge_of(j, rank, k, ch, send, halted ? stuck_steps(j, rank, send) : steps_of(j));
        }
    return n;
}

void nsc_vj_record(const nsc_vjob *j, int rank, uint64_t k, nsc_ledger_rec *out, nsc_ledger_edge *edges)
{
    uint64_t api = api_of(j, rank, k), done = j->end[k] != NSC_VJ_NEVER;
    uint64_t count = STEP_BYTES * (uint64_t)j->nranks * (uint64_t)j->nch / 4;
    *out = (nsc_ledger_rec){.comm_id = NSC_VJ_COMM, .seq = k, .rank = rank, .flags = done ? 0 : NSC_LEDGER_INFLIGHT,
                            .func = NSC_MIX_STR_ALLREDUCE, .datatype = NSC_MIX_STR_FLOAT, .algo = NSC_MIX_STR_RING,
                            .proto = NSC_MIX_STR_SIMPLE, .count = count,
                            .bytes = nsc_busbw_rule("AllReduce", j->nranks, count, 4).bytes, .root = -1,
                            .peer = -1, .nchannels = (uint8_t)j->nch, .api_ns = api, .enqueue_ns = api + ENQ_NS,
                            .launch_ns = launch_of(j, rank, k), .gpu_start_ns = kstart_of(j, rank, k),
                            .gpu_err_ns = 1500};
    if (done) {
        out->gpu_end_ns = gpu_end_of(j, rank, k);
        out->done_ns = out->gpu_end_ns + DONE_NS;
        out->gpu_spread_ns = 2000;
        out->nchannels_done = (uint8_t)j->nch;
    } else {
        out->nchannels_done = j->kind == NSC_VJ_STALL ? (uint8_t)(j->nch - 1) : 0;
    }
    out->nedges = edges_of(j, rank, k, edges);
    out->edges = edges;
}

int nsc_vj_kind(const char *name)
{
    static const char *const names[] = {"none", "hang", "stall", "host_late", "slow_link"};
    for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
        if (strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

/* ---- the summary ------------------------------------------------------------ */

/* The collectives the summary lists: those up to a stuck one (its ranks'
 * arrivals date a hang and a stall), or the first a late fault touched. */
static void listed(const nsc_vjob *j, uint64_t *lo, uint64_t *hi)
{
    int late = j->kind == NSC_VJ_HOST_LATE || j->kind == NSC_VJ_SLOW_LINK;
    *lo = late ? j->from : 0;
    *hi = late ? (j->from + TRUTH_COLLS < j->iters ? j->from + TRUTH_COLLS : j->iters) : nsc_vj_colls(j);
}

static void fault_json(const nsc_vjob *j, FILE *f)
{
    switch (j->kind) {
    case NSC_VJ_HANG:
        fprintf(f, "{\"kind\":\"hang\",\"rank\":%d,\"coll\":%llu}", j->place, (unsigned long long)j->from);
        break;
    case NSC_VJ_STALL:
        fprintf(f, "{\"kind\":\"stall\",\"rank\":%d,\"coll\":%llu,\"channel\":0,\"step\":0}", j->place,
                (unsigned long long)j->from);
        break;
    case NSC_VJ_HOST_LATE:
        fprintf(f, "{\"kind\":\"host_late\",\"rank\":%d,\"delay_ns\":%llu,\"every\":1}", j->place, LATE_NS);
        break;
    case NSC_VJ_SLOW_LINK:
        fprintf(f, "{\"kind\":\"slow_link\",\"from_node\":%d,\"to_node\":%d}", j->place, (j->place + 1) % j->nodes);
        break;
    }
}

/* A late fault's onset: the first collective it touched began (its first
 * rank's call) and the collectives it touched. */
static void truth_json(const nsc_vjob *j, FILE *f)
{
    uint64_t lo, hi, onset = NSC_VJ_NEVER;
    listed(j, &lo, &hi);
    for (int r = 0; r < j->nranks; r++) {
        uint64_t t = api_of(j, r, j->from);
        onset = t < onset ? t : onset;
    }
    fprintf(f, "[{\"kind\":\"%s\",\"onset\":{\"api_start_ns\":%llu,\"comm_id\":%llu},\"collectives\":[",
            j->kind == NSC_VJ_HOST_LATE ? "host_late" : "slow_link", (unsigned long long)onset, NSC_VJ_COMM);
    for (uint64_t k = lo; k < hi; k++)
        fprintf(f, "%s{\"comm_id\":%llu,\"func\":\"AllReduce\",\"seq\":%llu}", k > lo ? "," : "", NSC_VJ_COMM,
                (unsigned long long)k);
    fputs("]}]", f);
}

int nsc_vj_summary(const nsc_vjob *j, FILE *f)
{
    uint64_t lo, hi;
    listed(j, &lo, &hi);
    fprintf(f, "{\"scenario\":\"ring\",\"source\":\"nsc-vfeed\",\"faults\":[");
    fault_json(j, f);
    fputs("],\"fault_truth\":", f);
    if (j->kind == NSC_VJ_HOST_LATE || j->kind == NSC_VJ_SLOW_LINK)
        truth_json(j, f);
    else
        fputs("[]", f);
    fputs(",\"ranks\":[", f);
    for (int r = 0; r < j->nranks; r++) {
        fprintf(f, "%s{\"rank\":%d,\"nranks\":%d,\"host\":\"node%d\",\"pid\":%u,\"comm_id\":%llu,\"collectives\":[",
                r ? "," : "", r, j->nranks, r / j->rpn, nsc_vj_pid(r), NSC_VJ_COMM);
        for (uint64_t k = lo; k < hi && nsc_vj_due(j, r, k) != NSC_VJ_NEVER; k++) {
            uint64_t end = j->end[k] == NSC_VJ_NEVER ? 0 : gpu_end_of(j, r, k);
            fprintf(f, "%s{\"seq\":%llu,\"func\":\"AllReduce\",\"comm_id\":%llu,\"start_ns\":%llu,\"end_ns\":%llu,"
                    "\"complete_ns\":%llu}", k > lo ? "," : "", (unsigned long long)k, NSC_VJ_COMM,
                    (unsigned long long)api_of(j, r, k), (unsigned long long)end, (unsigned long long)end);
        }
        fputs("]}", f);
    }
    fputs("]}\n", f);
    return ferror(f) ? -1 : 0;
}
