/* rclinks.c: slow links and NICs, from the proxy pass's step times
 * (rcint.h): each link's steps and the times some of them began, its
 * typical step against the reference, the links' states and onsets, and
 * one problem per slow host pair or slow NIC. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "order.h"
#include "rcint.h"

/* The links of a host and how many of them are slow. */
static void host_links(const rc_pass *p, const char *h, size_t *all, size_t *slow)
{
    *all = *slow = 0;
    for (size_t i = 0; i < p->nlinks; i++) {
        const rc_link *k = &p->links[i];
        if (k->n < RC_LINK_MIN_STEPS ||
            (strcmp(nsc_rc_host_of(p, k->src), h) != 0 && strcmp(nsc_rc_host_of(p, k->dst), h) != 0))
            continue;
        (*all)++;
        *slow += k->state == NSC_LINK_SLOW;
    }
}

/* The hosts every slow link touches and whose links are all slow (their
 * NIC), in name order: none, one, or two when the links between two hosts
 * are all their links and all slow (a job on two hosts: either NIC slows
 * both ways alike, so the steps cannot tell which). Returns how many. */
static size_t slow_nic_hosts(const rc_pass *p, size_t nslow, const char *h[2])
{
    size_t found = 0;
    for (int64_t r = 0; r < p->nranks && found <= 2; r++) {
        const char *x = nsc_rc_host_of(p, (int32_t)r);
        size_t all, slow;
        if ((found > 0 && strcmp(h[0], x) == 0) || (found > 1 && strcmp(h[1], x) == 0))
            continue;
        host_links(p, x, &all, &slow);
        if (all >= 2 && slow == all && slow == nslow && found++ < 2)
            h[found - 1] = x;
    }
    if (found > 2)
        return 0;
    if (found == 2 && strcmp(h[0], h[1]) > 0) {
        const char *t = h[0];
        h[0] = h[1], h[1] = t;
    }
    return found;
}

/* The earlier of two onsets, 0 being none. */
static uint64_t earlier(uint64_t a, uint64_t b)
{
    return !a || (b && b < a) ? b : a;
}

/* What a slow link's steps took beyond the reference, summed: about what
 * the ring behind it waited for it on that channel (channels run side by
 * side, so problems give the largest of a place's channels). */
static uint64_t extra_ns(const rc_link *k, uint64_t ref)
{
    return k->typical > ref ? (k->typical - ref) * k->n : 0;
}

/* One problem for the slow NIC of h[0], or of h[0] or h[1] (nh 2). */
static void report_nic(nsc_findings *f, const char *comm, const rc_pass *p, const char *h[2], size_t nh,
                       uint64_t ref)
{
    uint64_t worst = 0, extra = 0, began = 0;
    size_t n = 0;
    for (size_t i = 0; i < p->nlinks; i++)
        if (p->links[i].state == NSC_LINK_SLOW) {
            n++;
            began = earlier(began, p->links[i].began_ns);
            if (extra_ns(&p->links[i], ref) > extra)
                extra = extra_ns(&p->links[i], ref);
            if (p->links[i].typical > worst)
                worst = p->links[i].typical;
        }
    nsc_problem *x = nsc_diag_add(f, NSC_SEV_SLOW_LINK, "slow_nic", comm, 0, -1,
                                  "slow NIC on %s%s%s: all %zu of %s network links (per channel) are slow, steps "
                                  "take up to %.1f us against %.1f us on a healthy link (%.1fx), %.1f ms more on "
                                  "one channel",
                                  h[0], nh > 1 ? " or " : "", nh > 1 ? h[1] : "", n, nh > 1 ? "their" : "its",
                                  (double)worst / 1e3, (double)ref / 1e3, (double)worst / (double)ref,
                                  (double)extra / 1e6);
    if (!x)
        return;
    nsc_diag_began_ns(x, f, began);
    for (size_t i = 0; i < nh; i++)
        snprintf(x->hosts[i], sizeof x->hosts[i], "%s", h[i]);
    snprintf(x->figures, sizeof x->figures,
             "\"step_ns\":%" PRIu64 ",\"reference_step_ns\":%" PRIu64 ",\"slow_links\":%zu,\"extra_ns\":%" PRIu64,
             worst, ref, n, extra);
}

/* The largest extra time of the slow links from host a to host b, and
 * their earliest onset in *began. */
