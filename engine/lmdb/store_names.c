/* store_names.c: names and identities.
 *
 * Owns the databases that name things: jobs and strings (name <-> id), the
 * processes with their context and string definitions, the communicators
 * and the ranks; the writer's side (interning, definitions) and the
 * readers' lookups and listings.
 */
#include "store_int.h"

#include <stdlib.h>

#include "bytes.h"
#include "grow.h"

/* ---- writer ------------------------------------------------------------ */

/* name -> id in db: keys 'n'+name -> id and 'i'+id -> name; a new name takes
 * the next id from the meta counter `counter` (ids start at 1). */
int nsc_st_intern(nsc_store *st, int db, const void *name, size_t len, const char *counter,
                  uint32_t *id)
{
    uint8_t key[1 + 128];
    if (len > sizeof key - 1)
        return NSC_STORE_ECORRUPT;
    key[0] = 'n';
    memcpy(key + 1, name, len);
    int rc = nsc_st_get_u32(st->w.txn, st->env.dbi[db], key, len + 1, id);
    if (rc != NSC_STORE_ENOTFOUND)
        return rc;
    uint32_t last = 0;
    rc = nsc_st_get_u32(st->w.txn, st->env.dbi[DB_META], counter, strlen(counter), &last);
    if (rc && rc != NSC_STORE_ENOTFOUND)
        return rc;
    uint8_t idbuf[4], rkey[5] = {'i'};
    *id = last + 1;
    nsc_put_be32(idbuf, *id);
    nsc_put_be32(rkey + 1, *id);
    if ((rc = nsc_st_put(st, DB_META, counter, strlen(counter), idbuf, 4)) ||
        (rc = nsc_st_put(st, db, key, len + 1, idbuf, 4)) ||
        (rc = nsc_st_put(st, db, rkey, 5, name, len)))
        return rc;
    return 0;
}

int nsc_st_proc_identity(nsc_store *st, uint32_t job, const nsc_proc *p, uint32_t *proc)
{
    uint8_t name[8 + sizeof p->host];
    size_t hl = nsc_st_text_len(p->host, sizeof p->host);
    nsc_put_be32(name, job);
    nsc_put_be32(name + 4, p->pid);
    memcpy(name + 8, p->host, hl);
    return nsc_st_intern(st, DB_PROCS, name, 8 + hl, "next_proc", proc);
}

int nsc_st_put_ctx(nsc_store *st, uint32_t job, const nsc_proc *p, const nsc_ctx_def *c)
{
    uint8_t ckey[7] = {'c'}, cval[16], comm[NSC_KEY_COMM_LEN], rank[NSC_KEY_RANK_LEN];
    uint8_t commval[4 + sizeof c->name], rankval[16 + sizeof p->host];
    nsc_put_be32(ckey + 1, st->scratch.proc);
    nsc_put_be16(ckey + 5, c->index);
    nsc_put_be64(cval, c->comm_id);
    nsc_put_be32(cval + 8, (uint32_t)c->rank);
    nsc_put_be32(cval + 12, (uint32_t)c->nranks);
    size_t nl = nsc_st_text_len(c->name, sizeof c->name);
    size_t hl = nsc_st_text_len(p->host, sizeof p->host);
    nsc_put_be32(commval, (uint32_t)c->nranks);
    memcpy(commval + 4, c->name, nl);
    nsc_put_be32(rankval, st->scratch.proc);
    nsc_put_be32(rankval + 4, p->pid);
    nsc_put_be32(rankval + 8, (uint32_t)p->gpu);
    nsc_put_be32(rankval + 12, (uint32_t)p->local_rank);
    memcpy(rankval + 16, p->host, hl);
    nsc_key_comm(comm, job, c->comm_id);
    nsc_key_rank(rank, job, c->comm_id, c->rank);
    int rc;
    if ((rc = nsc_st_put(st, DB_PROCS, ckey, sizeof ckey, cval, sizeof cval)) ||
        (rc = nsc_st_put(st, DB_COMMS, comm, sizeof comm, commval, 4 + nl)) ||
        (rc = nsc_st_put(st, DB_RANKS, rank, sizeof rank, rankval, 16 + hl)))
        return rc;
    return 0;
}

