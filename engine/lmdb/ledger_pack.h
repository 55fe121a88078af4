/* ledger_pack.h: the values of the store's ledger database.
 *
 * Owns the byte format of one value: the ledger records (ledger.h) of one
 * rank from its key's first seq (keys.h) on, in (seq, func, peer) order, each field a zigzag varint of its difference to
 * the same field of the record before (docs/collector-store.md, "Ledger"). Times
 * are predicted from the record before shifted by its API call's distance,
 * so a regular collective costs a few bytes per time. String fields hold
 * store-wide string ids.
 *
 * Decoding checks everything a damaged value could get wrong (lengths,
 * order, seqs before the key's first) and fails with NSC_STORE_ECORRUPT, never
 * reading past the value.
 */
#ifndef NCCLSCOPE_LEDGER_PACK_H
#define NCCLSCOPE_LEDGER_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "keys.h"
#include "ledger.h"

/* Most edges one record may have: every (peer, channel, direction) of a
 * rank, with room for NCCL's 64 channels and a few peers each. */
#define NSC_LPACK_MAX_EDGES 4096

/* What a value's next record is told against: its fields predicted from
 * the record before's (ledger_pack.c). */
#define NSC_LPACK_FIELDS 32
typedef struct nsc_lpack_chain {
    uint64_t prev[NSC_LPACK_FIELDS];
    uint64_t interval;  /* the record before's API call minus the one before it */
    uint32_t bits;      /* the record before's bitmap */
    uint32_t nedges;    /* the record before's edge count */
} nsc_lpack_chain;

/* Decoded records; each record's edges point into edges (owned here). */
typedef struct nsc_lpack {
    nsc_ledger_rec *recs;
    size_t n, cap;
    nsc_ledger_edge *edges;
    size_t nedges, edges_cap;
    nsc_lpack_chain end;  /* after the last value decoded */
} nsc_lpack;

/* Where a value ends: what records appended to it are told against. */
typedef struct nsc_lpack_end {
    size_t n;                    /* its records */
    const nsc_ledger_rec *last;  /* the last of them (NULL: none), edges too */
    nsc_lpack_chain chain;       /* the chain after it */
} nsc_lpack_end;

/* Upper bound of the encoded size of n records. */
size_t nsc_lpack_bound(const nsc_ledger_rec *const *recs, size_t n);
/* Encode n records of k's rank from its first seq, sorted and unique by
 * (seq, func, peer); returns the length written to out (room for
 * nsc_lpack_bound). */
size_t nsc_lpack_encode(const nsc_ledger_key *k, const nsc_ledger_rec *const *recs, size_t n,
                        uint8_t *out);
/* The same for the first *taken of them that fit in max bytes, whole seqs
 * (the first seq's records whatever their size); *after: where the value
 * written ends (its last record one of recs). */
size_t nsc_lpack_encode_fit(const nsc_ledger_key *k, const nsc_ledger_rec *const *recs, size_t n, size_t max,
                            uint8_t *out, size_t *taken, nsc_lpack_end *after);
/* The value val (len bytes) that ends at stored, with records after its
 * last appended: the first *taken of them that fit in max bytes, whole
 * seqs (none when none fit), written to out (room for len +
 * nsc_lpack_bound) without reading or telling the stored ones again;
 * *after as above. */
size_t nsc_lpack_append_fit(const void *val, size_t len, const nsc_lpack_end *stored,
                            const nsc_ledger_rec *const *recs, size_t n, size_t max, uint8_t *out, size_t *taken,
                            nsc_lpack_end *after);
/* Append the records of a value to out: 0, NSC_STORE_ECORRUPT or
 * NSC_STORE_ENOMEM (out keeps what it held before the call). */
int nsc_lpack_decode(const nsc_ledger_key *k, const void *val, size_t len, nsc_lpack *out);
/* The same, keeping only the records of seqs lo to hi; *beyond lowered to
 * the value's first seq above hi, if lower. */
int nsc_lpack_decode_seqs(const nsc_ledger_key *k, const void *val, size_t len, uint64_t lo, uint64_t hi,
                          nsc_lpack *out, uint64_t *beyond);
/* Where the value l holds alone (decoded into it after a clear) ends. */
nsc_lpack_end nsc_lpack_ending(const nsc_lpack *l);
void nsc_lpack_clear(nsc_lpack *l);
void nsc_lpack_free(nsc_lpack *l);

/* The order of records within a value (and of a rank's records of one seq):
 * negative, 0 (the same record, one replaces the other) or positive. */
int nsc_lpack_cmp(const nsc_ledger_rec *a, const nsc_ledger_rec *b);

#endif
