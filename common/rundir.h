/* rundir.h: the directory of the agent's socket (the run directory) when no
 * one names it, which the agent, the plugin and `ncclscope up` must agree on
 * without being told, and the test that a directory is safe to hold it.
 *
 * A shared, world-writable place such as /tmp lets another local user create
 * the directory first and plant links in it that the agent, often root,
 * would then write through. So the default is a directory only the agent's
 * user can create: /run/ncclscope for root, $XDG_RUNTIME_DIR/ncclscope for
 * a user with a runtime directory, else /tmp/ncclscope-UID, and the agent
 * refuses to start in a directory that is not its own (nsc_rundir_private).
 * The plugin runs as the job's user, often not the agent's: it takes
 * /run/ncclscope where that exists (a root agent serves the node), else its
 * own user's default. */
#ifndef NSC_RUNDIR_H
#define NSC_RUNDIR_H

#include <stddef.h>
#include <sys/types.h>

#define NSC_RUNDIR_SYSTEM "/run/ncclscope"

/* The default run directory of a process of user uid; 0, or -1 when it does
 * not fit in room. */
int nsc_rundir_default(char *out, size_t room, uid_t uid);

/* The plugin's default: NSC_RUNDIR_SYSTEM where it is a directory, else
 * nsc_rundir_default(geteuid()). */
int nsc_rundir_plugin_default(char *out, size_t room);

/* 0 when path is a directory (not a link) owned by uid that neither its
 * group nor others may write; else -1 with the reason in why. */
int nsc_rundir_private(const char *path, uid_t uid, char *why, size_t cap);

#endif
