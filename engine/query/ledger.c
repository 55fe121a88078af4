/* ledger.c: the ledger endpoint: a communicator's ledger records (one per
 * seq and rank) in (seq, rank) order, one JSON line each, paged by cursor.
 *
 * A record's members are its fields (NSC_FIELDS_LEDGER, named as there) and
 * its edges (NSC_FIELDS_LEDGER_EDGE). Its times are aligned to the
 * collector's clock through the rank's host model, as the collectives'
 * times are, and it says the model's bound there (clock_err_ns) and the
 * bound of its GPU times (gpu_bound_ns: the model's plus the agent's
 * GPU-to-host conversion). docs/api-events.md, "ledger".
 */
#include "qint.h"

#define QL_POS(a, kind, m, ...) QL_##m,
enum { NSC_FIELDS_LEDGER(QL_POS, _) QL_NF };
#undef QL_POS

enum { K_UNS, K_SIGNED, K_STRING, K_TIME };
#define QL_KIND_U8 K_UNS
#define QL_KIND_U16 K_UNS
#define QL_KIND_U32 K_UNS
#define QL_KIND_U64 K_UNS
#define QL_KIND_I32 K_SIGNED
#define QL_KIND_STR K_STRING
#define QL_KIND_TIME K_TIME

typedef struct field {
    const char *key;  /* ,"name": */
    int kind;
} field;

#define QL_FIELD(a, kind, m, ...) {",\"" #m "\":", QL_KIND_##kind},
static const field fields[QL_NF] = {NSC_FIELDS_LEDGER(QL_FIELD, _)};
#define QL_EDGE_FIELD(a, kind, m, ...) {"\"" #m "\":", QL_KIND_##kind},
static const field edge_fields[] = {NSC_FIELDS_LEDGER_EDGE(QL_EDGE_FIELD, _)};
#undef QL_FIELD
#undef QL_EDGE_FIELD

#define QL_VALUE(a, kind, m, ...) (uint64_t)(a)->m,
#define QL_SVALUE(a, kind, m, ...) (uint64_t)(int64_t)(a)->m,

/* A record's place: (seq, rank, index among the records of that seq and
 * rank: a rank's Send and Recv of one seq). */
typedef struct pos {
    uint64_t seq, rank, idx;
} pos;

typedef struct run {
    nsc_q_ctx *c;
    uint64_t written;
    int more, seen;
    pos at, last;  /* the record read last, and the one written last */
} run;

/* One value by its kind; times aligned when the rank's host is known. */
static void write_value(nsc_q_ctx *c, const nsc_q_rank *r, int kind, uint64_t v)
{
    nsc_q_out *o = c->out;
    switch (kind) {
    case K_SIGNED:
        nsc_q_i64(o, (int64_t)v);
        break;
    case K_STRING:
        nsc_q_str(o, nsc_q_text(c, (uint32_t)v));
        break;
    case K_TIME:
        nsc_q_opt_u64(o, v != 0, v && r ? nsc_q_align(c, r, v, NULL) : v);
        break;
    default:
        nsc_q_u64(o, v);
    }
}

static void write_edges(nsc_q_ctx *c, const nsc_ledger_rec *x)
{
    nsc_q_out *o = c->out;
    nsc_q_lit(o, ",\"edges\":[");
    for (uint32_t j = 0; j < x->nedges; j++) {
        const nsc_ledger_edge *e = &x->edges[j];
        const uint64_t v[] = {NSC_FIELDS_LEDGER_EDGE(QL_VALUE, e)};
        const uint64_t sv[] = {NSC_FIELDS_LEDGER_EDGE(QL_SVALUE, e)};
        nsc_q_cs(o, j ? ",{" : "{");
        for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
            nsc_q_cs(o, i ? "," : "");
            nsc_q_cs(o, edge_fields[i].key);
            write_value(c, NULL, edge_fields[i].kind, edge_fields[i].kind == K_SIGNED ? sv[i] : v[i]);
        }
        nsc_q_lit(o, "}");
    }
    nsc_q_lit(o, "]");
}

/* The host model's bound at the record's first known time (its times are
 * microseconds to seconds apart: one bound serves them all). */
static uint64_t clock_err(const nsc_q_ctx *c, const nsc_q_rank *r, const nsc_ledger_rec *x)
{
    uint64_t err = 0, t = x->api_ns ? x->api_ns : x->enqueue_ns ? x->enqueue_ns : x->launch_ns;
    if (r && t)
        nsc_q_align(c, r, t, &err);
    return err;
}

