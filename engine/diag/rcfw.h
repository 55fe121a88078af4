/* rcfw.h: what the follow of late ranks across communicators (rcfollow.c)
 * shares with its processes' own times (rcown.c), its judge of Send/Recv
 * pairs (rcpairs.c), its onsets (rconset.c) and its beats that no
 * communicator's analysis sees (rcbeats.c): the records, one per rank and
 * collective or Send/Recv, with their processes and communicators. */
#ifndef NCCLSCOPE_DIAG_RCFW_H
#define NCCLSCOPE_DIAG_RCFW_H

#include <stddef.h>
#include <stdint.h>

#include "dint.h"

typedef struct fw_rec {
    uint64_t seq, api, done, gpu;  /* done: its end on the device, else on its host */
    uint64_t own;      /* its process's own time before it */
    uint64_t host;     /* ... of which its host's gap */
    uint64_t excess;   /* a collective's: own beyond its ranks' median; a Send/Recv's: host beyond its replicas'/peer's */
    uint64_t waited;   /* a Send/Recv's: how long its peer waited for it to be posted; a collective's
                          last, late: how long the others waited for it in all */
    int64_t blocker;   /* the process's earlier record that ended last, -1 none */
    uint32_t comm, who;
    uint32_t last_who;  /* a collective's: the process that arrived last */
    int32_t rank, peer;
    uint8_t p2p, late_last;  /* p2p: 1 a Send, 2 a Recv; late_last: it arrived last, late (figures.h) */
    uint8_t own_late;        /* ... and its own time explains half of that */
    uint8_t first;           /* its process's first: no earlier end to measure from */
} fw_rec;

typedef struct fw_comm {
    char id[24];
    int64_t nranks;
    size_t first;  /* its ranks' processes at who_of[first + rank] */
} fw_comm;

struct nsc_rc_follow {
    fw_comm *c;
    size_t nc, c_cap;
    uint32_t *who_of;  /* per communicator and rank: its process */
    size_t nwho_of, who_of_cap;
    char (*who)[80];   /* "host pid", or "" for a rank whose process is unknown */
    size_t nwho, who_cap;
    fw_rec *r;
    size_t n, cap;
    int oom;
};

/* Each process's own time (rcown.c): the records sorted by process and
 * time, each one's host gap after the process's latest end before it and
 * its GPU's start after both. A process's first has no gap to measure:
 * late, it counts as late of its own, as at a rank's first collective in a
 * communicator (rclate.c). */
void nsc_rc_own_times(nsc_rc_follow *w);
/* Every collective (not Send/Recv) judged after nsc_rc_own_times: who
 * arrived last, late, and whether of its own, counted in late_n and own_n
 * per communicator rank (w->c[comm].first + rank); 0, or -1 out of
 * memory. */
int nsc_rc_judge_colls(nsc_rc_follow *w, uint32_t *late_n, uint32_t *own_n);
/* The median of n values (sorted in place), the lower one of an even n. */
uint64_t nsc_rc_median(uint64_t *v, size_t n);

/* Onsets and frequencies (rconset.c). A beat's onset from record k (a
 * collective's or a Send/Recv's), moved back by whole beats of `every` such
 * records of its process and communicator; -1 if k is. */
int64_t nsc_rc_beat_start(const nsc_rc_follow *w, int64_t k, uint64_t every);
/* Process who's onset in communicator comm: the record of its first
 * collective there late of its own that begins a run, moved back over
 * pauses; the first late one if none begins a run; -1 none. */
int64_t nsc_rc_onset_rec(const nsc_rc_follow *w, uint32_t who, uint32_t comm);
/* Process who's record of collective seq in communicator comm, -1 none. */
int64_t nsc_rc_coll_rec(const nsc_rc_follow *w, uint32_t who, uint32_t comm, uint64_t seq);
/* How often the process of record k is late of its own in k's
 * communicator from k on (rclate.c's count): 1 every collective, N one in
 * N, 0 none. */
uint64_t nsc_rc_every_from(const nsc_rc_follow *w, int64_t k);
/* Each Send met with its Recv, and with the same one of the other
 * pipelines: the sides' host gaps beyond theirs (excess) and their peers'
 * waits (waited); 0, or -1 out of memory. */
int nsc_rc_pairs_judge(nsc_rc_follow *w);
/* The lateness of the processes no collective's problem stands for
 * (origin[who] 0) that no communicator's analysis sees (rcbeats.c): a beat
 * at their Send/Recv or at their collectives, their GPU late throughout
 * their collectives; how many problems were added, -1 out of memory. */
int nsc_rc_hidden_beats(nsc_findings *f, const nsc_rc_follow *w, const uint8_t *origin);

#endif
