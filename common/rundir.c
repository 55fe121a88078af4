/* rundir.c: the default run directory and its safety test (see rundir.h). */
#include "rundir.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fits(int n, size_t room)
{
    return n >= 0 && (size_t)n < room ? 0 : -1;
}

int nsc_rundir_default(char *out, size_t room, uid_t uid)
{
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    if (uid == 0)
        return fits(snprintf(out, room, "%s", NSC_RUNDIR_SYSTEM), room);
    if (xdg && xdg[0] == '/')
        return fits(snprintf(out, room, "%s/ncclscope", xdg), room);
    return fits(snprintf(out, room, "/tmp/ncclscope-%lu", (unsigned long)uid), room);
}

int nsc_rundir_plugin_default(char *out, size_t room)
{
    struct stat st;
    if (stat(NSC_RUNDIR_SYSTEM, &st) == 0 && S_ISDIR(st.st_mode))
        return fits(snprintf(out, room, "%s", NSC_RUNDIR_SYSTEM), room);
    return nsc_rundir_default(out, room, geteuid());
}

int nsc_rundir_private(const char *path, uid_t uid, char *why, size_t cap)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        snprintf(why, cap, "%.200s: %s", path, strerror(errno));
        return -1;
    }
    if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode)) {
        snprintf(why, cap, "%.200s is %s, not a directory", path, S_ISLNK(st.st_mode) ? "a symbolic link" : "a file");
        return -1;
    }
    if (st.st_uid != uid) {
        snprintf(why, cap, "%.200s belongs to uid %lu, not to this user (uid %lu): another user could plant links in it",
                 path, (unsigned long)st.st_uid, (unsigned long)uid);
        return -1;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(why, cap, "%.200s is writable by %s (mode %03o): another user could plant links in it; chmod go-w it",
                 path, st.st_mode & S_IWOTH ? "others" : "its group", (unsigned)(st.st_mode & 0777));
        return -1;
    }
    return 0;
}