static void write_rec(nsc_q_ctx *c, const nsc_ledger_rec *x)
{
    nsc_q_out *o = c->out;
    const nsc_q_rank *r = nsc_q_rank_of(c, x->rank);
    const uint64_t v[QL_NF] = {NSC_FIELDS_LEDGER(QL_VALUE, x)};
    const uint64_t sv[QL_NF] = {NSC_FIELDS_LEDGER(QL_SVALUE, x)};
    uint64_t err = clock_err(c, r, x);
    nsc_q_lit(o, "{\"kind\":\"record\"");
    for (int i = 0; i < QL_NF; i++) {
        nsc_q_cs(o, fields[i].key);
        if (i == QL_comm_id)  /* 64-bit ids are strings, as everywhere in the API */
            nsc_q_hex(o, x->comm_id);
        else
            write_value(c, r, fields[i].kind, fields[i].kind == K_SIGNED ? sv[i] : v[i]);
    }
    nsc_q_cs(o, x->flags & NSC_LEDGER_INFLIGHT ? ",\"state\":\"inflight\"" : ",\"state\":\"completed\"");
    nsc_q_cs(o, r ? ",\"aligned\":true" : ",\"aligned\":false");
    nsc_q_lit(o, ",\"clock_err_ns\":");
    nsc_q_u64(o, err);
    nsc_q_lit(o, ",\"gpu_bound_ns\":");
    nsc_q_opt_u64(o, !(x->flags & NSC_LEDGER_NO_GPU) && x->gpu_start_ns, err + x->gpu_err_ns);
    write_edges(c, x);
    nsc_q_lit(o, "}\n");
}

static int on_rec(void *arg, const nsc_ledger_rec *x)
{
    run *u = arg;
    nsc_q_ctx *c = u->c;
    if (!nsc_q_rank_selected(c->q, x->rank))
        return 0;
    int same = u->seen && x->seq == u->at.seq && (uint64_t)x->rank == u->at.rank;
    u->at = (pos){x->seq, (uint64_t)x->rank, same ? u->at.idx + 1 : 0};
    u->seen = 1;
    if (!nsc_q_after_cursor(c->q, u->at.seq, u->at.rank, u->at.idx))
        return 0;
    if (u->written == c->q->limit) {
        u->more = 1;
        return 1;
    }
    write_rec(c, x);
    u->last = u->at;
    u->written++;
    return c->out->err;
}

/* Each selected rank's host: readers that group edges by host (diagnose's
 * links) need no other request. */
static void write_hosts(nsc_q_ctx *c)
{
    nsc_q_out *o = c->out;
    nsc_q_lit(o, ",\"ranks\":[");
    for (size_t i = 0; i < c->nranks; i++) {
        nsc_q_cs(o, i ? ",{\"rank\":" : "{\"rank\":");
        nsc_q_i64(o, c->ranks[i].rank);
        nsc_q_lit(o, ",\"host\":");
        nsc_q_str(o, c->ranks[i].info.host);
        nsc_q_lit(o, "}");
    }
    nsc_q_lit(o, "]");
}

int nsc_q_ledger(nsc_q_ctx *c)
{
    nsc_q_out *o = c->out;
    run u = {.c = c};
    nsc_store_ledger_q lq = {c->job, c->comm.comm_id, c->q->seq_lo, c->q->seq_hi, 0, 0};
    nsc_q_rank_window(c->q, &lq.rank_lo, &lq.rank_hi);
    if (c->q->has & QP_CURSOR && c->q->cursor[0] > lq.seq_lo)
        lq.seq_lo = c->q->cursor[0];
    nsc_q_lit(o, "{\"kind\":\"header\",");
    nsc_q_write_comm_head(c);
    write_hosts(c);
    nsc_q_lit(o, "}\n");
    int rc = nsc_store_ledger_read(c->rd, &lq, on_rec, &u);
    if (rc && rc != 1)
        return o->err ? o->err : nsc_q_store_fail(c, rc);
    nsc_q_lit(o, "{\"kind\":\"end\",\"records\":");
    nsc_q_u64(o, u.written);
    nsc_q_next_cursor(o, u.more, u.last.seq, u.last.rank, u.last.idx);
    nsc_q_lit(o, "}\n");
    return o->err;
}
