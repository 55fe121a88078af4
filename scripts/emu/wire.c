/* wire.c: what the ranks of a job tell each other, in a file the launcher
 * creates and every worker maps MAP_SHARED (as start.c's barrier).
 *
 * One slot per (communicator, global rank): a counter of the collectives the
 * rank's device has reached and, for the last few, when it started them and
 * what it called (the signature a mismatch changes). A rank computes its
 * schedule from every peer's start (model.c), so it waits here, on a futex
 * of the peer's counter, until each peer published the same collective.
 * Send/Recv pairs meet here too: each rank lists its recent p2p ops (peer,
 * the how-many-th with that peer in that direction, start, signature), and
 * each side of a pair waits for the other's entry, as NCCL's send waits for
 * the receiver's buffer and the receive for the data.
 * A peer that exits or dies without publishing is marked gone (by its own
 * close, or by the launcher that reaped it): the wait ends, and that
 * collective never completes, as in NCCL. A bound (120 s without the peer)
 * keeps a lost peer from hanging the emulator itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "emu.h"

/* An entry is overwritten WIRE_RECENT collectives later. Its readers are
 * done by then: a rank publishes collective k (its host at enqueue,
 * timeline.c, or its proxy) only after reading every peer's k-1, which the
 * peer's proxy published after reading all before it, or the peer's host,
 * whose proxy thread had then finished all but the last 16 (engine.c's bound
 * on the host's lead). One whose device is stuck publishes "never" without
 * reading, and an entry it overwrote reads as "never" too (its k tells). */
#define WIRE_RECENT 32
#define WIRE_WAIT_NS (120ull * 1000000000ull)

typedef struct wire_pub {
    uint64_t k, ready, sig;
} wire_pub;

/* A rank's host publishes a group's p2p ops (at most 64, scenarios.c) at
 * enqueue, and the next group's only once each partner published this one.
 * The partners' proxies read the entries too, and a proxy may still be in
 * the group before its host's last (the host posts a group of more than 16
 * ops once its proxy is done with all before, a smaller one within 16 ops of
 * it, engine.c): a rank may by then have published two groups more than the
 * one that proxy reads. Three groups fit, so the entry is still there when
 * it reads it (with two, a 32-rank AlltoAll's proxy held back waited for an
 * entry overwritten). */
#define WIRE_P2P_RECENT 256

typedef struct wire_p2p {
    int32_t peer;
    uint32_t nth_send; /* nth << 1 | send */
    uint64_t ready, sig;
} wire_p2p;

typedef struct wire_slot {
    atomic_uint published; /* collectives published: the futex word */
    atomic_uint gone;
    atomic_uint waiters;   /* readers asleep on `published`: a publish wakes only them */
    atomic_uint p2p_published, p2p_waiters; /* the same for p2p entries */
    /* In the slot of a communicator's rank 0: how many of its ranks
     * published collective k (cumulative over k, k + WIRE_RECENT, ...), and
     * readers asleep on any of these counts (the last arrival wakes only them). */
    atomic_uint arrived[WIRE_RECENT];
    atomic_uint arrived_waiters;
    wire_pub recent[WIRE_RECENT];
    wire_p2p p2p[WIRE_P2P_RECENT];
} wire_slot;

struct emu_wire {
    wire_slot *slots;
    size_t size;
};

uint32_t emu_wire_slots(const emu_opts *o)
{
    /* --comms communicators, and a split's two children or train's three. */
    return (uint32_t)((o->comms + 3) * o->nodes * o->ranks_per_node);
}

uint32_t emu_wire_slot(const emu_rank *r, int comm_rank)
{
    const emu_opts *o = r->w->o;
    int global = r->world_base + r->world_stride * comm_rank;
    return (uint32_t)(r->wire_comm * o->nodes * o->ranks_per_node + global);
}

int emu_wire_create(const char *path, uint32_t nslots)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    int rc = ftruncate(fd, (off_t)(nslots * sizeof(wire_slot)));
    close(fd);
    return rc;
}

emu_wire *emu_wire_map(const char *path)
{
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    off_t size = lseek(fd, 0, SEEK_END);
    void *m = size > 0 ? mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    close(fd);
    emu_wire *w = m == MAP_FAILED ? NULL : malloc(sizeof *w);
    if (!w) {
        if (m != MAP_FAILED)
            munmap(m, (size_t)size);
        return NULL;
    }
    *w = (emu_wire){m, (size_t)size};
    return w;
}

void emu_wire_unmap(emu_wire *w)
{
    if (!w)
        return;
    munmap(w->slots, w->size);
    free(w);
}