int nsc_st_put_str(nsc_store *st, const nsc_str_def *s)
{
    uint32_t gid;
    uint8_t skey[7] = {'s'}, val[4];
    int rc = nsc_st_intern(st, DB_STRS, s->text, nsc_st_text_len(s->text, sizeof s->text),
                           "next_str", &gid);
    if (rc)
        return rc;
    nsc_put_be32(skey + 1, st->scratch.proc);
    nsc_put_be16(skey + 5, s->id);
    nsc_put_be32(val, gid);
    return nsc_st_put(st, DB_PROCS, skey, sizeof skey, val, 4);
}

/* ---- readers ----------------------------------------------------------- */

static int lookup_name(nsc_store_reader *rd, int db, const char *text, uint32_t *id)
{
    uint8_t key[1 + 128];
    size_t len = strlen(text);
    if (len > sizeof key - 1)
        return NSC_STORE_ENOTFOUND;
    key[0] = 'n';
    memcpy(key + 1, text, len);
    return nsc_st_get_u32(rd->txn, nsc_st_rdbi(rd, db), key, len + 1, id);
}

int nsc_store_job_id(nsc_store_reader *rd, const char *job, uint32_t *id)
{
    return lookup_name(rd, DB_JOBS, job, id);
}

int nsc_store_str_id(nsc_store_reader *rd, const char *text, uint32_t *id)
{
    return lookup_name(rd, DB_STRS, text, id);
}

int nsc_store_str(nsc_store_reader *rd, uint32_t id, char *text, size_t cap)
{
    uint8_t key[5] = {'i'};
    nsc_put_be32(key + 1, id);
    MDB_val k = nsc_st_mval(key, sizeof key), v;
    int rc = mdb_get(rd->txn, nsc_st_rdbi(rd, DB_STRS), &k, &v);
    if (rc)
        return rc == MDB_NOTFOUND ? NSC_STORE_ENOTFOUND : rc;
    size_t n = v.mv_size < cap - 1 ? v.mv_size : cap - 1;
    memcpy(text, v.mv_data, n);
    text[n] = 0;
    return 0;
}

/* Decodes one record into a zeroed list entry: 0 or an error. */
typedef int (*fill_fn)(const MDB_val *k, const MDB_val *v, void *entry);

/* The records of db from key `from` (flen bytes) on while their keys are
 * klen bytes long and start with from's first plen bytes, one entry of
 * `size` bytes each into *out (malloc'd, NULL when none). */
static int list_records(nsc_store_reader *rd, int db, const void *from, size_t flen, size_t plen,
                        size_t klen, size_t size, fill_fn fill, void **out, size_t *n)
{
    MDB_val k = nsc_st_mval(from, flen), v;
    uint8_t *list = NULL;
    size_t count = 0, cap = 0;
    MDB_cursor *cur;
    int rc = mdb_cursor_open(rd->txn, nsc_st_rdbi(rd, db), &cur);
    if (rc)
        return rc;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0;
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (k.mv_size != klen || memcmp(k.mv_data, from, plen) != 0)
            break;
        if ((rc = nsc_grow(&list, count, &cap, size, 8) ? NSC_STORE_ENOMEM : 0))
            break;
        memset(list + count * size, 0, size);
        if ((rc = fill(&k, &v, list + count * size)))
            break;
        count++;
    }
    mdb_cursor_close(cur);
    if (rc != 0 && rc != MDB_NOTFOUND) {
        free(list);
        return rc;
    }
    *out = list;
    *n = count;
    return 0;
}

static int fill_comm(const MDB_val *k, const MDB_val *v, void *entry)
{
    nsc_store_comm *c = entry;
    if (v->mv_size < 4 || v->mv_size > 4 + sizeof c->name)
        return NSC_STORE_ECORRUPT;
    c->comm_id = nsc_get_be64((const uint8_t *)k->mv_data + 4);
    c->nranks = (int32_t)nsc_get_be32(v->mv_data);
    memcpy(c->name, (const uint8_t *)v->mv_data + 4, v->mv_size - 4);
    return 0;
}

/* Keys (job, comm): from (job, 0), while the job matches. */
int nsc_store_comms(nsc_store_reader *rd, uint32_t job, nsc_store_comm **out, size_t *n)
{
    uint8_t start[NSC_KEY_COMM_LEN];
    void *list;
    nsc_key_comm(start, job, 0);
    int rc = list_records(rd, DB_COMMS, start, sizeof start, 4, NSC_KEY_COMM_LEN, sizeof **out,
                          fill_comm, &list, n);
    if (!rc)
        *out = list;
    return rc;
}

