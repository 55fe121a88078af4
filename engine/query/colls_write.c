/* colls_write.c: the collectives endpoint (colls_int.h): each matched
 * collective as one JSON line, ordered by start, paged by cursor. */
#include "colls_int.h"
#include "figures.h"
#include "order.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* arg: the set's records (queries run on several threads at once). */
static int by_start(const void *a, const void *b, void *arg)
{
    const cl_group *x = a, *y = b;
    const cl_rec *recs = arg, *rx = &recs[x->first], *ry = &recs[y->first];
    return NSC_ORDER(NSC_CMP(x->start, y->start), NSC_CMP(rx->func, ry->func), NSC_CMP(rx->seq, ry->seq));
}

static void write_missing(nsc_q_ctx *c, const cl_rec *x, size_t n)
{
    nsc_q_out *o = c->out;
    nsc_q_lit(o, ",\"missing_ranks\":[");
    int first = 1;
    for (size_t r = 0, i = 0; r < c->nranks; r++) {
        while (i < n && x[i].rank < c->ranks[r].rank)
            i++;
        if (i < n && x[i].rank == c->ranks[r].rank)
            continue;
        if (!first)
            nsc_q_lit(o, ",");
        nsc_q_i64(o, c->ranks[r].rank);
        first = 0;
    }
    nsc_q_lit(o, "]");
}

/* "uncertain" and its reason (docs/api-figures.md, "Figures"). */
static void write_uncertain(nsc_q_out *o, const char *why)
{
    nsc_q_cs(o, why ? ",\"uncertain\":true,\"uncertain_reason\":" : ",\"uncertain\":false,\"uncertain_reason\":null");
    if (why)
        nsc_q_str(o, why);
}

/* A rank's own figures (figures.c): its arrival, how long it waited for the
 * last one, its kernel time and the busBW from when its data could move. */
static void write_rank_figures(nsc_q_out *o, const cl_group *g, const cl_rec *x)
{
    nsc_fig_rank f;
    nsc_fig_rank_of(g, x, &f);
    nsc_q_lit(o, ",\"arrival_ns\":");
    nsc_q_u64(o, x->arrival);
    nsc_q_lit(o, ",\"wait_ns\":");
    nsc_q_u64(o, f.wait_ns);
    nsc_q_lit(o, ",\"duration_ns\":");
    nsc_q_opt_u64(o, f.has_own, f.own_ns);
    nsc_q_lit(o, ",\"duration_err_ns\":");
    nsc_q_opt_u64(o, f.has_own, f.own_err_ns);
    nsc_q_lit(o, ",\"moving_ns\":");
    nsc_q_opt_u64(o, f.move_ns != 0, f.move_ns);
    nsc_q_lit(o, ",\"busbw_gbps\":");
    nsc_q_num(o, f.busbw);
    nsc_q_lit(o, ",\"busbw_cap_gbps\":");
    nsc_q_num(o, f.cap_gbps > 0 ? f.cap_gbps : NAN);
    write_uncertain(o, f.uncertain);
}

