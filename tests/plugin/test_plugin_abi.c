/* test_plugin_abi.c: the exported structs are padded with zeroes inside their
 * symbols, and init serves or refuses by the NCCL the process runs (abi.c):
 * no NCCL found, a NCCL whose v7 is not ours, RCCL (no userTag). The NCCL
 * libraries are loaded RTLD_LOCAL, so the plugin must find them without the
 * global scope. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../plugin/abi.h"
#include "harness.h"

static const size_t api_size[8] = {
    [3] = sizeof(ncclProfiler_v3_t), [4] = sizeof(ncclProfiler_v4_t),
    [5] = sizeof(ncclProfiler_v5_t), [6] = sizeof(ncclProfiler_v6_t),
    [7] = sizeof(ncclProfiler_v7_t)};

Test(abi, every_export_is_followed_by_zeroes_inside_its_symbol)
{
    void *dl = dlopen(NSC_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(dl);
    size_t pad = NSC_ABI_PAD_PTRS * sizeof(void *);
    for (int v = 3; v <= 7; v++) {
        char name[32];
        snprintf(name, sizeof name, "ncclProfiler_v%d", v);
        const unsigned char *s = dlsym(dl, name);
        cr_assert_not_null(s, "%s", name);
        for (size_t i = 0; i < pad; i++)
            cr_assert_eq(s[api_size[v] + i], 0, "%s: byte %zu after the struct", name, i);
        Dl_info info;
        const ElfW(Sym) *sym = NULL;
        cr_assert(dladdr1(s, &info, (void **)&sym, RTLD_DL_SYMENT));
        cr_assert_not_null(sym);
        cr_assert_str_eq(info.dli_sname, name);
        cr_assert_geq(sym->st_size, api_size[v] + pad, "%s: symbol size %zu", name,
                      (size_t)sym->st_size);
        /* A NCCL reading one more member (getDeviceHook) finds NULL. */
        cr_assert_null(*(void *const *)(s + api_size[v]));
    }
    dlclose(dl);
}

static char logged[4096];

static void capture(int level, unsigned long flags, const char *file, int line, const char *fmt,
                    ...)
{
    (void)level, (void)flags, (void)file, (void)line;
    size_t n = strlen(logged);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(logged + n, sizeof logged - n, fmt, ap);
    va_end(ap);
}

static void *load_nccl(const char *file)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", NSC_ABI_LIB_DIR, file);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(lib, "%s", dlerror());
    cr_assert_null(dlsym(RTLD_DEFAULT, "ncclGetVersion"), "must not be global");
    return lib;
}

static int init_v(int v, void *dl, void **ctx)
{
    int mask = 0;
    if (v == 7)
        return ((const ncclProfiler_v7_t *)dlsym(dl, "ncclProfiler_v7"))
            ->init(ctx, 0x77, &mask, "w", 1, 1, 0, capture);
    return ((const ncclProfiler_v6_t *)dlsym(dl, "ncclProfiler_v6"))
        ->init(ctx, 0x77, &mask, "w", 1, 1, 0, capture);
}

Test(abi, no_nccl_in_the_process_serves_v7_and_says_so)
{
    h_env();
    void *dl, *ctx;
    cr_assert_not_null(h_load(7, &dl));
    cr_assert_eq(init_v(7, dl, &ctx), ncclSuccess);
    cr_assert(strstr(logged, "NCCL version unknown"), "%s", logged);
    cr_assert(strstr(logged, "serving ncclProfiler_v7"), "%s", logged);
    ((const ncclProfiler_v7_t *)dlsym(dl, "ncclProfiler_v7"))->finalize(ctx);
    dlclose(dl);
}

Test(abi, a_nccl_whose_v7_is_not_ours_fails_v7_init_but_serves_v6)
{
    h_env();
    void *lib = load_nccl("libnccl.so");
    void *dl, *ctx = NULL;
    cr_assert_not_null(h_load(7, &dl));
    cr_assert_eq(init_v(7, dl, &ctx), ncclInternalError);
    cr_assert_null(ctx);
    cr_assert(strstr(logged, "NCCL 2.32.0 ("), "%s", logged);
    cr_assert(strstr(logged, "libnccl.so): not serving ncclProfiler_v7"), "%s", logged);
    logged[0] = 0;
    cr_assert_eq(init_v(6, dl, &ctx), ncclSuccess);
    cr_assert(strstr(logged, "NCCL 2.32.0 ("), "%s", logged);
    cr_assert(strstr(logged, "serving ncclProfiler_v6"), "%s", logged);
    ((const ncclProfiler_v6_t *)dlsym(dl, "ncclProfiler_v6"))->finalize(ctx);
    dlclose(dl);
    dlclose(lib);
}

Test(abi, an_operator_can_serve_a_newer_v7_and_a_bad_setting_still_refuses)
{
    h_env();
    void *lib = load_nccl("libnccl.so");
    void *dl, *ctx = NULL;
    cr_assert_not_null(h_load(7, &dl));
    setenv("NCCLSCOPE_ABI_V7", "yes", 1);
    cr_assert_eq(init_v(7, dl, &ctx), ncclInternalError);
    cr_assert(strstr(logged, "NCCLSCOPE_ABI_V7=yes: expected auto or serve"), "%s", logged);
    logged[0] = 0;
    setenv("NCCLSCOPE_ABI_V7", "serve", 1);
    cr_assert_eq(init_v(7, dl, &ctx), ncclSuccess);
    unsetenv("NCCLSCOPE_ABI_V7");
    cr_assert(strstr(logged, "serving ncclProfiler_v7 as NCCL 2.31's because NCCLSCOPE_ABI_V7=serve"),
              "%s", logged);
    ((const ncclProfiler_v7_t *)dlsym(dl, "ncclProfiler_v7"))->finalize(ctx);
    dlclose(dl);
    dlclose(lib);
}

Test(abi, rccl_is_served_v7_without_reading_user_tags)
{
    h_env();
    h_recv_start();
    void *lib = load_nccl("librccl.so");
    void *dl, *ctx, *coll;
    const ncclProfiler_v7_t *p = h_load(7, &dl);
    cr_assert_eq(init_v(7, dl, &ctx), ncclSuccess);
    cr_assert(strstr(logged, "RCCL 2.31.2 ("), "%s", logged);
    ncclProfilerEventDescr_v7_t d = {.type = ncclProfileColl};
    d.coll.func = "AllReduce";
    d.coll.kernelVariant = "ll";
    d.coll.userTag = 0x1234; /* RCCL's descriptor has no such member: garbage there */
    p->startEvent(ctx, &coll, &d);
    p->stopEvent(coll);
    p->finalize(ctx);
    dlclose(dl);
    nsc_recv_totals t;
    nsc_recv *rc = h_recv_stop(&t);
    const nsc_event *c = nsc_recv_find(rc, NSC_T_COLL, NULL, NULL);
    cr_assert_not_null(c);
    cr_assert_eq(c->d.coll.user_tag, 0);
    cr_assert_str_eq(nsc_recv_str(rc, (uint32_t)getpid(), c->d.coll.kernel_variant), "ll");
    nsc_recv_free(rc);
    dlclose(lib);
}
