/* keys.h: the store's key layouts.
 *
 * Owns the byte layout of every LMDB key the store writes. All integers are
 * big-endian and ranks are stored with the sign bit flipped, so memcmp order
 * (LMDB's default) equals the numeric order of the tuple: a cursor walks a
 * rank's blocks in time order, a collective's index entries in rank order.
 * docs/collector-store.md lists the databases these keys live in.
 */
#ifndef NCCLSCOPE_KEYS_H
#define NCCLSCOPE_KEYS_H

#include <stddef.h>
#include <stdint.h>

/* blocks: (job, comm, rank, block start time, block seq) */
#define NSC_KEY_BLOCK_LEN 28
typedef struct nsc_block_key {
    uint32_t job;
    uint64_t comm;
    int32_t rank;
    uint64_t start_ns;  /* raw host time of the block's earliest record */
    uint32_t seq;       /* store-wide block counter: keys stay unique */
} nsc_block_key;

/* colls: one entry per run of consecutive seqNumbers of one function in one
 * block, keyed by the run's last seqNumber: (job, comm, func, rank, seq_last)
 * -> (block key, position of the run's first Coll, seq_first). A seek to
 * (job, comm, func, rank, seq) lands on the only run of the rank that can
 * hold seq; docs/collector-store.md, "Collective index". */
#define NSC_KEY_COLL_LEN 28
#define NSC_KEY_COLL_PREFIX 16  /* (job, comm, func): one collective's ranks */
typedef struct nsc_coll_key {
    uint32_t job;
    uint64_t comm;
    uint32_t func;  /* global string id of the function name */
    int32_t rank;
    uint64_t seq;   /* the run's last seqNumber */
} nsc_coll_key;

#define NSC_COLL_VAL_LEN (NSC_KEY_BLOCK_LEN + 12)
typedef struct nsc_coll_val {
    uint8_t block[NSC_KEY_BLOCK_LEN];  /* the block's key, as stored */
    uint32_t position;                 /* event index of the run's first Coll */
    uint64_t seq_first;                /* the lowest seqNumber the entry answers for */
} nsc_coll_val;

/* ledger: (job, comm, rank, first seq) -> the rank's records from that seq
 * to its next value's first, packed (ledger_pack.h). A rank's values follow
 * in seq order, so its newest is its last key: records join it until it
 * would pass one LMDB page (a whole overflow page: store_ledger.c), then
 * start the next, and the values behind it are not written again. */
#define NSC_KEY_LEDGER_LEN 24
typedef struct nsc_ledger_key {
    uint32_t job;
    uint64_t comm;
    uint64_t first;  /* the value's first seq: none of its records is below it */
    int32_t rank;
} nsc_ledger_key;

/* age: (commit time on the collector's clock, block seq) -> the key of the
 * block or ledger value first written then (told apart by their lengths) */
#define NSC_KEY_AGE_LEN 12

/* comms: (job, comm); ranks: (job, comm, rank) */
#define NSC_KEY_COMM_LEN 12
#define NSC_KEY_RANK_LEN 16

void nsc_key_block(uint8_t out[NSC_KEY_BLOCK_LEN], const nsc_block_key *k);
int nsc_key_block_parse(const void *key, size_t len, nsc_block_key *k); /* 0 or -1 */
void nsc_key_coll(uint8_t out[NSC_KEY_COLL_LEN], const nsc_coll_key *k);
int nsc_key_coll_parse(const void *key, size_t len, nsc_coll_key *k);
void nsc_coll_val_put(uint8_t out[NSC_COLL_VAL_LEN], const nsc_coll_val *v);
int nsc_coll_val_parse(const void *val, size_t len, nsc_coll_val *v); /* 0 or -1 */
void nsc_key_ledger(uint8_t out[NSC_KEY_LEDGER_LEN], const nsc_ledger_key *k);
int nsc_key_ledger_parse(const void *key, size_t len, nsc_ledger_key *k); /* 0 or -1 */
void nsc_key_age(uint8_t out[NSC_KEY_AGE_LEN], uint64_t commit_ns, uint32_t seq);
void nsc_key_comm(uint8_t out[NSC_KEY_COMM_LEN], uint32_t job, uint64_t comm);
void nsc_key_rank(uint8_t out[NSC_KEY_RANK_LEN], uint32_t job, uint64_t comm, int32_t rank);

/* Signed rank <-> order-preserving unsigned. */
uint32_t nsc_key_rank_bits(int32_t rank);
int32_t nsc_key_rank_from_bits(uint32_t bits);

#endif
