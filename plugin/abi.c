/* abi.c: the table of NCCL versions and the layout each gives a symbol name,
 * finding the process's NCCL, and admitting or refusing an init.
 *
 * Runs at init only (never on the hot path): dlsym, dladdr and
 * dl_iterate_phdr may take the loader's locks.
 */
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "internal.h"

#define ANY_DIST ((nsc_dist)-1)
#define ANY_API 0

/* First match wins. Facts from NCCL's and RCCL's public trees (docs/plugin.md):
 * v3..v6 have one layout in every release that looks for them; v7 has several. */
static const nsc_abi_rule rules[] = {
    {7, NSC_DIST_NCCL, NSC_NCCL_CODE(2, 31, 0), NSC_NCCL_CODE(2, 31, 99), NSC_ABI_SERVE,
     "v7 with userTag and KernelPhase (NCCL 2.31)"},
    {7, NSC_DIST_RCCL, 1, INT_MAX, NSC_ABI_SERVE_NO_TAG,
     "RCCL's v7: KernelPhase, userTag not read (ROCm's tree has none)"},
    {7, NSC_DIST_UNKNOWN, 0, 0, NSC_ABI_SERVE,
     "no ncclGetVersion in the process: served as NCCL 2.31's v7"},
    {7, ANY_DIST, 0, INT_MAX, NSC_ABI_REFUSE,
     "v7 of this version is not known to be ours (NCCL trees also carry v7 as "
     "v6's descriptors plus getDeviceHook)"},
    {ANY_API, ANY_DIST, 0, INT_MAX, NSC_ABI_SERVE, "one layout in every release"},
};

static atomic_bool user_tag = true;

const nsc_abi_rule *nsc_abi_rule_for(int api, const nsc_nccl_lib *lib)
{
    size_t n = sizeof rules / sizeof rules[0];
    for (size_t i = 0; i < n - 1; i++) {
        const nsc_abi_rule *r = &rules[i];
        if ((r->api == ANY_API || r->api == api) && (r->dist == ANY_DIST || r->dist == lib->dist) &&
            lib->code >= r->lo && lib->code <= r->hi)
            return r;
    }
    return &rules[n - 1];
}

/* ---- finding NCCL ---------------------------------------------------------------------- */

typedef ncclResult_t (*get_version_fn)(int *version);

static int ask(void *sym, nsc_nccl_lib *lib)
{
    Dl_info info;
    int code = 0;
    if (!sym || ((get_version_fn)sym)(&code) != ncclSuccess || code <= 0)
        return -1;
    lib->code = code;
    lib->path[0] = 0;
    if (dladdr(sym, &info) && info.dli_fname)
        snprintf(lib->path, sizeof lib->path, "%s", info.dli_fname);
    const char *base = strrchr(lib->path, '/');
    lib->dist = strstr(base ? base + 1 : lib->path, "rccl") ? NSC_DIST_RCCL : NSC_DIST_NCCL;
    return 0;
}

/* Loaded objects named like NCCL's or RCCL's library (not their plugins). */
typedef struct {
    char names[8][256];
    int n;
} candidates;

static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    candidates *c = arg;
    const char *base = strrchr(info->dlpi_name, '/');
    base = base ? base + 1 : info->dlpi_name;
    if (c->n < 8 && (strncmp(base, "libnccl.", 8) == 0 || strncmp(base, "librccl.", 8) == 0))
        snprintf(c->names[c->n++], sizeof c->names[0], "%s", info->dlpi_name);
    return 0;
}

void nsc_abi_detect(nsc_nccl_lib *lib)
{
    memset(lib, 0, sizeof *lib);
    if (ask(dlsym(RTLD_DEFAULT, "ncclGetVersion"), lib) == 0)
        return;
    /* Not in the global scope (a library loaded RTLD_LOCAL, as Python loads
     * PyTorch's): look in the loaded objects themselves. The handles are taken
     * after the iteration, which holds the loader's list lock. */
    candidates c = {.n = 0};
    dl_iterate_phdr(collect, &c);
    for (int i = 0; i < c.n; i++) {
        void *dl = dlopen(c.names[i], RTLD_LAZY | RTLD_NOLOAD);
        int found = dl ? ask(dlsym(dl, "ncclGetVersion"), lib) : -1;
        if (dl)
            dlclose(dl);
        if (found == 0)
            return;
    }
    memset(lib, 0, sizeof *lib);
}

/* ---- admitting an init ----------------------------------------------------------------- */

/* "NCCL 2.31.2 (/usr/lib/libnccl.so.2)", or what is missing. */
static void describe(const nsc_nccl_lib *lib, char *out, size_t len)
{
    if (!lib->code) {
        snprintf(out, len, "no ncclGetVersion found (NCCL version unknown)");
        return;
    }
    snprintf(out, len, "%s %d.%d.%d (%s)", lib->dist == NSC_DIST_RCCL ? "RCCL" : "NCCL",
             lib->code / 10000, lib->code / 100 % 100, lib->code % 100,
             lib->path[0] ? lib->path : "?");
}

/* NCCLSCOPE_ABI_V7=serve: the operator has checked that this NCCL's v7 is
 * ours (a release newer than the table). Returns 1 for serve, 0 for unset or
 * "auto", -1 (logged) for anything else. */
static int operator_serves_v7(void)
{
    const char *v = getenv("NCCLSCOPE_ABI_V7");
    if (!v || !*v || strcmp(v, "auto") == 0)
        return 0;
    if (strcmp(v, "serve") == 0)
        return 1;
    nsc_log(NSC_LOG_WARN, "ncclscope: NCCLSCOPE_ABI_V7=%s: expected auto or serve", v);
    return -1;
}

int nsc_abi_admit(int api, ncclDebugLogger_t logfn)
{
    nsc_nccl_lib lib;
    char who[320];
    nsc_abi_detect(&lib);
    describe(&lib, who, sizeof who);
    const nsc_abi_rule *r = nsc_abi_rule_for(api, &lib);
    nsc_log_set(logfn);
    if (r->verdict == NSC_ABI_REFUSE && !(api == 7 && operator_serves_v7() == 1)) {
        nsc_log(NSC_LOG_WARN, "ncclscope: %s: not serving ncclProfiler_v%d: %s; profiling disabled"
                " (NCCLSCOPE_ABI_V7=serve serves it once its layout is checked)", who, api, r->layout);
        return -1;
    }
    if (r->verdict == NSC_ABI_REFUSE) {
        atomic_store(&user_tag, true);
        nsc_log(NSC_LOG_WARN, "ncclscope: %s: serving ncclProfiler_v%d as NCCL 2.31's because "
                "NCCLSCOPE_ABI_V7=serve (the table says: %s)", who, api, r->layout);
        return 0;
    }
    atomic_store(&user_tag, r->verdict == NSC_ABI_SERVE);
    nsc_log(NSC_LOG_INFO, "ncclscope: %s: serving ncclProfiler_v%d: %s", who, api, r->layout);
    return 0;
}

bool nsc_abi_user_tag(void)
{
    return atomic_load_explicit(&user_tag, memory_order_relaxed);
}