static uint64_t pair_extra(const rc_pass *p, const char *a, const char *b, uint64_t ref, uint64_t *began)
{
    uint64_t extra = 0;
    *began = 0;
    for (size_t i = 0; i < p->nlinks; i++) {
        const rc_link *k = &p->links[i];
        if (k->state != NSC_LINK_SLOW || strcmp(nsc_rc_host_of(p, k->src), a) != 0 ||
            strcmp(nsc_rc_host_of(p, k->dst), b) != 0)
            continue;
        if (extra_ns(k, ref) > extra)
            extra = extra_ns(k, ref);
        *began = earlier(*began, k->began_ns);
    }
    return extra;
}

/* One problem per host pair (direction kept) with a slow link. */
static void report_links(nsc_findings *f, const char *comm, const rc_pass *p, uint64_t ref)
{
    for (size_t i = 0; i < p->nlinks; i++) {
        const rc_link *k = &p->links[i];
        if (k->state != NSC_LINK_SLOW)
            continue;
        const char *a = nsc_rc_host_of(p, k->src), *b = nsc_rc_host_of(p, k->dst);
        int dup = 0;
        for (size_t j = 0; j < i && !dup; j++)
            dup = p->links[j].state == NSC_LINK_SLOW &&
                  strcmp(nsc_rc_host_of(p, p->links[j].src), a) == 0 && strcmp(nsc_rc_host_of(p, p->links[j].dst), b) == 0;
        if (dup)
            continue;
        uint64_t began, extra = pair_extra(p, a, b, ref, &began);
        nsc_problem *x = nsc_diag_add(f, NSC_SEV_SLOW_LINK, "slow_link", comm, 0, k->src,
                                      "slow link %s -> %s (rank %d -> rank %d): a network step takes %.1f us "
                                      "against %.1f us on a healthy link (%.1fx), %.1f ms more on one channel",
                                      a, b, k->src, k->dst, (double)k->typical / 1e3, (double)ref / 1e3,
                                      (double)k->typical / (double)ref, (double)extra / 1e6);
        if (!x)
            return;
        nsc_diag_began_ns(x, f, began);
        x->peer = k->dst;
        x->channel = k->channel;
        snprintf(x->hosts[0], sizeof x->hosts[0], "%s", a);
        snprintf(x->hosts[1], sizeof x->hosts[1], "%s", b);
        snprintf(x->figures, sizeof x->figures,
                 "\"step_ns\":%" PRIu64 ",\"reference_step_ns\":%" PRIu64 ",\"steps\":%zu,\"extra_ns\":%" PRIu64,
                 k->typical, ref, k->n, extra);
    }
}

/* b is sorted as a copy at out's front and merged from the back: while a
 * has steps left, each is written above the copy's last unread one, and
 * those the copy has left are in place. b keeps its order (a carried
 * link's steps are in time order: its runs are read from them). */
void nsc_rc_merge_steps(const uint64_t *a, size_t na, const uint64_t *b, size_t nb, uint64_t *out)
{
    memmove(out, b, nb * sizeof *b);
    qsort(out, nb, sizeof *out, nsc_cmp_u64);
    size_t i = na, j = nb, o = na + nb;
    while (i > 0 && j > 0)
        out[--o] = a[i - 1] > out[j - 1] ? a[--i] : out[--j];
    while (i > 0)
        out[--o] = a[--i];
}

/* The marks (rcint.h) are the start of the record that holds every
 * (1 << mark_shift)-th step, up to RC_LINK_MARKS; when they are full the
 * spacing doubles and every other one goes, so a link's memory for them
 * stays flat however many steps it has. */
int nsc_rc_link_add(rc_link *k, uint64_t step_ns, size_t n, uint64_t t_ns)
{
    if (nsc_grow_to(&k->ns, k->n + n, &k->cap, sizeof *k->ns, 64))
        return -1;
    while ((k->nmarks << k->mark_shift) < k->n + n) {
        if (k->nmarks == RC_LINK_MARKS) {
            for (size_t i = 0; i < RC_LINK_MARKS / 2; i++)
                k->mark_ns[i] = k->mark_ns[2 * i];
            k->nmarks = RC_LINK_MARKS / 2;
            k->mark_shift++;
            continue;
        }
        k->mark_ns[k->nmarks++] = t_ns;
    }
    for (size_t i = 0; i < n; i++)
        k->ns[k->n++] = step_ns;
    return 0;
}

/* When run `part` of k's steps began: the mark at or before its first
 * step (0: none kept, as for a link built from step times alone). */