/* A private futex spares the kernel the lookup of a shared one's page. */
void emu_futex_wake(void *word, bool shared)
{
    syscall(SYS_futex, word, shared ? FUTEX_WAKE : FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

void emu_futex_wait(void *word, unsigned seen, const struct timespec *left, bool shared)
{
    syscall(SYS_futex, word, shared ? FUTEX_WAIT : FUTEX_WAIT_PRIVATE, seen, left, NULL, 0);
}

/* Arrivals at k when all nranks came, counted over the uses of its counter. */
static unsigned all_arrived(uint32_t k, int nranks)
{
    return (unsigned)nranks * (k / WIRE_RECENT + 1);
}

void emu_wire_publish(emu_wire *w, uint32_t slot, uint32_t k, uint64_t ready, uint64_t sig, uint32_t leader,
                      int nranks)
{
    wire_slot *s = &w->slots[slot];
    s->recent[k % WIRE_RECENT] = (wire_pub){k, ready, sig};
    atomic_store(&s->published, k + 1);
    if (atomic_load(&s->waiters)) /* a reader counted after this store finds k+1 itself */
        emu_futex_wake(&s->published, true);
    atomic_uint *count = &w->slots[leader].arrived[k % WIRE_RECENT];
    if (atomic_fetch_add(count, 1) + 1 == all_arrived(k, nranks) && atomic_load(&w->slots[leader].arrived_waiters))
        emu_futex_wake(count, true);
}

void emu_wire_wait_all(emu_wire *w, uint32_t leader, uint32_t k, int nranks)
{
    atomic_uint *count = &w->slots[leader].arrived[k % WIRE_RECENT];
    unsigned seen = atomic_load(count);
    /* The last to arrive is usually runnable on this CPU (ranks outnumber
     * CPUs): giving it the CPU twice is cheaper than sleeping to be woken
     * (docs/benchmarks-history.md, fourth round). */
    for (int y = 0; y < 2 && seen < all_arrived(k, nranks); y++) {
        sched_yield();
        seen = atomic_load(count);
    }
    /* A rank gone, or one stuck that publishes ahead without reading, makes
     * the count a poor guide: one bounded wait, then the reads decide. */
    if (seen < all_arrived(k, nranks)) {
        struct timespec left = {0, 50 * 1000 * 1000};
        atomic_uint *waiters = &w->slots[leader].arrived_waiters;
        atomic_fetch_add(waiters, 1);
        /* an arrival counted after this load sees the waiter (both seq_cst) */
        if (atomic_load(count) == seen)
            emu_futex_wait(count, seen, &left, true);
        atomic_fetch_sub(waiters, 1);
    }
}

void emu_wire_gone(emu_wire *w, uint32_t slot)
{
    wire_slot *s = &w->slots[slot];
    atomic_store(&s->gone, 1);
    emu_futex_wake(&s->published, true);
    emu_futex_wake(&s->p2p_published, true);
}

/* Wait until `word` moves from `seen`: -1 if the rank is gone or the wait
 * passed its deadline (set at the first wait). */
static int wait_moved(wire_slot *s, atomic_uint *word, atomic_uint *waiters, unsigned seen, uint64_t *deadline)
{
    if (atomic_load(&s->gone))
        return -1;
    uint64_t t = emu_true_ns();
    *deadline = *deadline ? *deadline : t + WIRE_WAIT_NS;
    if (t >= *deadline)
        return -1;
    /* Short waits: `gone` is set with a wake, but a launcher's mark may
     * race with the check above. */
    struct timespec left = {0, 50 * 1000 * 1000};
    atomic_fetch_add(waiters, 1);
    if (atomic_load(word) == seen)
        emu_futex_wait(word, seen, &left, true);
    atomic_fetch_sub(waiters, 1);
    return 0;
}

int emu_wire_read(emu_wire *w, uint32_t slot, uint32_t k, uint64_t *ready, uint64_t *sig)
{
    wire_slot *s = &w->slots[slot];
    uint64_t deadline = 0;
    for (;;) {
        unsigned now = atomic_load(&s->published);
        if (now > k) {
            wire_pub p = s->recent[k % WIRE_RECENT];
            *ready = p.k == k ? p.ready : EMU_NEVER;
            *sig = p.sig;
            return 0;
        }
        if (wait_moved(s, &s->published, &s->waiters, now, &deadline))
            return -1;
    }
}

void emu_wire_p2p_publish(emu_wire *w, uint32_t slot, const emu_wire_p2p *e)
{
    wire_slot *s = &w->slots[slot];
    unsigned n = atomic_load(&s->p2p_published);
    s->p2p[n % WIRE_P2P_RECENT] = (wire_p2p){e->peer, e->nth << 1 | (e->send ? 1u : 0u), e->ready, e->sig};
    atomic_store(&s->p2p_published, n + 1);
}

void emu_wire_p2p_wake(emu_wire *w, uint32_t slot)
{
    wire_slot *s = &w->slots[slot];
    if (atomic_load(&s->p2p_waiters)) /* a reader counted after the entries' stores finds them itself */
        emu_futex_wake(&s->p2p_published, true);
}

int emu_wire_p2p_read(emu_wire *w, uint32_t slot, emu_wire_p2p *e)
{
    wire_slot *s = &w->slots[slot];
    uint32_t key = e->nth << 1 | (e->send ? 1u : 0u);
    uint64_t deadline = 0;
    /* Newest first: the entry sought is seldom far back, and the window
     * scanned from its oldest end costs up to WIRE_P2P_RECENT compares. */
    for (unsigned seen = 0;;) {
        unsigned now = atomic_load(&s->p2p_published);
        unsigned oldest = now - seen > WIRE_P2P_RECENT ? now - WIRE_P2P_RECENT : seen;
        for (unsigned i = now; i > oldest; i--) {
            const wire_p2p *p = &s->p2p[(i - 1) % WIRE_P2P_RECENT];
            if (p->peer == e->peer && p->nth_send == key) {
                e->ready = p->ready;
                e->sig = p->sig;
                return 0;
            }
        }
        seen = now;
        if (wait_moved(s, &s->p2p_published, &s->p2p_waiters, now, &deadline))
            return -1;
    }
}
