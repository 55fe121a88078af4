/* lsave.h: the ledger builder's open collectives, kept in the spool across a
 * kill.
 *
 * The builder folds events of batches whose marks a flush stores and
 * acknowledges: from then on the plugin no longer has them. So every flush
 * saves, in the transaction that stores those marks, the builder's state of
 * each process that changed since the last save (agent/lbuild.h), and a
 * starting agent gives each process its state back when it first hears from
 * it: a collective open across a kill -9 gets its one record, neither lost
 * nor written twice. The states of processes not heard within linger_ms of
 * the start are deleted.
 */
#ifndef NCCLSCOPE_AGENT_LSAVE_H
#define NCCLSCOPE_AGENT_LSAVE_H

#include "agent.h"

/* Stage the states changed into c (staged by nsc_held_stage, before the
 * put). 0, or -1 without memory (nothing staged: the flush must wait). */
int nsc_lsave_stage(nsc_agent *a, nsc_spool_held_change *c);
/* After the flush: what the spool wrote counts as saved. */
void nsc_lsave_done(nsc_agent *a, const nsc_spool_held_change *c);
/* At start: the predecessor's states, kept until their process is heard. */
int nsc_lsave_load(nsc_agent *a, char err[256]);
/* p is heard for the first time since the start: its state back. */
void nsc_lsave_heard(nsc_agent *a, const nsc_reg_proc *p);
/* linger_ms after the start: the states of processes not heard go. */
void nsc_lsave_forget(nsc_agent *a);
/* At exit. */
void nsc_lsave_free(nsc_agent *a);

#endif
