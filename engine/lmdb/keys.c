/* keys.c: big-endian key encoding (layouts in keys.h). */
#include "keys.h"

#include <string.h>

#include "bytes.h"

uint32_t nsc_key_rank_bits(int32_t rank)
{
    return (uint32_t)rank ^ 0x80000000u;
}

int32_t nsc_key_rank_from_bits(uint32_t bits)
{
    return (int32_t)(bits ^ 0x80000000u);
}

void nsc_key_block(uint8_t out[NSC_KEY_BLOCK_LEN], const nsc_block_key *k)
{
    nsc_put_be32(out, k->job);
    nsc_put_be64(out + 4, k->comm);
    nsc_put_be32(out + 12, nsc_key_rank_bits(k->rank));
    nsc_put_be64(out + 16, k->start_ns);
    nsc_put_be32(out + 24, k->seq);
}

int nsc_key_block_parse(const void *key, size_t len, nsc_block_key *k)
{
    const uint8_t *p = key;
    if (len != NSC_KEY_BLOCK_LEN)
        return -1;
    k->job = nsc_get_be32(p);
    k->comm = nsc_get_be64(p + 4);
    k->rank = nsc_key_rank_from_bits(nsc_get_be32(p + 12));
    k->start_ns = nsc_get_be64(p + 16);
    k->seq = nsc_get_be32(p + 24);
    return 0;
}

void nsc_key_coll(uint8_t out[NSC_KEY_COLL_LEN], const nsc_coll_key *k)
{
    nsc_put_be32(out, k->job);
    nsc_put_be64(out + 4, k->comm);
    nsc_put_be32(out + 12, k->func);
    nsc_put_be32(out + 16, nsc_key_rank_bits(k->rank));
    nsc_put_be64(out + 20, k->seq);
}

int nsc_key_coll_parse(const void *key, size_t len, nsc_coll_key *k)
{
    const uint8_t *p = key;
    if (len != NSC_KEY_COLL_LEN)
        return -1;
    k->job = nsc_get_be32(p);
    k->comm = nsc_get_be64(p + 4);
    k->func = nsc_get_be32(p + 12);
    k->rank = nsc_key_rank_from_bits(nsc_get_be32(p + 16));
    k->seq = nsc_get_be64(p + 20);
    return 0;
}

void nsc_coll_val_put(uint8_t out[NSC_COLL_VAL_LEN], const nsc_coll_val *v)
{
    memcpy(out, v->block, NSC_KEY_BLOCK_LEN);
    nsc_put_be32(out + NSC_KEY_BLOCK_LEN, v->position);
    nsc_put_be64(out + NSC_KEY_BLOCK_LEN + 4, v->seq_first);
}

int nsc_coll_val_parse(const void *val, size_t len, nsc_coll_val *v)
{
    const uint8_t *p = val;
    if (len != NSC_COLL_VAL_LEN)
        return -1;
    memcpy(v->block, p, NSC_KEY_BLOCK_LEN);
    v->position = nsc_get_be32(p + NSC_KEY_BLOCK_LEN);
    v->seq_first = nsc_get_be64(p + NSC_KEY_BLOCK_LEN + 4);
    return 0;
}

void nsc_key_ledger(uint8_t out[NSC_KEY_LEDGER_LEN], const nsc_ledger_key *k)
{
    nsc_put_be32(out, k->job);
    nsc_put_be64(out + 4, k->comm);
    nsc_put_be32(out + 12, nsc_key_rank_bits(k->rank));
    nsc_put_be64(out + 16, k->first);
}

int nsc_key_ledger_parse(const void *key, size_t len, nsc_ledger_key *k)
{
    const uint8_t *p = key;
    if (len != NSC_KEY_LEDGER_LEN)
        return -1;
    k->job = nsc_get_be32(p);
    k->comm = nsc_get_be64(p + 4);
    k->rank = nsc_key_rank_from_bits(nsc_get_be32(p + 12));
    k->first = nsc_get_be64(p + 16);
    return 0;
}

void nsc_key_age(uint8_t out[NSC_KEY_AGE_LEN], uint64_t commit_ns, uint32_t seq)
{
    nsc_put_be64(out, commit_ns);
    nsc_put_be32(out + 8, seq);
}

void nsc_key_comm(uint8_t out[NSC_KEY_COMM_LEN], uint32_t job, uint64_t comm)
{
    nsc_put_be32(out, job);
    nsc_put_be64(out + 4, comm);
}

void nsc_key_rank(uint8_t out[NSC_KEY_RANK_LEN], uint32_t job, uint64_t comm, int32_t rank)
{
    nsc_key_comm(out, job, comm);
    nsc_put_be32(out + 12, nsc_key_rank_bits(rank));
}
