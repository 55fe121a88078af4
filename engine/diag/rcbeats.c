/* rcbeats.c: late ranks that no communicator's analysis sees (rcfw.h),
 * judged on the follow's timeline for each process that no problem stands
 * for:
 * - a Send/Recv side whose host's gap goes beyond its replicas' or its
 *   peer's (rcpairs.c) on a beat: a pipeline stage's host late before its
 *   Recv is last at no collective after it (the other stage is still
 *   computing);
 * - a collective's rank whose own time goes beyond its ranks' median on a
 *   beat, whether it arrived last or not: a training job's host late at
 *   each step's start is hidden when a rank of its group comes later still
 *   (its data-parallel reduction ended later, behind another stage's slow
 *   GPU: with the host handing groups to its proxies, the ranks of a
 *   tensor-parallel group start a step as their own stream syncs end);
 * - a collective's rank whose GPU makes it late throughout, last or not:
 *   that slow GPU, when the late host delays another rank of its group now
 *   and then. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "figures.h"
#include "rcfw.h"
#include "rcint.h"

/* What a beat's records were: its rank's host gaps (at a collective its
 * own time beyond the others' split into its host's, at most the gap, and
 * its GPU's), how long the others waited for it in all, and at how many a
 * rank later still arrived last (hid it). */
typedef struct beat_sum {
    rc_rank_late x;
    uint64_t host, gpu, waited, hidden;
} beat_sum;

/* Of a collective's record's own time beyond the others', its host's
 * share: at most its host's gap; the rest is its GPU's. */
static uint64_t host_part(const fw_rec *r)
{
    return r->host < r->excess ? r->host : r->excess;
}

/* The process's records [lo, hi) in communicator c, its Send/Recv (p2p)
 * or its collectives, whose own time there is NSC_FIG_LATE_MIN_NS or more
 * beyond the others' (excess) counted as rclate.c counts a rank's own late
 * collectives, from record `from` on (those before only seen); the first
 * RC_LATE_ONSETS of them into firsts. */
static void count_beat(const nsc_rc_follow *w, size_t lo, size_t hi, size_t from, uint32_t c, int p2p, beat_sum *b,
                       const fw_rec **firsts)
{
    for (size_t i = lo; i < hi; i++) {
        const fw_rec *r = &w->r[i];
        if (r->comm != c || !r->p2p != !p2p)
            continue;
        if (i >= from && r->excess >= NSC_FIG_LATE_MIN_NS) {
            if (b->x.affected < RC_LATE_ONSETS)
                firsts[b->x.affected] = r;
            nsc_rc_late_mark(&b->x, r->seq, r->api);
            uint64_t h = p2p ? r->host : host_part(r);
            b->host += h;
            b->gpu += p2p ? 0 : r->excess - h;
            b->waited += r->waited;
            b->hidden += !p2p && !r->late_last;
        }
        b->x.seen++;
    }
}

/* Whether a process's GPU was late throughout its collectives counted
 * (count_beat) since the first: its own time 1 ms or more beyond the
 * others' at RC_GPU_HELD_NUM / RC_GPU_HELD_DEN of them or more, over
 * RC_LATE_BEAT_MIN or more (rcint.h), most of it its GPU's. A slow GPU
 * in a training job's second stage is last at fewer when a late host in
 * the first delays another rank of its group now and then through their
 * stages' Send/Recv (4 ms beyond at 34 of its first 40 tensor-parallel
 * collectives, last of its own at 263 of 640; beyond at 410 of 640 under a
 * load of 74). Not its host's: a process with little to do
 * between its collectives in one communicator (none in another) has a
 * long gap before each, no late host. */
static int held(const beat_sum *b)
{
    uint64_t since = b->x.seen - b->x.first_seen[0];
    return b->gpu > b->host && since >= RC_LATE_BEAT_MIN &&
           RC_GPU_HELD_DEN * b->x.affected >= RC_GPU_HELD_NUM * since;
}

/* A process's collectives in c, of its records [lo, hi), split where its
 * GPU became late throughout: from `at` on the surplus of those 1 ms or
 * more beyond the others', RC_GPU_HELD_DEN - RC_GPU_HELD_NUM each and
 * -RC_GPU_HELD_NUM each other, is largest (the latest of equals); over
 * `since` of `all`, its GPU's share the larger or not. */
