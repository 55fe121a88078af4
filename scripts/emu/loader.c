/* loader.c: finds, loads and calls a profiler plugin with NCCL's rules.
 *
 * NCCL_PROFILER_PLUGIN unset: libnccl-profiler.so; "none" (any case): profiling
 * off; a prefix of STATIC_PLUGIN: the program's own symbols; otherwise the value
 * is dlopen'ed as given, then, unless it is a path or a lib*.so name, as
 * libnccl-profiler-<value>.so. The newest exported ncclProfiler_vN data symbol
 * wins (or the one forced with --api). One library per process, reference
 * counted per communicator, dlclose'd at zero so it can be loaded again.
 * Calls go through the struct of the chosen version with that version's types.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "emu.h"

int emu_mask;

static bool is_lib_so(const char *s)
{
    size_t n = strlen(s);
    return strncmp(s, "lib", 3) == 0 && n > 6 && strcmp(s + n - 3, ".so") == 0;
}

static void *open_spec(const char *spec, char *path, size_t pathlen)
{
    const char *name = spec ? spec : "libnccl-profiler.so";
    if (spec && *spec && strncmp("STATIC_PLUGIN", spec, strlen(spec)) == 0) {
        snprintf(path, pathlen, "(program)");
        return dlopen(NULL, RTLD_NOW | RTLD_LOCAL);
    }
    void *dl = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    snprintf(path, pathlen, "%s", name);
    if (!dl && spec && !strchr(spec, '/') && !is_lib_so(spec)) {
        snprintf(path, pathlen, "libnccl-profiler-%s.so", spec);
        dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
    return dl;
}

int emu_plugin_acquire(emu_plugin *pl, const char *spec, int force_version)
{
    if (pl->dl) {
        pl->refs++;
        return 0;
    }
    if (spec && strcasecmp(spec, "none") == 0)
        return 1;
    void *dl = open_spec(spec, pl->path, sizeof pl->path);
    if (!dl) {
        fprintf(stderr, "ncclscope-emu: no profiler plugin loaded (%s): %s\n", pl->path, dlerror());
        return 1;
    }
    for (int v = EMU_MAX_VERSION; v >= 1; v--) {
        if (force_version && v != force_version)
            continue;
        char sym[32];
        snprintf(sym, sizeof sym, "ncclProfiler_v%d", v);
        const void *api = dlsym(dl, sym);
        if (api) {
            pl->dl = dl;
            pl->version = v;
            pl->api = api;
            pl->refs = 1;
            return 0;
        }
    }
    if (force_version)
        fprintf(stderr, "ncclscope-emu: %s does not export ncclProfiler_v%d\n", pl->path, force_version);
    else
        fprintf(stderr, "ncclscope-emu: %s exports no ncclProfiler_v1..v7\n", pl->path);
    dlclose(dl);
    return 1;
}

void emu_plugin_release(emu_plugin *pl)
{
    if (!pl->dl || --pl->refs > 0)
        return;
    dlclose(pl->dl);
    pl->dl = NULL;
    pl->api = NULL;
}

/* All versions begin with `const char* name`. */
const char *emu_plugin_name(const emu_plugin *pl)
{
    return pl->api ? *(const char *const *)pl->api : "";
}

static void emu_logger(int level, unsigned long flags, const char *file, int line, const char *fmt,
                       ...)
{
    (void)flags;
    const char *dbg = getenv("NCCL_DEBUG");
    if (level > 2 && !(dbg && strcasecmp(dbg, "INFO") == 0))
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "NCCL emu %s:%d ", file ? file : "?", line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int emu_plugin_init(const emu_plugin *pl, void **ctx, const emu_comm_info *ci)
{
    const char *name = ci->name ? ci->name : "";
    switch (pl->version) {
    case 1: return ((const ncclProfiler_v1_t *)pl->api)->init(ctx, &emu_mask);
    case 2: return ((const ncclProfiler_v2_t *)pl->api)->init(ctx, &emu_mask);
    case 3: return ((const ncclProfiler_v3_t *)pl->api)->init(ctx, &emu_mask);
    case 4:
        return ((const ncclProfiler_v4_t *)pl->api)
            ->init(ctx, &emu_mask, name, ci->comm_id, ci->nnodes, ci->nranks, ci->rank, emu_logger);
    case 5:
        return ((const ncclProfiler_v5_t *)pl->api)
            ->init(ctx, ci->comm_id, &emu_mask, name, ci->nnodes, ci->nranks, ci->rank, emu_logger);
    case 6:
        return ((const ncclProfiler_v6_t *)pl->api)
            ->init(ctx, ci->comm_id, &emu_mask, name, ci->nnodes, ci->nranks, ci->rank, emu_logger);
    default:
        return ((const ncclProfiler_v7_t *)pl->api)
            ->init(ctx, ci->comm_id, &emu_mask, name, ci->nnodes, ci->nranks, ci->rank, emu_logger);
    }
}

/* The remaining members have one shape in every version; only the descriptor
 * and state-argument pointer types differ, so each call casts to its version. */
void emu_plugin_start(const emu_plugin *pl, void *ctx, void **h, void *d)
{
    switch (pl->version) {
    case 1: ((const ncclProfiler_v1_t *)pl->api)->startEvent(ctx, h, d); break;
    case 2: ((const ncclProfiler_v2_t *)pl->api)->startEvent(ctx, h, d); break;
    case 3: ((const ncclProfiler_v3_t *)pl->api)->startEvent(ctx, h, d); break;
    case 4: ((const ncclProfiler_v4_t *)pl->api)->startEvent(ctx, h, d); break;
    case 5: ((const ncclProfiler_v5_t *)pl->api)->startEvent(ctx, h, d); break;
    case 6: ((const ncclProfiler_v6_t *)pl->api)->startEvent(ctx, h, d); break;
    default: ((const ncclProfiler_v7_t *)pl->api)->startEvent(ctx, h, d); break;
    }
}

void emu_plugin_stop(const emu_plugin *pl, void *h)
{
    ((const ncclProfiler_v1_t *)pl->api)->stopEvent(h);
}

void emu_plugin_state(const emu_plugin *pl, void *h, int state, void *args)
{
    ncclProfilerEventState_t s = (ncclProfilerEventState_t)state;
    if (pl->version <= 3)
        ((const ncclProfiler_v1_t *)pl->api)->recordEventState(h, s, args);
    else
        ((const ncclProfiler_v4_t *)pl->api)->recordEventState(h, s, args);
}

void emu_plugin_finalize(const emu_plugin *pl, void *ctx)
{
    ((const ncclProfiler_v1_t *)pl->api)->finalize(ctx);
}
