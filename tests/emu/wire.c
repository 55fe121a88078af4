/* wire.c: what the ranks of a job tell each other, in a file the launcher
 * creates and every worker maps MAP_SHARED (as start.c's barrier).
 *
 * One slot per (communicator, global rank): a counter of the collectives the
 * rank's device has reached and, for the last few, when it started them and
 * what it called (the signature a mismatch changes). A rank computes its
 * schedule from every peer's start (model.c), so it waits here, on a futex
 * of the peer's counter, until each peer published the same collective.
 * A peer that exits or dies without publishing is marked gone (by its own
 * close, or by the launcher that reaped it): the wait ends, and that
 * collective never completes, as in NCCL. A bound (120 s without the peer)
 * keeps a lost peer from hanging the emulator itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "emu.h"

/* A rank publishes collective k+1 only after reading every peer's k; one
 * whose device is stuck publishes "never" without reading, and an entry it
 * overwrote reads as "never" too (its k tells). */
#define WIRE_RECENT 8
#define WIRE_WAIT_NS (120ull * 1000000000ull)

typedef struct wire_pub {
    uint64_t k, ready, sig;
} wire_pub;

typedef struct wire_slot {
    atomic_uint published; /* collectives published: the futex word */
    atomic_uint gone;
    atomic_uint waiters;   /* readers asleep on `published`: a publish wakes only them */
    wire_pub recent[WIRE_RECENT];
} wire_slot;

struct emu_wire {
    wire_slot *slots;
    size_t size;
};

uint32_t emu_wire_slots(const emu_opts *o)
{
    /* --comms communicators, and a split's two children. */
    return (uint32_t)((o->comms + 2) * o->nodes * o->ranks_per_node);
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

static void wake(atomic_uint *word)
{
    syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void emu_wire_publish(emu_wire *w, uint32_t slot, uint32_t k, uint64_t ready, uint64_t sig)
{
    wire_slot *s = &w->slots[slot];
    s->recent[k % WIRE_RECENT] = (wire_pub){k, ready, sig};
    atomic_store(&s->published, k + 1);
    if (atomic_load(&s->waiters)) /* a reader counted after this store finds k+1 itself */
        wake(&s->published);
}

void emu_wire_gone(emu_wire *w, uint32_t slot)
{
    wire_slot *s = &w->slots[slot];
    atomic_store(&s->gone, 1);
    wake(&s->published);
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
        if (atomic_load(&s->gone))
            return -1;
        uint64_t t = emu_true_ns();
        deadline = deadline ? deadline : t + WIRE_WAIT_NS;
        if (t >= deadline)
            return -1;
        /* Short waits: `gone` is set with a wake, but a launcher's mark may
         * race with the check above. */
        struct timespec left = {0, 50 * 1000 * 1000};
        atomic_fetch_add(&s->waiters, 1);
        if (atomic_load(&s->published) == now)
            syscall(SYS_futex, &s->published, FUTEX_WAIT, now, &left, NULL, 0);
        atomic_fetch_sub(&s->waiters, 1);
    }
}