typedef struct held_run {
    const fw_rec *at;
    int64_t surplus;
    uint64_t since, all;
    int gpu;
} held_run;

static held_run change_point(const nsc_rc_follow *w, size_t lo, size_t hi, uint32_t c)
{
    held_run h = {0};
    int64_t surplus = 0;
    uint64_t host = 0, gpu = 0;
    for (size_t i = hi; i-- > lo;) {
        const fw_rec *r = &w->r[i];
        if (r->comm != c || r->p2p)
            continue;
        h.all++;
        int beyond = r->excess >= NSC_FIG_LATE_MIN_NS;
        surplus += beyond ? RC_GPU_HELD_DEN - RC_GPU_HELD_NUM : -RC_GPU_HELD_NUM;
        if (beyond)
            host += host_part(r), gpu += r->excess - host_part(r);
        if (beyond && (!h.at || surplus > h.surplus))
            h.at = r, h.surplus = surplus, h.since = h.all, h.gpu = gpu > host;
    }
    return h;
}

/* Where a GPU late throughout (held(), or since a collective later:
 * RC_GPU_SINCE_SURPLUS, rcint.h) became so: its change point when
 * RC_LATE_BEAT_MIN collectives or more come before it, else its first
 * record 1 ms or more beyond (a slow GPU from the first, hidden at a few
 * at the job's start, moved it up to 19 collectives on); NULL: not late
 * throughout. A slow GPU from a 64-rank training job's third step was
 * late at too few since a pause at its first to be held, or held and
 * dated at such a pause, 30 collectives early. */
static const fw_rec *held_onset(const beat_sum *b, const held_run *h, const fw_rec *first)
{
    if (held(b))
        return h->at && h->all - h->since >= RC_LATE_BEAT_MIN ? h->at : first;
    return h->at && h->surplus >= RC_GPU_SINCE_SURPLUS && 4 * h->since >= h->all && h->gpu ? h->at : NULL;
}

/* Whether the host's share of a process's own time beyond the others' is
 * the larger at its collectives on a beat of `every` from record k (those
 * of its records before hi 1 ms or more beyond): a host late on a beat (at
 * each step's start). A GPU is not: a 64-rank job's second-stage rank,
 * with a slow GPU elsewhere, read so on a beat of 2 of its last 52
 * tensor-parallel collectives (1 ms beyond at 19 of 26), its GPU's share
 * 160 ms of 161. */
static int hosts_beat(const nsc_rc_follow *w, size_t hi, const fw_rec *k, uint64_t every)
{
    uint64_t host = 0, gpu = 0, nth = 0;
    for (size_t i = (size_t)(k - w->r); i < hi; i++) {
        const fw_rec *r = &w->r[i];
        if (r->comm != k->comm || r->p2p || nth++ % every || r->excess < NSC_FIG_LATE_MIN_NS)
            continue;
        host += host_part(r), gpu += r->excess - host_part(r);
    }
    return host >= gpu;
}

/* A process's host late on a beat in communicator c (records [lo, hi)
 * are the process's), at its Send/Recv (p2p) or at its collectives: its
 * own time 1 ms or more beyond the others' on a beat as rclate.c keeps one
 * (RC_LATE_BEAT_NUM, RC_LATE_BEAT_OFF), its onset moved back by whole
 * beats (nsc_rc_beat_start). A beat is looked for from each of its first
 * RC_LATE_MAX_EVERY such records in turn (rclate.c's, from its first
 * RC_LATE_ONSETS): at a collective a loaded machine's pauses put it 1 ms
 * beyond the others now and then off the beat too, at 1 in 5 of a
 * training job's tensor-parallel collectives, its first four often all
 * off it. Or, at its collectives, late throughout (held_onset()). Its problem,
 * with the figures rclate.c's have, its kind the larger share's; a
 * collective's also says at how many a rank later still hid it
 * (hidden_beats), which rcfollow.c reads as a verdict made here. */