static void write_group(nsc_q_ctx *c, const cl_set *s, const cl_group *g)
{
    nsc_q_out *o = c->out;
    const cl_rec *x = &s->recs[g->first];
    int graph = 0;
    for (size_t i = 0; i < g->n; i++)
        graph |= (x[i].flags & NSC_EVF_GRAPH) != 0;
    nsc_q_lit(o, "{\"kind\":\"collective\",\"comm\":");
    nsc_q_hex(o, c->comm.comm_id);
    nsc_q_lit(o, ",\"func\":");
    nsc_q_str(o, nsc_q_text(c, x->func));
    nsc_q_lit(o, ",\"seq\":");
    nsc_q_u64(o, x->seq);
    nsc_q_lit(o, ",\"nranks\":");
    nsc_q_i64(o, c->comm.nranks);
    nsc_q_lit(o, ",\"ranks_seen\":");
    nsc_q_u64(o, g->n);
    write_missing(c, x, g->n);
    nsc_q_lit(o, ",\"count\":");
    nsc_q_u64(o, x->count);
    nsc_q_lit(o, ",\"datatype\":");
    nsc_q_str(o, nsc_q_text(c, x->datatype));
    nsc_q_lit(o, ",\"bytes\":");
    nsc_q_opt_u64(o, g->bytes != 0, g->bytes);
    nsc_q_lit(o, ",\"algo\":");
    nsc_q_str(o, nsc_q_text(c, x->algo));
    nsc_q_lit(o, ",\"proto\":");
    nsc_q_str(o, nsc_q_text(c, x->proto));
    nsc_q_lit(o, ",\"nchannels\":");
    nsc_q_u64(o, x->nchannels);
    nsc_q_cs(o, graph ? ",\"graph_captured\":true" : ",\"graph_captured\":false");
    nsc_q_lit(o, ",\"start_ns\":");
    nsc_q_u64(o, g->start);
    nsc_q_lit(o, ",\"end_ns\":");
    nsc_q_opt_u64(o, g->has_end, g->end);
    nsc_q_write_utc(c, "start_utc", 1, g->start);
    nsc_q_write_utc(c, "end_utc", g->has_end, g->end);
    nsc_q_lit(o, ",\"duration_ns\":");
    nsc_q_opt_u64(o, g->has_dur, g->dur);
    nsc_q_lit(o, ",\"duration_err_ns\":");
    nsc_q_opt_u64(o, g->has_dur, g->dur_err);
    nsc_q_cs(o, g->gpu_arrival ? ",\"arrival\":\"gpu\"" : ",\"arrival\":\"host\"");
    nsc_q_lit(o, ",\"last_arrival_ns\":");
    nsc_q_u64(o, g->last_arrival);
    nsc_q_lit(o, ",\"skew_ns\":");
    nsc_q_u64(o, g->skew);
    nsc_q_lit(o, ",\"skew_err_ns\":");
    nsc_q_u64(o, g->skew_err);
    nsc_q_lit(o, ",\"last_rank\":");
    nsc_q_i64(o, g->last_rank);
    nsc_q_lit(o, ",\"late_ns\":");
    nsc_q_u64(o, g->late);
    nsc_q_lit(o, ",\"late_host_ns\":");
    nsc_q_u64(o, g->late_host);
    nsc_q_lit(o, ",\"late_gpu_ns\":");
    nsc_q_u64(o, g->late_gpu);
    nsc_q_cs(o, g->late_own ? ",\"late_of_its_own\":true" : ",\"late_of_its_own\":false");
    nsc_q_lit(o, ",\"algbw_gbps\":");
    nsc_q_num(o, g->algbw);
    nsc_q_lit(o, ",\"busbw_gbps\":");
    nsc_q_num(o, g->busbw);
    write_uncertain(o, g->uncertain);
    nsc_q_lit(o, ",\"mismatch\":");
    if (g->what[0])
        nsc_q_str(o, g->what);
    else
        nsc_q_lit(o, "null");
    nsc_q_lit(o, ",\"mismatch_rank\":");
    if (g->what[0])
        nsc_q_i64(o, g->odd_rank);
    else
        nsc_q_lit(o, "null");
    nsc_q_lit(o, ",\"mismatch_seq\":");
    nsc_q_opt_u64(o, g->what[0] != 0, g->odd_seq);
    nsc_q_lit(o, ",\"ranks\":[");
    for (size_t i = 0; i < g->n; i++) {
        nsc_q_cs(o, i ? ",{\"rank\":" : "{\"rank\":");
        nsc_q_i64(o, x[i].rank);
        nsc_q_lit(o, ",\"id\":");
        nsc_q_u64(o, x[i].id);
        nsc_q_lit(o, ",\"enqueue_ns\":");
        nsc_q_u64(o, x[i].enq);
        nsc_q_lit(o, ",\"enqueue_err_ns\":");
        nsc_q_u64(o, x[i].enq_err);
        nsc_q_lit(o, ",\"enqueue_end_ns\":");
        nsc_q_u64(o, x[i].enq_end);
        nsc_q_lit(o, ",\"kernel_start_ns\":");
        nsc_q_opt_u64(o, x[i].has_kernel, x[i].kstart);
        nsc_q_lit(o, ",\"kernel_start_err_ns\":");
        nsc_q_opt_u64(o, x[i].has_kernel, x[i].kstart_err);
        nsc_q_lit(o, ",\"kernel_end_ns\":");
        nsc_q_opt_u64(o, nsc_q_cl_kernel_done(&x[i]), x[i].kend);
        nsc_q_lit(o, ",\"kernel_end_err_ns\":");
        nsc_q_opt_u64(o, nsc_q_cl_kernel_done(&x[i]), x[i].kend_err);
        nsc_q_lit(o, ",\"complete_ns\":");
        nsc_q_opt_u64(o, x[i].has_done, x[i].done);
        write_rank_figures(o, g, &x[i]);
        nsc_q_lit(o, "}");
    }
    nsc_q_lit(o, "]}\n");
}

int nsc_q_collectives(nsc_q_ctx *c)
{
    cl_set s = {.c = c};
    int rc = nsc_q_cl_collect(&s);
    if (rc) {
        nsc_q_cl_free(&s);
        return rc;
    }
    qsort_r(s.groups, s.ngroups, sizeof *s.groups, by_start, s.recs);
    nsc_q_out *o = c->out;
    nsc_q_lit(o, "{\"kind\":\"header\",");
    nsc_q_write_comm_head(c);
    nsc_q_lit(o, "}\n");
    uint64_t written = 0;
    const cl_group *last = NULL;
    int more = 0;
    for (size_t i = 0; i < s.ngroups && !o->err; i++) {
        const cl_group *g = &s.groups[i];
        if (!nsc_q_after_cursor(c->q, g->start, s.recs[g->first].func, s.recs[g->first].seq))
            continue;
        if (written == c->q->limit) {
            more = 1;
            break;
        }
        write_group(c, &s, g);
        last = g;
        written++;
    }
    nsc_q_lit(o, "{\"kind\":\"end\",\"collectives\":");
    nsc_q_u64(o, written);
    const cl_rec *x = more ? &s.recs[last->first] : NULL;
    nsc_q_next_cursor(o, more, more ? last->start : 0, x ? x->func : 0, x ? x->seq : 0);
    nsc_q_cl_write_source(o, &s);
    nsc_q_write_skipped(c);
    nsc_q_lit(o, "}\n");
    nsc_q_cl_free(&s);
    return o->err;
}
