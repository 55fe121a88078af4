/* test_loader.c: NCCL's loading rules as loader.c implements them: name ->
 * libnccl-profiler-<name>.so, newest version or a forced one, reference
 * counting, dlclose at zero and loading again in the same process. */
#include <criterion/criterion.h>
#include <dlfcn.h>

#include "emu.h"

Test(loader, refcount_dlclose_and_reload)
{
    emu_plugin pl = {0};
    cr_assert_eq(emu_plugin_acquire(&pl, "empty", 0), 0);
    cr_assert_eq(pl.version, 7, "newest exported version");
    cr_assert_str_eq(pl.path, "libnccl-profiler-empty.so");
    cr_assert_str_eq(emu_plugin_name(&pl), "empty");
    cr_assert_eq(emu_plugin_acquire(&pl, "empty", 0), 0);
    cr_assert_eq(pl.refs, 2);
    emu_plugin_release(&pl);
    void *still = dlopen("libnccl-profiler-empty.so", RTLD_NOW | RTLD_NOLOAD);
    cr_assert_not_null(still, "one reference left: still loaded");
    dlclose(still);
    emu_plugin_release(&pl);
    cr_assert_null(pl.dl);
    cr_assert_null(dlopen("libnccl-profiler-empty.so", RTLD_NOW | RTLD_NOLOAD), "unloaded at zero");
    cr_assert_eq(emu_plugin_acquire(&pl, "empty", 3), 0, "loads again, forced to v3");
    cr_assert_eq(pl.version, 3);
    void *ctx = (void *)1;
    emu_comm_info ci = {.comm_id = 9, .nranks = 1};
    cr_assert_eq(emu_plugin_init(&pl, &ctx, &ci), 0);
    emu_plugin_release(&pl);
}

Test(loader, none_and_missing)
{
    emu_plugin pl = {0};
    cr_assert_eq(emu_plugin_acquire(&pl, "NONE", 0), 1);
    cr_assert_eq(emu_plugin_acquire(&pl, "no-such-plugin", 0), 1);
    cr_assert_null(pl.dl);
}