static int beat_of(nsc_findings *f, const nsc_rc_follow *w, size_t lo, size_t hi, uint32_t c, int p2p)
{
    beat_sum b;
    const fw_rec *firsts[RC_LATE_ONSETS], *since = NULL;
    size_t on, from = lo;
    uint64_t every;
    int found = 0, sparse = 0;
    for (int tries = 0; tries < RC_LATE_MAX_EVERY && !found; tries++) {
        memset(&b, 0, sizeof b);
        memset(firsts, 0, sizeof firsts);
        count_beat(w, lo, hi, from, c, p2p, &b, firsts);
        if (!firsts[0])
            return 0;
        held_run h = !tries && !p2p ? change_point(w, lo, hi, c) : (held_run){0};
        if (!tries && !p2p && (since = held_onset(&b, &h, firsts[0])))
            found = 1, every = 1;
        else
            found = nsc_rc_late_beat(&b.x, &on, &every) && (p2p || hosts_beat(w, hi, firsts[on], every));
        if (!found && !tries && p2p)
            found = sparse = nsc_rc_late_sparse(&b.x, &on, &every);
        from = (size_t)(firsts[0] - w->r) + 1;
    }
    if (!found)
        return 0;
    const fw_rec *o = since ? since : sparse ? firsts[on] : &w->r[nsc_rc_beat_start(w, firsts[on] - w->r, every)];
    int host_len = (int)strcspn(w->who[o->who], " "), gpu = b.gpu > b.host;
    uint64_t n = b.x.affected;
    char often[48] = "every collective";
    if (every > 1)
        snprintf(often, sizeof often, "1 in %" PRIu64, every);
    nsc_problem *p = nsc_diag_add(
        f, NSC_SEV_LATE, gpu ? "gpu_late" : "host_late", w->c[c].id, o->seq, o->rank,
        "%s: rank %" PRId32 " (%.*s) %s late at %" PRIu64 " of %" PRIu64
        " (%s 1 ms or more beyond %s), %.2f ms on average; since seq %" PRIu64 ", %s"
        ": the others waited %.2f ms per such, %.1f ms in all",
        gpu ? "GPU late" : "host late", o->rank, host_len, w->who[o->who],
        p2p ? "posted its Send/Recv" : "entered its collective", n, b.x.seen, p2p ? "its host's gap" : "its own time",
        p2p ? "its replicas' or its peer's" : "its ranks' median, last or not", (double)(b.host + b.gpu) / (double)n / 1e6,
        o->seq, often, (double)b.waited / (double)n / 1e6, (double)b.waited / 1e6);
    if (!p)
        return 0;
    nsc_diag_began_ns(p, f, o->api);
    snprintf(p->hosts[0], sizeof p->hosts[0], "%.*s", host_len, w->who[o->who]);
    int k = snprintf(p->figures, sizeof p->figures,
                     "\"last_arrivals\":%" PRIu64 ",\"late_of_its_own\":%" PRIu64 ",\"collectives\":%" PRIu64
                     ",\"host_late_ns\":%" PRIu64 ",\"gpu_late_ns\":%" PRIu64 ",\"inherited_ns\":0,\"cost_ns\":%" PRIu64
                     ",\"onset_seq\":%" PRIu64 ",\"onset_ns\":%" PRIu64 ",\"every\":%" PRIu64
                     ",\"own_cost_ns\":%" PRIu64,
                     n - b.hidden, n, b.x.seen, b.host, b.gpu, b.waited, o->seq, o->api, every, b.waited);
    if (!p2p && k > 0 && (size_t)k < sizeof p->figures)
        snprintf(p->figures + k, sizeof p->figures - (size_t)k, ",\"hidden_beats\":%" PRIu64, b.hidden);
    return 1;
}

int nsc_rc_hidden_beats(nsc_findings *f, const nsc_rc_follow *w, const uint8_t *origin)
{
    uint8_t *done = calloc(2 * (w->nc + 1), 1);
    if (!done)
        return -1;
    int added = 0;
    for (size_t lo = 0, hi; lo < w->n; lo = hi) {
        for (hi = lo; hi < w->n && w->r[hi].who == w->r[lo].who; hi++)
            ;
        memset(done, 0, 2 * w->nc);
        for (size_t i = lo; i < hi && !origin[w->r[lo].who]; i++) {
            const fw_rec *r = &w->r[i];
            uint8_t *d = &done[2 * r->comm + !r->p2p];
            if (!*d) {
                *d = 1;
                added += beat_of(f, w, lo, hi, r->comm, r->p2p != 0);
            }
        }
    }
    free(done);
    return added;
}
