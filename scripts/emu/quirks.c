/* quirks.c: --nccl-quirk NAME, known bugs of real NCCL's profiler calls made
 * as that NCCL makes them, so that the plugin's tolerance of each can be
 * tested (docs/nccl-abi.md, "Known NCCL bugs"; docs/emulator.md). */
#include <stdlib.h>
#include <string.h>

#include "emu.h"

uint32_t emu_quirks;

const emu_quirk emu_quirk_table[] = {
    {"api-rank0", EMU_Q_API_RANK0,
     "GroupApi, CollApi, P2pApi and KernelLaunch carry rank 0 for every rank (NVIDIA/nccl#2300)"},
    {"zero-gpu-timer", EMU_Q_ZERO_GPU_TIMER,
     "KernelCh's pTimer, at its start and in KernelChStop, is 0 on channels above 0"},
    {"null-parent", EMU_Q_NULL_PARENT,
     "ProxyOp and KernelCh start with a NULL parent (as after a parent the plugin dropped)"},
    {"unpaired-steps", EMU_Q_UNPAIRED_STEPS,
     "the last ProxyStep of every ProxyOp is never stopped (NVIDIA/nccl#1658)"},
    {"drifting-kernelch", EMU_Q_DRIFTING_KERNELCH,
     "a Broadcast's task loses KernelCh, later KernelChs read older timers (NVIDIA/nccl PR #2368)"},
};
const int emu_nquirks = (int)(sizeof emu_quirk_table / sizeof emu_quirk_table[0]);

uint32_t emu_quirk_bit(const char *name)
{
    for (int i = 0; i < emu_nquirks; i++)
        if (strcmp(emu_quirk_table[i].name, name) == 0)
            return emu_quirk_table[i].bit;
    return 0;
}

static bool on(uint32_t bit)
{
    return (emu_quirks & bit) != 0;
}

void emu_quirks_descr(int version, const emu_ev *ev, emu_descr *d)
{
    unsigned t = ev->type;
    if (on(EMU_Q_API_RANK0) && version >= 5 && t >= NSC_T_GROUP_API && t <= NSC_T_KERNEL_LAUNCH)
        d->v5.rank = 0;
    if (on(EMU_Q_ZERO_GPU_TIMER) && version >= 4 && t == NSC_T_KERNEL_CH && ev->d.kernel_ch.ch > 0)
        d->v4.kernelCh.pTimer = 0;
    if (on(EMU_Q_NULL_PARENT) && (t == NSC_T_PROXY_OP || t == NSC_T_KERNEL_CH)) {
        if (version <= 4)
            d->v4.parentObj = NULL;
        else
            d->v5.parentObj = NULL;
    }
}

uint64_t emu_quirk_kch_stop(int ch, uint64_t ptimer)
{
    return on(EMU_Q_ZERO_GPU_TIMER) && ch > 0 ? 0 : ptimer;
}

/* The ring NCCL's kernel writes each channel's start and stop timers to,
 * indexed by its work counter; the proxy reads the slot of its own count. */
#define KCH_RING 64
#define KCH_CHANNELS 64

typedef struct emu_kch_slot {
    uint64_t start, stop;
} emu_kch_slot;

int emu_quirks_rank_open(emu_rank *r)
{
    if (!on(EMU_Q_DRIFTING_KERNELCH))
        return 0;
    r->kch_ring = calloc(KCH_RING * KCH_CHANNELS, sizeof *r->kch_ring);
    return r->kch_ring ? 0 : -1;
}

void emu_quirks_rank_close(emu_rank *r)
{
    free(r->kch_ring);
    r->kch_ring = NULL;
}

/* NCCL 2.29's AllGatherV path rewrites a Broadcast into a task from a zeroed
 * pool and copies no activation mask to it (PR #2368): no kernel events. */
uint32_t emu_quirk_task_mask(int func, uint32_t mask)
{
    const uint32_t kernel = 1u << NSC_T_KERNEL_CH | 1u << NSC_T_KERNEL_PHASE;
    return on(EMU_Q_DRIFTING_KERNELCH) && func == EMU_F_BROADCAST ? mask & ~kernel : mask;
}

/* The device counts every task's work, the host only those with KernelCh in
 * their mask: each Broadcast leaves the host one further behind. */
void emu_quirk_kch_work(emu_rank *r, emu_op *op)
{
    if (!r->kch_ring)
        return;
    op->work = r->dev_work++;
    if (!(op->mask & (1u << NSC_T_KERNEL_CH)))
        r->host_behind++;
    op->host_work = op->work - r->host_behind;
}

/* The device writes the true timer to its own slot; the proxy reads the slot
 * of the host's count: an older task's (or, 64 behind, one written since). */
uint64_t emu_quirk_kch_timer(emu_rank *r, const emu_op *op, int ch, bool stop, uint64_t ptimer)
{
    if (!r->kch_ring || ch >= KCH_CHANNELS)
        return ptimer;
    emu_kch_slot *own = &r->kch_ring[(op->work % KCH_RING) * KCH_CHANNELS + (unsigned)ch];
    *(stop ? &own->stop : &own->start) = ptimer;
    const emu_kch_slot *read = &r->kch_ring[(op->host_work % KCH_RING) * KCH_CHANNELS + (unsigned)ch];
    return stop ? read->stop : read->start;
}

bool emu_quirk_step_stops(int step, int nsteps)
{
    return !on(EMU_Q_UNPAIRED_STEPS) || step + 1 < nsteps;
}