static uint64_t part_began(const rc_link *k, size_t part)
{
    size_t m = (k->n * part / RC_LINK_PARTS) >> k->mark_shift;
    return m < k->nmarks ? k->mark_ns[m] : 0;
}

/* A link's typical step: the mean of its steps without the fastest and the
 * slowest tenth. Not the median: a proxy thread that falls behind makes
 * some steps' events together and the next step absorbs their time, so the
 * steps' times split in two groups around the true one while their sum
 * stays right. */
static uint64_t trimmed_mean(rc_link *k)
{
    uint64_t *ns = k->ns, *mine = ns + k->nseed, *all = k->nseed ? malloc(k->n * sizeof *all) : NULL;
    size_t n = k->n;
    if (all) { /* the carried steps came sorted: only the pass's own are sorted */
        nsc_rc_merge_steps(k->seed, k->nseed, mine, n - k->nseed, all);
        memcpy(ns, all, n * sizeof *ns);
        free(all);
    } else {
        qsort(ns, n, sizeof *ns, nsc_cmp_u64);
    }
    size_t cut = n / 10;
    double sum = 0;
    for (size_t i = cut; i < n - cut; i++)
        sum += (double)ns[i];
    return (uint64_t)(sum / (double)(n - 2 * cut));
}

/* The link's and each run's mean step (RC_LINK_PARTS, rcint.h), before
 * trimmed_mean sorts the steps. The plain mean: a run has too few steps to
 * trim, and when a late proxy reports some steps together the next one
 * absorbs their time, so only a sum stays right. */
static void part_typicals(rc_link *k)
{
    double all = 0;
    for (size_t s = 0; s < k->n; s++)
        all += (double)k->ns[s];
    k->mean = k->n ? (uint64_t)(all / (double)k->n) : 0;
    memset(k->part_typical, 0, sizeof k->part_typical);
    if (k->n < RC_LINK_PARTS * RC_LINK_MIN_STEPS)
        return;
    for (size_t i = 0; i < RC_LINK_PARTS; i++) {
        size_t lo = k->n * i / RC_LINK_PARTS, hi = k->n * (i + 1) / RC_LINK_PARTS;
        double sum = 0;
        for (size_t s = lo; s < hi; s++)
            sum += (double)k->ns[s];
        k->part_typical[i] = (uint64_t)(sum / (double)(hi - lo));
    }
}

/* Slow in at least RC_LINK_PARTS_SLOW runs of its steps (or judged on the
 * whole: too few steps to cut); *first: the first such run (0 on the whole). */
static int slow_throughout(const rc_link *k, uint64_t limit, size_t *first)
{
    *first = 0;
    if (k->n < RC_LINK_PARTS * RC_LINK_MIN_STEPS)
        return 1;
    int slow = 0;
    for (size_t i = RC_LINK_PARTS; i-- > 0;)
        if (k->part_typical[i] >= limit) {
            slow++;
            *first = i;
        }
    return slow >= RC_LINK_PARTS_SLOW;
}

/* Each run's usual mean step (RC_LINK_PARTS): the lower median of the
 * links' with enough steps to cut into runs; 0 where none has (or no
 * memory: then the links are judged on their own history alone). */
static void part_refs(const rc_pass *p, uint64_t out[RC_LINK_PARTS])
{
    uint64_t *v = malloc((p->nlinks + 1) * sizeof *v);
    for (size_t i = 0; i < RC_LINK_PARTS; i++) {
        size_t n = 0;
        for (size_t j = 0; v && j < p->nlinks; j++)
            if (p->links[j].n >= RC_LINK_PARTS * RC_LINK_MIN_STEPS)
                v[n++] = p->links[j].part_typical[i];
        if (n)
            qsort(v, n, sizeof *v, nsc_cmp_u64);
        out[i] = n ? v[(n - 1) / 2] : 0;
    }
    free(v);
}

/* Slow since a run of its steps, against its own history: its last
 * RC_LINK_LATE_PARTS runs or more each at the slow limit and RC_SLOW_RATIO
 * times the lower median of the runs before (a link that turns slow
 * mid-job, too late to be slow throughout; the median, as a loaded
 * machine's pause at the job's start makes a run before slow too), and
 * RC_SLOW_RATIO times the usual link's in the same run (part_refs: a pause
 * of the whole job over its last runs slows every link there, as seen in a
 * fault-free job: 23 ms in its last collective but one), their
 * steps RC_SLOW_MIN_EXTRA_NS beyond the reference in all. A pause of one
 * host lands in one or two runs, not in every run from one on to the job's
 * end. Returns the first run it is slow since, RC_LINK_PARTS if none. */
