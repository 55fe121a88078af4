/* abi.h: which NCCL this plugin serves, and how each exported struct is padded.
 *
 * Public NCCL trees carry more than one layout under the name ncclProfiler_v7
 * (docs/plugin.md, "NCCL versions and layouts"). At init the plugin asks the
 * process which NCCL it runs in (ncclGetVersion, also RCCL's name for it) and
 * looks the API version up in one table (abi.c): serve it, serve it without
 * the members that distribution lacks, or refuse (init fails; NCCL then runs
 * without the plugin). Shared by plugin.c and the tests that check the table
 * and the exported symbols.
 */
#ifndef NCCLSCOPE_PLUGIN_ABI_H
#define NCCLSCOPE_PLUGIN_ABI_H

#include <stdbool.h>

#include "nccl/profiler_common.h"

/* Zeroed pointers after every exported ncclProfiler_vN, inside the same
 * symbol: a NCCL whose struct of that name has more (optional) members reads
 * NULL there instead of whatever the linker placed next. */
#define NSC_ABI_PAD_PTRS 8

/* NCCL_VERSION(X,Y,Z) for releases from 2.9 on; 0 is "not known". */
#define NSC_NCCL_CODE(x, y, z) ((x) * 10000 + (y) * 100 + (z))

typedef enum {
    NSC_ABI_SERVE = 0,       /* the layout is ours */
    NSC_ABI_SERVE_NO_TAG,    /* ours but without the v7 userTag members: not read */
    NSC_ABI_REFUSE           /* another or an unknown layout under this name */
} nsc_abi_verdict;

typedef enum { NSC_DIST_UNKNOWN = 0, NSC_DIST_NCCL, NSC_DIST_RCCL } nsc_dist;

/* The NCCL library of this process, as found at init. */
typedef struct nsc_nccl_lib {
    int code;          /* ncclGetVersion's answer; 0 when no NCCL was found */
    nsc_dist dist;
    char path[256];    /* the object that defines ncclGetVersion ("" if none) */
} nsc_nccl_lib;

/* One row of the table: API version, distribution, versions [lo, hi]. */
typedef struct nsc_abi_rule {
    int api;
    nsc_dist dist;
    int lo, hi;
    nsc_abi_verdict verdict;
    const char *layout;  /* what that NCCL's struct of this name looks like */
} nsc_abi_rule;

/* The rule for serving ncclProfiler_v<api> to lib (never NULL). */
const nsc_abi_rule *nsc_abi_rule_for(int api, const nsc_nccl_lib *lib);

/* Find the process's NCCL: ncclGetVersion in the global scope, else in any
 * loaded object (PyTorch loads libnccl RTLD_LOCAL). lib->code 0 if none. */
void nsc_abi_detect(nsc_nccl_lib *lib);

/* At init of ncclProfiler_v<api>: detect, log which ABI is served (through
 * logfn when NCCL gave one), and return 0 to serve or -1 to refuse. */
int nsc_abi_admit(int api, ncclDebugLogger_t logfn);

/* Whether v7 descriptors carry userTag (false for a NSC_ABI_SERVE_NO_TAG
 * init); read on the hot path, written at init. */
bool nsc_abi_user_tag(void);

#endif
