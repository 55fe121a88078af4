/* rcint.h: what the root-cause files share (engine/diag/rc*.c and
 * rootcause.c); nothing outside them includes it.
 *
 * Three analyses of one communicator, each ending in problems with a
 * cause class and a place (diagnose.h):
 * - late ranks: at each collective the rank that arrived last (GPU side when
 *   kernel times exist), its lateness against the others' median arrival
 *   split into what its host took (from its device's previous end to its
 *   enqueue) and what its GPU took (from both to its kernel start), each
 *   beyond the others' usual gaps, and the rest, inherited from its previous
 *   collective's late end (another cause);
 * - links: per (sender rank -> receiver rank, channel) the typical time of
 *   a network step from ProxyStepSendWait (peer ready, link free) to its
 *   end (the ledger's send edges: per collective their sum and the longest
 *   step), against the lower median of all links' (or the network transport's
 *   step when most links are slow, or its model when the median is slow,
 *   rclinks.c); slow links grouped by host
 *   pair, or by host when every link of one host is slow (its NIC); the
 *   links document lists them all;
 * - a stuck collective: per rank and channel the last step it completed
 *   sending and receiving, from the ranks' ledger records of it (in-flight
 *   or completed: their edges' steps); the rank that received at least as
 *   many steps as it sent is where the wait chain ends (with ranks whose legs
 *   inside a node have no proxy events: the first sender across nodes after
 *   it).
 * The edges come from one pass over the communicator's ledger; with a stuck
 * collective, a second pass over its raw ProxyOps and ProxySteps finds the
 * steps whose ProxyOp was never stored (as in a live hang): in no ledger
 * record either, each is placed by its direction and the channels no record
 * covers. Memory: up to RC_LINK_MAX_STEPS step times per link and
 * RC_LINK_MARKS times some of them began, and with a stuck collective
 * every ProxyOp seen (24 bytes).
 *
 * Which file owns what:
 *   rootcause.c  the proxy pass over a communicator's events, one
 *                communicator's analysis, the links document
 *   rclate.c     late ranks: who arrived last and why, from the collectives
 *   rclinks.c    slow links and NICs, from the pass's step times
 *   rcstall.c    where a stuck collective stopped, from the ledger and the
 *                pass's orphan steps
 *   rcfollow.c   late ranks across communicators: origin or inherited
 */
#ifndef NCCLSCOPE_DIAG_RCINT_H
#define NCCLSCOPE_DIAG_RCINT_H

#include <stddef.h>
#include <stdint.h>

#include "busbw.h"
#include "dint.h"

/* A rank is late when it is the straggler (engine/query/figures.h): the
 * collectives endpoint says at each collective how late its last rank was
 * and whether of its own. */
/* A link is slow when its typical step takes RC_SLOW_RATIO times the
 * reference (nsc_rc_check_links) and RC_SLOW_MIN_NS more, and its steps took
 * RC_SLOW_MIN_EXTRA_NS more than the reference's in all (extra_ns): a few
 * steps of a loaded emulator, made late together, cost well under that (0.4
 * to 0.7 ms seen in a killed rank's job, under the sanitizers), a 4x slow
 * link over 12 collectives about 36 ms. Links with fewer steps are not
 * judged. */
#define RC_SLOW_RATIO 2.0
/* The network transport's step (rclinks.c) is the reference when the links'
 * median is RC_NET_RATIO times it or more: a loaded emulator made one host
 * pair's steps look 2.3x faster than the others' in a fault-free job. */
#define RC_NET_RATIO 4.0
/* No network link moves more than one NIC (busbw.h); a loaded emulator's
 * steps reported together once read 1,200 GB/s. */
#define RC_NET_MAX_GBPS NSC_NET_MAX_GBPS
/* The transport's model (rclinks.c): a rank pair's channels across hosts
 * together move RC_NET_FLOOR_GBPS or more on a healthy network (a 100 Gb/s
 * NIC, the slowest an NCCL job is run on; the emulator's is 25 GB/s): no
 * link within its step at that speed is slow, and one RC_SLOW_RATIO times
 * that is slow whatever the others do (with every link slow there are no
 * others to compare with). */
#define RC_NET_FLOOR_GBPS (NSC_NET_MAX_GBPS / 8)
#define RC_SLOW_MIN_EXTRA_NS 2000000ull
/* A slow link whose receiver forwards on that channel over a link at least
 * RC_SLOW_RATIO times slower again is held up by it (its receiver frees
 * buffers late), not slow itself: state NSC_LINK_BEHIND. */
