/* quirks.c: --nccl-quirk NAME, known bugs of real NCCL's profiler calls made
 * as that NCCL makes them, so that the plugin's tolerance of each can be
 * tested (docs/nccl-abi.md, "Known NCCL bugs"; docs/emulator.md). */
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

bool emu_quirk_step_stops(int step, int nsteps)
{
    return !on(EMU_Q_UNPAIRED_STEPS) || step + 1 < nsteps;
}