static size_t slow_since(const rc_link *k, uint64_t limit, uint64_t ref, const uint64_t *runs_ref)
{
    if (k->n < RC_LINK_PARTS * RC_LINK_MIN_STEPS)
        return RC_LINK_PARTS;
    size_t from = RC_LINK_PARTS;
    while (from > 0 && k->part_typical[from - 1] >= limit)
        from--;
    if (from == 0 || RC_LINK_PARTS - from < RC_LINK_LATE_PARTS)
        return RC_LINK_PARTS;
    uint64_t runs[RC_LINK_PARTS];
    memcpy(runs, k->part_typical, from * sizeof *runs);
    qsort(runs, from, sizeof *runs, nsc_cmp_u64);
    double before = (double)runs[(from - 1) / 2], extra = 0;
    for (size_t i = from; i < RC_LINK_PARTS; i++) {
        if ((double)k->part_typical[i] < before * RC_SLOW_RATIO ||
            (double)k->part_typical[i] < (double)runs_ref[i] * RC_SLOW_RATIO)
            return RC_LINK_PARTS;
        size_t steps = k->n * (i + 1) / RC_LINK_PARTS - k->n * i / RC_LINK_PARTS;
        extra += (double)(k->part_typical[i] - ref) * (double)steps;
    }
    return extra >= (double)RC_SLOW_MIN_EXTRA_NS ? from : RC_LINK_PARTS;
}

/* Each link's state against the slow limit and the reference: slow
 * throughout or since a run of its steps, or behind a slower link its
 * receiver forwards on (RC_SLOW_RATIO above); a slow one's onset, when the
 * first run it is slow by began (its first step, judged on the whole).
 * Never slow when its plain mean step is within the model's (model_step;
 * 0: no model): a loaded emulator makes some links read 2x to 50x fast, so
 * that the others, the model's speed, read slow against them. */
static void classify_links(rc_pass *p, uint64_t limit, uint64_t ref, uint64_t model)
{
    uint64_t least = limit > model ? limit : model, runs_ref[RC_LINK_PARTS];
    part_refs(p, runs_ref);
    for (size_t i = 0; i < p->nlinks; i++) {
        rc_link *k = &p->links[i];
        size_t first = 0;
        int whole = k->typical >= limit && k->mean >= least && extra_ns(k, ref) >= RC_SLOW_MIN_EXTRA_NS &&
                    slow_throughout(k, limit, &first);
        size_t since = whole ? RC_LINK_PARTS : slow_since(k, least, ref, runs_ref);
        int slow = whole || since < RC_LINK_PARTS;
        k->state = k->n < RC_LINK_MIN_STEPS ? NSC_LINK_FEW : slow ? NSC_LINK_SLOW : NSC_LINK_OK;
        k->began_ns = slow ? part_began(k, whole ? first : since) : 0;
    }
    for (size_t i = 0; i < p->nlinks; i++) {
        rc_link *k = &p->links[i];
        for (size_t j = 0; j < p->nlinks && k->state == NSC_LINK_SLOW; j++) {
            const rc_link *next = &p->links[j];
            if (next->src == k->dst && next->channel == k->channel && next->n >= RC_LINK_MIN_STEPS &&
                (double)next->typical >= (double)k->typical * RC_SLOW_RATIO)
                k->state = NSC_LINK_BEHIND;
        }
    }
}

/* A link's host pair and mean step, to group links by host pair. */
typedef struct rc_pair_step {
    const char *from, *to;
    uint64_t mean;
} rc_pair_step;

static int cmp_pair(const void *a, const void *b)
{
    const rc_pair_step *x = a, *y = b;
    int c = strcmp(x->from, y->from);
    return c ? c : strcmp(x->to, y->to);
}

/* What the network transport takes where nothing slows it: the slowest
 * link of the fastest host pair whose links (two channels or more) agree
 * within RC_SLOW_RATIO; 0 if no pair has. A link's plain mean step here, not
 * its typical one: when a late proxy reports steps together most look
 * short (a whole pair can look 20x fast), but their sum stays right. One
 * link that looks fast has no other channel to agree with it; a slow NIC on
 * 2 or 3 nodes slows most host pairs (the median's), never all but one of 3.
 * A link faster than any network (RC_NET_MAX_GBPS) was measured wrong. */