#define RC_SLOW_MIN_NS 20000ull
/* A slow link is slow throughout: its steps, in the order the pass met them
 * (each sender's in time order), are cut into RC_LINK_PARTS runs, and at
 * least RC_LINK_PARTS_SLOW of them must have a mean step at the slow limit. A proxy that a
 * loaded host did not run for some milliseconds makes one or two runs slow
 * (6 ms in one fault-free job under the sanitizers: 3.1x on the whole), a
 * slow link every run. Links with fewer than RC_LINK_PARTS x
 * RC_LINK_MIN_STEPS steps are judged on the whole only. A link slow in its
 * last RC_LINK_LATE_PARTS runs or more, and twice as slow there as before,
 * is slow since then (rclinks.c: a link that turns slow mid-job). */
#define RC_LINK_PARTS 8
#define RC_LINK_PARTS_SLOW 6
#define RC_LINK_LATE_PARTS 3
#define RC_LINK_MIN_STEPS 5
/* A slow link began at the first step of its first slow run (the time its
 * ledger record began); a link keeps the times of up to RC_LINK_MARKS of
 * its steps, evenly spaced, not each step's: the one kept at or before a
 * run's first step is at most 2 / RC_LINK_MARKS of the link's steps (half
 * a run) before it. */
#define RC_LINK_MARKS (4 * RC_LINK_PARTS)
#define RC_LINK_MAX_STEPS 100000
#define RC_MAX_CHANNELS 64
/* A stuck collective's raw proxy events are read from the earliest start
 * of the collectives read just before it, this many at most (rootcause.c). */
#define RC_STUCK_BEFORE 8

/* A straggler may be late from mid-job on, or intermittently: besides the
 * straggler rule (figures.h) a rank is late when it was late of its own at
 * RC_LATE_MIN_OWN collectives or more, and affected (late of its own, or
 * late by NSC_FIG_LATE_MIN_NS at its first collective, where there is no
 * previous gap to split by) at one in RC_LATE_MAX_GAP or more of those it
 * took part in from its first affected one (its onset; a training job's late
 * host is late once a step, 1 in 16 tensor-parallel collectives at TP4 x
 * 4 microbatches, and 1 in 160 when late at 1 step in 10), and at more than
 * half of all the communicator's affected collectives: a loaded machine's
 * pauses make one rank or another late now and then, not the same one
 * again and again. Jitter below NSC_FIG_LATE_MIN_NS is never own-late. */
#define RC_LATE_MIN_OWN 4
#define RC_LATE_MAX_GAP 256
/* ... and it keeps to its beat since the onset: affected, or behind a rank
 * later still, at two thirds or more of the collectives it would be late at
 * (since / every). A fault persists; a loaded machine's pauses of one
 * process came at 4 of its 7 collectives after the first (rootcause.sh's
 * jitter run, every collective by the gaps), a late host from mid-job at 6
 * of 6 with one hidden. */
#define RC_LATE_HELD_NUM 2
#define RC_LATE_HELD_DEN 3
/* The onset is the first affected collective but a lone one before the
 * run (a loaded machine's pause, rclate.c); up to RC_LATE_ONSETS - 2 such
 * are passed over. */
#define RC_LATE_ONSETS 4
#define RC_LATE_MAX_EVERY 20
/* A rank late on a beat of N collectives (2 to RC_LATE_MAX_EVERY - 1)
 * is late too, though other ranks are as often affected and it is at
 * fewer than 1 in RC_LATE_MAX_GAP of its collectives, when since its
 * onset it was affected, or behind a rank later still, on RC_LATE_BEAT_NUM
 * / RC_LATE_BEAT_DEN or more of RC_LATE_BEAT_MIN beats or more: a training
 * job's late host is late at each step's first collective, where 64
 * processes waking on 2 cores pause one rank or another as well (each at
 * about a third of the steps, in 8 steps at as many as 6 of them; at two
 * thirds of 24 steps by chance about 1 rank in 1200, of 40 steps 1 in
 * 50000: rootcause.sh's train cases run 40 steps). */
#define RC_LATE_BEAT_NUM 2
#define RC_LATE_BEAT_DEN 3
#define RC_LATE_BEAT_MIN 24
/* ... and off its beat at one in RC_LATE_BEAT_OFF of its other collectives
 * or fewer: a late host at each step's start was at 1 in 8 of the others
 * (as were the rest of its group), a process a loaded machine slowed
 * throughout is late on any beat and off it. */
#define RC_LATE_BEAT_OFF 3

/* A GPU late throughout on the follow's timeline, hidden by ranks later
 * still (rcbeats.c): its own time 1 ms or more beyond its ranks' median at
 * RC_GPU_HELD_NUM / RC_GPU_HELD_DEN of its collectives or more since the
 * first, over RC_LATE_BEAT_MIN or more. Of 9377 processes' communicators
 * in 93 64-rank training jobs on a loaded machine, those of ranks without
 * a fault were so at 0.49 of theirs at most (26 to 88 collectives), a
 * slow GPU at 0.64 to 0.81 of its 640 tensor-parallel ones. */
