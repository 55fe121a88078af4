/* store_batch.c: one batch into the open transaction.
 *
 * Owns what putting one batch does, in order: the job and process
 * identities and the batch's context and string definitions
 * (store_names.c), grouping its records by (comm, rank) (store_group.c),
 * then one block per group, written with its age entry, indexed
 * (store_colls.c) and added to the pending totals.
 */
#include "store_int.h"

/* Encode the records of group g into one block and index it. */
static int write_group(nsc_store *st, const nsc_store_batch *b, uint32_t job, uint32_t g)
{
    nsc_block_enc *e = st->scratch.enc;
    const uint32_t *const *at = (const uint32_t *const *)st->scratch.at;
    uint32_t *const *first = st->scratch.first;
    size_t added = 0;
    int rc = 0;
    for (int k = 0; k < 3; k++)
        added += first[k][g + 1] - first[k][g];
    nsc_block_begin(e, st->scratch.proc);
    for (uint32_t j = first[K_EVENTS][g]; !rc && j < first[K_EVENTS][g + 1]; j++)
        rc = nsc_block_add_event(e, &b->events[at[K_EVENTS][j]]);
    for (uint32_t j = first[K_STATES][g]; !rc && j < first[K_STATES][g + 1]; j++)
        rc = nsc_block_add_state(e, &b->states[at[K_STATES][j]]);
    for (uint32_t j = first[K_COMPL][g]; !rc && j < first[K_COMPL][g + 1]; j++)
        rc = nsc_block_add_completion(e, &b->completions[at[K_COMPL][j]]);
    const uint8_t *val;
    size_t len;
    nsc_block_hdr h;
    if (rc || st->w.txn_rc || !added || (rc = nsc_block_finish(e, &val, &len, &h)))
        return rc ? rc : st->w.txn_rc;
    nsc_block_key bk = {job, st->scratch.groups[g].comm, st->scratch.groups[g].rank, h.t_min,
                        (uint32_t)st->w.pending.next_block_seq++};
    uint8_t key[NSC_KEY_BLOCK_LEN], age[NSC_KEY_AGE_LEN];
    nsc_key_block(key, &bk);
    nsc_key_age(age, st->w.now_ns, bk.seq);
    if ((rc = nsc_st_put(st, DB_BLOCKS, key, sizeof key, val, len)) ||
        (rc = nsc_st_put(st, DB_AGE, age, sizeof age, key, sizeof key)))
        return rc;
    size_t n;
    const nsc_event *stored = nsc_block_events(e, &n);
    rc = nsc_st_index_block(st, &bk, key, stored, n);
    nsc_store_stats *s = &st->w.pending;
    s->events += h.nevents;
    s->states += h.nstates;
    s->completions += h.ncompletions;
    s->blocks++;
    s->block_bytes += len;
    if (h.t_max - h.t_min > s->max_span_ns)
        s->max_span_ns = h.t_max - h.t_min;
    return rc;
}

int nsc_st_put_batch(nsc_store *st, const nsc_store_batch *b)
{
    uint32_t job;
    const nsc_proc *p = b->proc;
    int rc = nsc_st_intern(st, DB_JOBS, p->job, nsc_st_text_len(p->job, sizeof p->job),
                           "next_job", &job);
    if (rc || (rc = nsc_st_proc_identity(st, job, p, &st->scratch.proc)))
        return rc;
    nsc_st_group_begin(&st->scratch);
    for (size_t i = 0; !rc && i < b->nctxs; i++)
        rc = nsc_st_put_ctx(st, job, p, &b->ctxs[i]);
    for (size_t i = 0; !rc && i < b->nstrs; i++)
        rc = nsc_st_put_str(st, &b->strs[i]);
    if (rc || (rc = nsc_st_group_records(st, b)))
        return rc;
    for (uint32_t g = 0; !rc && g < st->scratch.ngroups; g++)
        rc = write_group(st, b, job, g);
    return rc;
}