static uint64_t transport_step(const rc_pass *p, rc_pair_step *v)
{
    size_t n = 0;
    for (size_t i = 0; i < p->nlinks; i++)
        if (p->links[i].n >= RC_LINK_MIN_STEPS &&
            (double)p->links[i].bytes <= RC_NET_MAX_GBPS * (double)p->links[i].busy_ns)
            v[n++] = (rc_pair_step){nsc_rc_host_of(p, p->links[i].src), nsc_rc_host_of(p, p->links[i].dst),
                                    p->links[i].busy_ns / p->links[i].n};
    qsort(v, n, sizeof *v, cmp_pair);
    uint64_t best = 0;
    for (size_t lo = 0, hi; lo < n; lo = hi) {
        uint64_t min = v[lo].mean, max = v[lo].mean;
        for (hi = lo + 1; hi < n && cmp_pair(&v[lo], &v[hi]) == 0; hi++) {
            min = v[hi].mean < min ? v[hi].mean : min;
            max = v[hi].mean > max ? v[hi].mean : max;
        }
        if (hi - lo >= 2 && (double)max < (double)min * RC_SLOW_RATIO && (!best || max < best))
            best = max;
    }
    return best;
}

/* What the model of the network transport says a link's step takes at
 * most: its mean bytes per step at RC_NET_FLOOR_GBPS, shared by the
 * channels between its two ranks (they share the NIC); the lower median
 * of the links'; 0 if no link has enough steps with bytes. */
static uint64_t model_step(const rc_pass *p, uint64_t *v)
{
    size_t n = 0;
    for (size_t i = 0; i < p->nlinks; i++) {
        const rc_link *k = &p->links[i];
        if (k->n < RC_LINK_MIN_STEPS || !k->bytes)
            continue;
        size_t nch = 0;
        for (size_t j = 0; j < p->nlinks; j++)
            nch += p->links[j].src == k->src && p->links[j].dst == k->dst;
        v[n++] = (uint64_t)((double)k->bytes / (double)k->n * (double)nch / RC_NET_FLOOR_GBPS);
    }
    qsort(v, n, sizeof *v, nsc_cmp_u64);
    return n ? v[(n - 1) / 2] : 0;
}

/* Classify every link against ref and the model's step; returns the slow
 * limit. */
static uint64_t classify_against(rc_pass *p, uint64_t ref, uint64_t model)
{
    uint64_t limit = (uint64_t)((double)ref * RC_SLOW_RATIO);
    if (limit < ref + RC_SLOW_MIN_NS)
        limit = ref + RC_SLOW_MIN_NS;
    classify_links(p, ref ? limit : UINT64_MAX, ref, model);
    return limit;
}

static size_t count_slow(const rc_pass *p)
{
    size_t nslow = 0;
    for (size_t i = 0; i < p->nlinks; i++)
        nslow += p->links[i].state == NSC_LINK_SLOW;
    return nslow;
}

/* Every link's typical step; the reference is the lower median of those of
 * the links with enough steps, not the fastest: one link that looks fast
 * must not make the others look slow. Links that read faster than any
 * network stay in it: a ring's healthy links behind a slow one can read so
 * (the demo's 2-node ring: 120 GB/s behind a 4x slow link at the model's
 * floor), and links the load made read fast cannot make a link within the
 * model's step slow (classify_links). But the transport's step
 * (transport_step) when the median is RC_NET_RATIO times that or more and
 * the links slow against it are one host's NIC: then most links are slow (a
 * slow NIC on 3 nodes); a pair that a loaded host made look fast leaves two
 * hosts' links all slow on 4 nodes or more. When the median link itself is
 * slow (a slow NIC on 2 nodes slows every link), the transport's model
 * (model_step) is the reference: a loaded host only makes steps longer, and
 * a healthy network's are well under it. Sets *limit (a slower link is
 * slow); returns the reference, 0 if no link has enough steps. */