#define RC_GPU_HELD_NUM 4
#define RC_GPU_HELD_DEN 7
/* ... or so since a collective later (a GPU slowed from mid job, a loaded
 * machine's pauses before it too many for the first), when the surplus of
 * such collectives since, RC_GPU_HELD_DEN - RC_GPU_HELD_NUM each and
 * -RC_GPU_HELD_NUM each other, is RC_GPU_SINCE_SURPLUS or more, over a
 * quarter of its collectives or more. In 12 such jobs (a slow GPU from step
 * 2 to 5 of 8, or from the first) the surplus was 60 to 669 but for one
 * (13); in 12 more the largest a process without a fault reached was 46,
 * over its last 48 collectives of 640 (25 in jobs of 128). */
#define RC_GPU_SINCE_SURPLUS 48

/* An inherited late rank's origin is the one most of its first
 * RC_FOLLOW_VOTES late collectives lead to (rcfollow.c). */
#define RC_FOLLOW_VOTES 64
/* A late rank's onset moves back over at most this many of its collectives
 * in a row whose own time is not beyond the others' (rcfollow.c). */
#define RC_FOLLOW_WEAK 5
/* A late rank's problem stands when its own time explains its lateness at
 * one in RC_FOLLOW_OWN_SHARE of its late collectives or more (rcfollow.c). */
#define RC_FOLLOW_OWN_SHARE 4

typedef struct rc_rank_late {
    uint64_t last, seen;                     /* collectives it arrived last at / took part in */
    uint64_t own_late;                       /* ... last and late of its own */
    uint64_t host_ns, gpu_ns, prev_ns, cost_ns;  /* summed over its last arrivals */
    uint64_t affected;                       /* own-late, or late at its first (rclate.c) */
    uint64_t own_cost_ns;                    /* the others' waits at those */
    /* the first RC_LATE_ONSETS of those: seq, start and collectives seen before */
    uint64_t first_seq[RC_LATE_ONSETS], first_ns[RC_LATE_ONSETS], first_seen[RC_LATE_ONSETS];
    /* ... and how many it was behind at before each (rclate.c) */
    uint64_t first_behind[RC_LATE_ONSETS];
    uint64_t behind;                         /* not last, but late at (rclate.c) */
    uint64_t last_affected;                  /* its seen count at its last affected one */
    uint32_t gaps[RC_LATE_MAX_GAP + 1];      /* collectives between affected ones: how often */
    /* affected ones, and those it was behind at, a whole number of N
     * collectives after its i-th first affected one (first_seen[i]): [i][N] */
    uint32_t beat[RC_LATE_ONSETS][RC_LATE_MAX_EVERY + 1];
} rc_rank_late;

struct nsc_rc_late {
    int64_t nranks;
    rc_rank_late *r;
    uint64_t *scratch;  /* 2 x nranks: own_late and seen, for the straggler rule */
    uint64_t own_all;   /* affected collectives, all ranks */
    /* the first collective all ranks entered that never ended */
    int stuck;
    uint64_t stuck_seq, stuck_start;
    char stuck_func[32];
    uint32_t stuck_nch;
    /* the starts of the collectives read before it, the last RC_STUCK_BEFORE
     * (a ring at nrecent), and the earliest of them: where its raw proxy
     * events are read from, so that each channel's last ProxyOp before it
     * (whose peer its orphan steps take) is read, not the whole job */
    uint64_t recent[RC_STUCK_BEFORE], nrecent, stuck_from;
};

typedef struct rc_op {
    uint64_t id;  /* 0: an empty slot */
    int32_t rank, peer;
    uint8_t channel, is_send;
} rc_op;

typedef struct rc_link {
    int32_t src, dst;
    uint8_t channel;
    uint64_t bytes, busy_ns;  /* summed over its steps: its achieved bandwidth */
    uint64_t *ns;
    size_t n, cap;
    /* Carried (nsc_rc_links): its n steps sorted. In a pass: the carried
     * link's, sorted, of its first nseed steps (not owned), so that the
     * pass sorts only its own (trimmed_mean). */
    uint64_t *sorted;
    const uint64_t *seed;
    size_t nseed;
    uint64_t typical;  /* its typical step (trimmed_mean) */
    uint64_t mean;     /* its plain mean step: right when steps are reported together */
    uint64_t part_typical[RC_LINK_PARTS];  /* the mean step of each run of its steps (enough steps only) */
    /* when step i << mark_shift began, for i below nmarks (nsc_rc_link_add) */
    uint64_t mark_ns[RC_LINK_MARKS];
    size_t nmarks;
    uint8_t mark_shift;
    uint8_t state;     /* NSC_LINK_*, set by nsc_rc_link_reference */
    uint64_t began_ns; /* a slow link's: when its first slow run began (0: not known) */
} rc_link;

