/* dedupe.c: committed batch sequences per agent epoch (see dedupe.h). */
#include "dedupe.h"
#include "grow.h"

#include <stdlib.h>
#include <string.h>

typedef struct agent_seqs {
    char id[64];
    uint64_t epoch;     /* the agent's spool identity: a new spool starts at seq 0 again */
    nsc_store_seq_range *r;
    size_t n, cap;
    int dirty;
} agent_seqs;

struct nsc_dedupe {
    agent_seqs *agents;  /* sorted by (id, epoch) */
    size_t n, cap;
    int unknown;         /* the last load failed: what is committed is not known */
};

nsc_dedupe *nsc_dedupe_new(void)
{
    return calloc(1, sizeof(nsc_dedupe));
}

static void clear(nsc_dedupe *d)
{
    for (size_t i = 0; i < d->n; i++)
        free(d->agents[i].r);
    d->n = 0;
}

void nsc_dedupe_free(nsc_dedupe *d)
{
    if (!d)
        return;
    clear(d);
    free(d->agents);
    free(d);
}

static int cmp_key(const agent_seqs *a, const char *id, uint64_t epoch)
{
    int c = strcmp(a->id, id);
    return c ? c : a->epoch < epoch ? -1 : a->epoch > epoch;
}

/* Index of (agent, epoch), or where it would go (*found says which). */
static size_t find(const nsc_dedupe *d, const char *id, uint64_t epoch, int *found)
{
    size_t lo = 0, hi = d->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = cmp_key(&d->agents[mid], id, epoch);
        if (c == 0) {
            *found = 1;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = 0;
    return lo;
}

/* A new, empty agent epoch at index i (where find said it goes). */
static agent_seqs *add_at(nsc_dedupe *d, size_t i, const char *id, uint64_t epoch)
{
    if (nsc_grow(&d->agents, d->n, &d->cap, sizeof *d->agents, 16))
        return NULL;
    memmove(&d->agents[i + 1], &d->agents[i], (d->n - i) * sizeof *d->agents);
    d->n++;
    agent_seqs *a = &d->agents[i];
    memset(a, 0, sizeof *a);
    strncpy(a->id, id, sizeof a->id - 1);
    a->epoch = epoch;
    return a;
}

static agent_seqs *get_or_add(nsc_dedupe *d, const char *id, uint64_t epoch)
{
    int found;
    size_t i = find(d, id, epoch, &found);
    return found ? &d->agents[i] : add_at(d, i, id, epoch);
}

/* A range is [lo, hi) with hi == 0 standing for 2^64, the end of the sequence
 * space: the last sequence, 2^64-1, is then the range {2^64-1, 0}, which is
 * also how stores written before this rule hold it, so they keep their meaning.
 * Every comparison with hi goes through these two. */
static int ends_before(const nsc_store_seq_range *r, uint64_t seq)
{
    return r->hi != 0 && r->hi < seq;
}

static int ends_at(const nsc_store_seq_range *r, uint64_t seq)
{
    return r->hi != 0 && r->hi == seq;
}

/* First range whose hi >= seq (a range that holds seq or could grow up to it). */
static size_t range_at(const agent_seqs *a, uint64_t seq)
{
    size_t lo = 0, hi = a->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (ends_before(&a->r[mid], seq))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int holds(const agent_seqs *a, size_t k, uint64_t seq)
{
    return k < a->n && a->r[k].lo <= seq && !ends_before(&a->r[k], seq) && !ends_at(&a->r[k], seq);
}

/* 1 if seq is the sequence just below range k. */
static int just_below(const agent_seqs *a, size_t k, uint64_t seq)
{
    return k < a->n && seq != UINT64_MAX && a->r[k].lo == seq + 1;
}

/* 1 if seq touches no range: marking it would add one. */
static int opens_range(const agent_seqs *a, size_t k, uint64_t seq)
{
    return !holds(a, k, seq) && !(k < a->n && ends_at(&a->r[k], seq)) && !just_below(a, k, seq);
}

/* The verdict on seq for agent epoch a (NULL: none marked yet), k its
 * range_at: the one place that decides, for classify and mark alike. */
static int verdict(const nsc_dedupe *d, const agent_seqs *a, size_t k, uint64_t seq)
{
    if (d->unknown)
        return NSC_DEDUPE_UNKNOWN;
    if (!a)
        return NSC_DEDUPE_NEW;
    if (holds(a, k, seq))
        return NSC_DEDUPE_DUPLICATE;
    return a->n >= NSC_DEDUPE_MAX_RANGES && opens_range(a, k, seq) ? NSC_DEDUPE_FULL : NSC_DEDUPE_NEW;
}

int nsc_dedupe_classify(const nsc_dedupe *d, const char *agent, uint64_t epoch, uint64_t seq)
{
    int found;
    size_t i = find(d, agent, epoch, &found);
    const agent_seqs *a = found ? &d->agents[i] : NULL;
    return verdict(d, a, a ? range_at(a, seq) : 0, seq);
}

static int insert_range(agent_seqs *a, size_t k, uint64_t seq)
{
    if (nsc_grow(&a->r, a->n, &a->cap, sizeof *a->r, 4))
        return -1;
    memmove(&a->r[k + 1], &a->r[k], (a->n - k) * sizeof *a->r);
    a->r[k] = (nsc_store_seq_range){seq, seq + 1};
    a->n++;
    return 0;
}

static void remove_range(agent_seqs *a, size_t k)
{
    memmove(&a->r[k], &a->r[k + 1], (a->n - k - 1) * sizeof *a->r);
    a->n--;
}

int nsc_dedupe_mark(nsc_dedupe *d, const char *agent, uint64_t epoch, uint64_t seq)
{
    int found;
    size_t i = find(d, agent, epoch, &found);
    agent_seqs *a = found ? &d->agents[i] : NULL;
    size_t k = a ? range_at(a, seq) : 0;
    int v = verdict(d, a, k, seq);
    if (v == NSC_DEDUPE_DUPLICATE)
        return 0;
    if (v)
        return v;
    if (!a && !(a = add_at(d, i, agent, epoch)))
        return -1;
    a->dirty = 1;
    if (k < a->n && ends_at(&a->r[k], seq)) {
        a->r[k].hi++;  /* 2^64-1 + 1 wraps to 0: the range now ends the space */
        if (k + 1 < a->n && a->r[k].hi != 0 && a->r[k + 1].lo == a->r[k].hi) {
            a->r[k].hi = a->r[k + 1].hi;
            remove_range(a, k + 1);
        }
    } else if (just_below(a, k, seq)) {
        a->r[k].lo = seq;
    } else if (insert_range(a, k, seq)) {
        return -1;
    }
    return 0;
}

int nsc_dedupe_put_dirty(nsc_dedupe *d, nsc_store *st)
{
    for (size_t i = 0; i < d->n; i++) {
        agent_seqs *a = &d->agents[i];
        if (!a->dirty)
            continue;
        int rc = nsc_store_put_agent_seqs(st, a->id, a->epoch, a->r, a->n);
        if (rc)
            return rc;
        a->dirty = 0;
    }
    return 0;
}

int nsc_dedupe_known(const nsc_dedupe *d)
{
    return !d->unknown;
}

size_t nsc_dedupe_agents(const nsc_dedupe *d)
{
    return d->n;
}

static int by_lo(const void *x, const void *y)
{
    const nsc_store_seq_range *a = x, *b = y;
    return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/* Sorted, disjoint and not adjacent, whatever a store written by an older
 * collector holds (one that wrapped at 2^64-1 could leave ranges out of order
 * or overlapping): a range that touches the one before joins it. */
static void normalize(agent_seqs *a)
{
    qsort(a->r, a->n, sizeof *a->r, by_lo);
    size_t out = 0;
    for (size_t i = 0; i < a->n; i++) {
        if (a->r[i].hi != 0 && a->r[i].hi <= a->r[i].lo)
            continue;  /* empty: holds nothing */
        nsc_store_seq_range *prev = out ? &a->r[out - 1] : NULL;
        if (prev && (prev->hi == 0 || a->r[i].lo <= prev->hi)) {
            if (prev->hi != 0 && (a->r[i].hi == 0 || a->r[i].hi > prev->hi))
                prev->hi = a->r[i].hi;
            continue;
        }
        a->r[out++] = a->r[i];
    }
    a->n = out;
}

static int load_agent(void *arg, const char *agent, uint64_t epoch, const nsc_store_seq_range *r, size_t n)
{
    agent_seqs *a = get_or_add(arg, agent, epoch);
    if (!a)
        return NSC_STORE_ENOMEM;
    a->r = malloc((n ? n : 1) * sizeof *r);
    if (!a->r)
        return NSC_STORE_ENOMEM;
    memcpy(a->r, r, n * sizeof *r);
    a->cap = n ? n : 1;
    a->n = n;
    normalize(a);
    return 0;
}

int nsc_dedupe_load(nsc_dedupe *d, nsc_store *st)
{
    nsc_store_reader *rd;
    clear(d);
    int rc = nsc_store_read_begin(st, &rd);
    if (!rc) {
        rc = nsc_store_agents(rd, load_agent, d);
        nsc_store_read_end(rd);
    }
    if (rc)
        clear(d);  /* a part of the set would pass committed batches as new */
    d->unknown = rc != 0;
    return rc;
}