uint64_t nsc_rc_link_reference(rc_pass *p, uint64_t *limit)
{
    uint64_t *meds = malloc((p->nlinks + 1) * sizeof *meds);
    rc_pair_step *pairs = malloc((p->nlinks + 1) * sizeof *pairs);
    size_t n = 0;
    if (!meds || !pairs) {
        free(meds);
        free(pairs);
        return 0;
    }
    for (size_t i = 0; i < p->nlinks; i++) {
        rc_link *k = &p->links[i];
        part_typicals(k);
        if (k->n)
            k->typical = trimmed_mean(k);
        if (k->n >= RC_LINK_MIN_STEPS)
            meds[n++] = k->typical;
    }
    qsort(meds, n, sizeof *meds, nsc_cmp_u64);
    uint64_t ref = n ? meds[(n - 1) / 2] : 0, net = transport_step(p, pairs), model = model_step(p, meds);
    const char *h[2];
    free(meds);
    free(pairs);
    if (net && (double)ref >= (double)net * RC_NET_RATIO) {
        *limit = classify_against(p, net, model);
        if (slow_nic_hosts(p, count_slow(p), h))
            return net;
    }
    *limit = classify_against(p, ref, model);
    if (count_slow(p) || !model || ref < model)
        return ref;
    *limit = classify_against(p, model, model);
    if (count_slow(p))
        return model;
    *limit = classify_against(p, ref, model);
    return ref;
}

void nsc_rc_check_links(nsc_findings *f, const char *comm, rc_pass *p)
{
    uint64_t limit, ref = nsc_rc_link_reference(p, &limit);
    if (!ref)
        return;
    size_t nslow = count_slow(p);
    if (!nslow)
        return;
    const char *nic[2];
    size_t nh = slow_nic_hosts(p, nslow, nic);
    if (nh)
        report_nic(f, comm, p, nic, nh, ref);
    else
        report_links(f, comm, p, ref);
}

/* Whether problem q is a slow NIC named alone on host h. */
static int nic_alone_on(const nsc_problem *q, const char *h)
{
    return q->kind[0] && strcmp(q->kind, "slow_nic") == 0 && !q->hosts[1][0] && strcmp(q->hosts[0], h) == 0;
}

/* The one host that every slow NIC names, when each names two, not all the
 * same two: one slow NIC explains them all (a job on 3 hosts whose
 * communicators each span two of them); NULL otherwise. */
static const char *nic_common_host(const nsc_findings *f)
{
    const nsc_problem *first = NULL;
    int in_all[2] = {1, 1}, other_pair = 0;
    for (size_t i = 0; i < f->n; i++) {
        const nsc_problem *q = &f->p[i];
        if (strcmp(q->kind, "slow_nic") != 0)
            continue;
        if (!q->hosts[1][0])
            return NULL;
        first = first ? first : q;
        other_pair |= strcmp(q->hosts[0], first->hosts[0]) != 0 || strcmp(q->hosts[1], first->hosts[1]) != 0;
        for (int k = 0; k < 2; k++)
            in_all[k] &= strcmp(q->hosts[0], first->hosts[k]) == 0 || strcmp(q->hosts[1], first->hosts[k]) == 0;
    }
    return other_pair && in_all[0] != in_all[1] ? first->hosts[in_all[0] ? 0 : 1] : NULL;
}

/* The first slow NIC named on host h alone (its text too), the others dropped. */
static void nic_only_on(nsc_findings *f, const char *host)
{
    char h[sizeof f->p[0].hosts[0]];
    snprintf(h, sizeof h, "%s", host);
    int kept = 0;
    for (size_t i = 0; i < f->n; i++) {
        nsc_problem *p = &f->p[i];
        if (strcmp(p->kind, "slow_nic") != 0)
            continue;
        if (kept++) {
            p->kind[0] = 0;
            continue;
        }
        const char *rest = strstr(p->text, ": ");
        char text[sizeof p->text];
        snprintf(text, sizeof text, "slow NIC on %s (the one host every communicator's either-or slow NIC names)%s", h,
                 rest ? rest : "");
        memcpy(p->text, text, sizeof text);
        snprintf(p->hosts[0], sizeof p->hosts[0], "%s", h);
        p->hosts[1][0] = 0;
    }
}

void nsc_rc_nic_narrow(nsc_findings *f)
{
    for (size_t i = 0; i < f->n; i++) {
        nsc_problem *p = &f->p[i];
        if (strcmp(p->kind, "slow_nic") != 0 || !p->hosts[1][0])
            continue;
        int alone[2] = {0, 0};
        for (size_t j = 0; j < f->n; j++)
            for (int k = 0; k < 2; k++)
                alone[k] |= nic_alone_on(&f->p[j], p->hosts[k]);
        if (alone[0] != alone[1])
            p->kind[0] = 0;
    }
    nsc_diag_compact(f);
    const char *h = nic_common_host(f);
    if (h)
        nic_only_on(f, h);
    nsc_diag_compact(f);
}
