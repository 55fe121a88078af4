/* start.c: the job's start barrier.
 *
 * ncclCommInitRank returns on no rank before every rank of the communicator
 * has joined, so a real job's ranks leave init together. The launcher starts
 * its worker processes one by one, and on a loaded machine the last starts
 * tens of ms after the first; since emulated ranks do not otherwise wait for
 * each other, that start lag would stay in every collective of the run and
 * outweigh a --slow-rank straggler's delay. So every rank, its communicators
 * open, counts itself into a file the launcher created and mapped shared, and
 * waits until all ranks of the job have.
 *
 * Waiters sleep on a futex of the shared page, woken by the last to join: a
 * thousand ranks polling would slow the very starts they wait for.
 *
 * The wait is bounded: a worker that died before joining (exec failure, a
 * plugin that would not load) must not turn the others into a hang.
 */
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "emu.h"

#define START_WAIT_NS (30ull * 1000000000ull)

int emu_start_create(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    int rc = ftruncate(fd, (off_t)sizeof(atomic_int));
    close(fd);
    return rc;
}

void emu_start_wait(const char *path, int joining, int total)
{
    int fd = open(path, O_RDWR | O_CLOEXEC);
    void *m = fd < 0 ? MAP_FAILED : mmap(NULL, sizeof(atomic_int), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (fd >= 0)
        close(fd);
    if (m == MAP_FAILED) {
        fprintf(stderr, "ncclscope-emu: no start barrier (%s): ranks start unaligned\n", path);
        return;
    }
    atomic_int *joined = m;
    int now = atomic_fetch_add(joined, joining) + joining;
    if (now >= total)
        syscall(SYS_futex, joined, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
    uint64_t deadline = emu_true_ns() + START_WAIT_NS;
    while ((now = atomic_load(joined)) < total) {
        uint64_t t = emu_true_ns();
        if (t >= deadline) {
            fprintf(stderr, "ncclscope-emu: %d of %d ranks joined in 30 s: starting without the others\n", now,
                    total);
            break;
        }
        struct timespec left = {(time_t)((deadline - t) / 1000000000u), (long)((deadline - t) % 1000000000u)};
        syscall(SYS_futex, joined, FUTEX_WAIT, now, &left, NULL, 0);
    }
    munmap(m, sizeof(atomic_int));
}
