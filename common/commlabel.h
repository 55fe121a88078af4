/* commlabel.h: what tells a communicator from its job's others, for a person.
 *
 * Owns the label the API gives every communicator (docs/api.md, comms
 * "label"; the status's communicators too): its name, size and number of
 * hosts, "world 8 ranks on 2 hosts", and "#N", its place in id order among
 * the job's communicators alike in those three. NCCL programs often call
 * every communicator "world". The query (engine/query/topo.c) and the live
 * state (engine/live) both label through here, and the CLI and the web view
 * show the label as given.
 */
#ifndef NSC_COMMLABEL_H
#define NSC_COMMLABEL_H

#include <stddef.h>
#include <stdint.h>

/* What a label is made of, per communicator of one job. */
typedef struct nsc_comm_look {
    uint64_t id;
    const char *name;
    int64_t nranks;
    size_t hosts;  /* distinct hosts of its ranks seen */
} nsc_comm_look;

#define NSC_COMM_LABEL_MAX 128

/* The label of all[i] among the n communicators of its job. */
void nsc_comm_label(const nsc_comm_look *all, size_t n, size_t i, char *buf, size_t cap);

#endif
