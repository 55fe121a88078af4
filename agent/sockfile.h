/* sockfile.h: the agent's sockets in its run directory.
 *
 * Owns how a socket is offered to the ranks and tools of the node: bound on
 * ipc://<rundir>/<name>, the socket file then made mode 0660 (its owner and
 * group may connect, docs/agent.md). The batch socket (ingest.h) and the
 * acknowledgement socket (acks.h) both go through here, so neither of those
 * needs the other for it.
 */
#ifndef NCCLSCOPE_AGENT_SOCKFILE_H
#define NCCLSCOPE_AGENT_SOCKFILE_H

#include "config.h"

/* Bind sock (options set) on ipc://<cfg->rundir>/<name>, the file then mode
 * 0660. sock NULL (its creation failed) is an error too. 0, or -1 and err. */
int nsc_sockfile_bind(const nsc_agent_cfg *cfg, void *sock, const char *name, char err[256]);

#endif
