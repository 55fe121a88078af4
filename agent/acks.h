/* acks.h: the agent's acknowledgements to the plugins (docs/protocol.md).
 *
 * Owns the PUB socket on ipc://<rundir>/agent.sock.ack (file mode 0660),
 * bound before the batch socket so that a plugin that can send finds it, and
 * the order of each plugin stream: a batch is taken only if it is the one
 * its stream expects next (the seq after the last one taken, or after the
 * last one stored for a stream this agent process has not heard yet: the
 * spool keeps the marks across a kill). An earlier one was stored already
 * and is dropped; a later one follows a gap (a killed predecessor lost what
 * came between) and is dropped with a RESEND request for the gap. After each
 * flush the marks it stored are acknowledged (STORED), and again to a plugin
 * that sends a stored batch again (it missed the acknowledgement). The agent process's
 * start time names it in a RESEND, so a plugin resends once per agent.
 * A mark found in the spool at start whose stream is not heard within
 * linger_ms (its process ended while no agent ran) is deleted, as a
 * reaped process's is.
 */
#ifndef NCCLSCOPE_AGENT_ACKS_H
#define NCCLSCOPE_AGENT_ACKS_H

#include "agent.h"

int nsc_acks_open(nsc_agent *a, char err[256]);
void nsc_acks_close(nsc_agent *a);
/* Is this the batch h's stream expects next? A sender without a stream
 * (older) is always taken. Drops are counted. */
int nsc_acks_admit(nsc_agent *a, const nsc_batch_hdr *h);
/* p took the batch h (its stream moves on; its mark joins the next flush). */
void nsc_acks_took(nsc_agent *a, nsc_reg_proc *p, const nsc_batch_hdr *h);
/* nsc_out_stored_fn: acknowledge the marks a flush stored or counted. */
void nsc_acks_stored(void *agent, const nsc_spool_mark *marks, size_t n);
/* At start: the streams the spool has marks of are unheard. 0 or -1. */
int nsc_acks_unheard_load(nsc_agent *a, char err[256]);
/* linger_ms after the start: delete the marks of the streams still unheard. */
void nsc_acks_unheard_forget(nsc_agent *a);

#endif