static int decode_rank(const MDB_val *v, nsc_store_rank *out)
{
    const uint8_t *p = v->mv_data;
    if (v->mv_size < 16 || v->mv_size > 16 + sizeof out->host - 1)
        return NSC_STORE_ECORRUPT;
    memset(out, 0, sizeof *out);
    out->proc_id = nsc_get_be32(p);
    out->pid = nsc_get_be32(p + 4);
    out->gpu = (int32_t)nsc_get_be32(p + 8);
    out->local_rank = (int32_t)nsc_get_be32(p + 12);
    memcpy(out->host, p + 16, v->mv_size - 16);
    return 0;
}

int nsc_store_rank_info(nsc_store_reader *rd, uint32_t job, uint64_t comm, int32_t rank,
                        nsc_store_rank *out)
{
    uint8_t key[NSC_KEY_RANK_LEN];
    nsc_key_rank(key, job, comm, rank);
    MDB_val k = nsc_st_mval(key, sizeof key), v;
    int rc = mdb_get(rd->txn, nsc_st_rdbi(rd, DB_RANKS), &k, &v);
    if (rc)
        return rc == MDB_NOTFOUND ? NSC_STORE_ENOTFOUND : rc;
    return decode_rank(&v, out);
}

static int fill_rank(const MDB_val *k, const MDB_val *v, void *entry)
{
    nsc_store_rank_entry *e = entry;
    const uint8_t *bits = (const uint8_t *)k->mv_data + NSC_KEY_COMM_LEN;
    e->rank = nsc_key_rank_from_bits(nsc_get_be32(bits));
    return decode_rank(v, &e->info);
}

int nsc_store_comm_ranks(nsc_store_reader *rd, uint32_t job, uint64_t comm,
                         nsc_store_rank_entry **out, size_t *n)
{
    uint8_t start[NSC_KEY_RANK_LEN];
    void *list;
    nsc_key_rank(start, job, comm, INT32_MIN);
    int rc = list_records(rd, DB_RANKS, start, sizeof start, NSC_KEY_COMM_LEN, NSC_KEY_RANK_LEN,
                          sizeof **out, fill_rank, &list, n);
    if (!rc)
        *out = list;
    return rc;
}

/* Keys 'n' job u32, pid u32, host: the process names (nsc_st_proc_identity). */
int nsc_store_find_proc(nsc_store_reader *rd, const char *host, uint32_t pid, nsc_proc *out)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(rd->txn, nsc_st_rdbi(rd, DB_PROCS), &cur);
    if (rc)
        return rc;
    size_t hl = strlen(host);
    uint32_t job = 0;
    MDB_val k = nsc_st_mval("n", 1), v;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); rc == 0 && ((const uint8_t *)k.mv_data)[0] == 'n';
         rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        const uint8_t *key = k.mv_data;
        if (k.mv_size == 9 + hl && nsc_get_be32(key + 5) == pid && memcmp(key + 9, host, hl) == 0 &&
            nsc_get_be32(key + 1) > job)
            job = nsc_get_be32(key + 1);
    }
    mdb_cursor_close(cur);
    if (rc && rc != MDB_NOTFOUND)
        return rc;
    uint8_t jkey[5] = {'i'};
    nsc_put_be32(jkey + 1, job);
    k = nsc_st_mval(jkey, sizeof jkey);
    if (!job || (rc = mdb_get(rd->txn, nsc_st_rdbi(rd, DB_JOBS), &k, &v)) == MDB_NOTFOUND)
        return NSC_STORE_ENOTFOUND;
    if (rc || v.mv_size >= sizeof out->job || hl >= sizeof out->host)
        return rc ? rc : NSC_STORE_ECORRUPT;
    memset(out, 0, sizeof *out);
    out->pid = pid;
    out->local_rank = out->gpu = -1;
    memcpy(out->job, v.mv_data, v.mv_size);
    memcpy(out->host, host, hl);
    return 0;
}

static int fill_job(const MDB_val *k, const MDB_val *v, void *entry)
{
    nsc_store_job *j = entry;
    if (v->mv_size >= sizeof j->name)
        return NSC_STORE_ECORRUPT;
    j->id = nsc_get_be32((const uint8_t *)k->mv_data + 1);
    memcpy(j->name, v->mv_data, v->mv_size);
    return 0;
}

/* Keys 'i' + id. */
int nsc_store_jobs(nsc_store_reader *rd, nsc_store_job **out, size_t *n)
{
    void *list;
    int rc = list_records(rd, DB_JOBS, "i", 1, 1, 5, sizeof **out, fill_job, &list, n);
    if (!rc)
        *out = list;
    return rc;
}