/* A stuck collective's progress on one rank, channel and direction. */
typedef struct rc_prog {
    int32_t done;  /* the last step completed, -1 none */
    int32_t peer;  /* -1 unknown */
    uint8_t seen, incomplete;
} rc_prog;

typedef struct rc_orphan {
    int32_t rank, done;
    uint64_t op;
    uint8_t is_send;
} rc_orphan;

typedef struct rc_pass {
    nsc_rc_late *l;
    int64_t nranks;
    char (*host)[64];
    rc_op *ops;
    size_t ops_cap, ops_n;
    rc_link *links;
    size_t nlinks, links_cap;
    rc_prog *prog;      /* [rank][channel][is_send] */
    int32_t *last_peer; /* [rank][channel][is_send]: from any ProxyOp */
    rc_orphan *orph;
    size_t norph, orph_cap;
    int oom;
} rc_pass;

/* The cell of a rank, channel and direction in the pass's per-channel arrays.
 * This and nsc_rc_host_of are inline here, below the analyses and the pass
 * alike, so that no analysis calls back into rootcause.c. */
static inline size_t nsc_rc_pidx(int64_t rank, unsigned ch, unsigned is_send)
{
    return ((size_t)rank * RC_MAX_CHANNELS + ch) * 2 + is_send;
}

/* A rank's host; "?" where the pass knows none (none at all: a pass built
 * from links alone, as the links analysis's own tests build it). */
static inline const char *nsc_rc_host_of(const rc_pass *p, int32_t rank)
{
    return p->host && rank >= 0 && rank < p->nranks && p->host[rank][0] ? p->host[rank] : "?";
}

/* Count an affected collective of a rank at its place x->seen (seq and
 * start its onset's, if among its first): its gaps and beats (rclate.c). */
void nsc_rc_late_mark(rc_rank_late *x, uint64_t seq, uint64_t start_ns);
/* The beat a late rank kept from one of its first affected collectives on
 * (RC_LATE_BEAT_NUM, RC_LATE_BEAT_OFF), the earliest such and the shortest
 * beat, in *on and *every; 0 if none (rclate.c). */
int nsc_rc_late_beat(const rc_rank_late *x, size_t *on, uint64_t *every);
/* How often a late rank is late since its onset, from its affected count
 * and gaps (rclate.c): 1 every collective, N 1 in N, 0 with one. */
uint64_t nsc_rc_late_every(const rc_rank_late *x);
/* Whether a rank is late now and then, too seldom for a beat (1 in
 * RC_LATE_MAX_EVERY or fewer of its collectives), from an onset on: at
 * RC_LATE_MIN_OWN or more since, on one period (rclate.c); its onset and
 * frequency in *on and *every. */
int nsc_rc_late_sparse(const rc_rank_late *x, size_t *on, uint64_t *every);

/* n steps of step_ns each onto link k, from a ledger record that began at
 * t_ns (rclinks.c): 0, or -1 without memory. */
int nsc_rc_link_add(rc_link *k, uint64_t step_ns, size_t n, uint64_t t_ns);
/* Every link's typical step and state (rclinks.c); returns the reference,
 * 0 if no link has enough steps; sets *limit. */
uint64_t nsc_rc_link_reference(rc_pass *p, uint64_t *limit);
/* a[0..na) (sorted) and b[0..nb) (any order, left as it is; it may be
 * out) merged into out, in order: a sorted copy of both without sorting a
 * again. */
void nsc_rc_merge_steps(const uint64_t *a, size_t na, const uint64_t *b, size_t nb, uint64_t *out);
/* The problems of each analysis, from a finished pass. */
void nsc_rc_check_links(nsc_findings *f, const char *comm, rc_pass *p);
void nsc_rc_check_late(nsc_findings *f, const char *comm, const rc_pass *p);
/* Orphan steps onto their channels, then where the stuck collective stopped. */
void nsc_rc_place_orphans(rc_pass *p);
/* One edge of a rank's ledger record of the stuck collective: its progress
 * on that channel and direction (before nsc_rc_place_orphans). */
void nsc_rc_stall_edge(rc_pass *p, int32_t rank, const nsc_json *e);
void nsc_rc_check_stall(nsc_findings *f, const char *comm, rc_pass *p);

#endif
