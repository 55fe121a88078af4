/* summary.c: the JSON summary of what the emulator emitted (schema in
 * docs/emulator.md): per process, per (communicator, rank) counts of plugin
 * calls by kind and type, states, seqNumbers, per-collective true times, the
 * GPU clock and its samples, PXN results; and totals.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "emu.h"
#include "json.h"
#include "order.h"

static const char *const kind_names[3] = {"start", "stop", "state"};

static void write_counts(FILE *f, const uint64_t (*calls)[NSC_T_COUNT])
{
    fputc('{', f);
    for (int k = 0; k < 3; k++) {
        fprintf(f, "%s\"%s\":{", k ? "," : "", kind_names[k]);
        bool first = true;
        for (int t = 0; t < NSC_T_COUNT; t++)
            if (calls[k][t]) {
                fprintf(f, "%s\"%s\":%llu", first ? "" : ",", nsc_type_name((unsigned)t),
                        (unsigned long long)calls[k][t]);
                first = false;
            }
        fputc('}', f);
    }
    fputc('}', f);
}

static void write_states(FILE *f, const uint64_t *states)
{
    fputc('{', f);
    bool first = true;
    for (int s = 0; s < NSC_S_COUNT; s++)
        if (states[s]) {
            fprintf(f, "%s\"%s\":%llu", first ? "" : ",", nsc_state_name((unsigned)s),
                    (unsigned long long)states[s]);
            first = false;
        }
    fputc('}', f);
}

static void write_seqs(FILE *f, const emu_coll_rec *c, uint32_t n)
{
    fputc('{', f);
    bool first_func = true;
    for (int fn = 0; emu_func_names[fn]; fn++) {
        bool any = false;
        for (uint32_t i = 0; i < n; i++) {
            if (c[i].func != fn)
                continue;
            if (!any)
                fprintf(f, "%s\"%s\":[", first_func ? "" : ",", emu_func_names[fn]);
            fprintf(f, "%s%llu", any ? "," : "", (unsigned long long)c[i].seq);
            any = true;
            first_func = false;
        }
        if (any)
            fputc(']', f);
    }
    fputc('}', f);
}

static void write_colls(FILE *f, const emu_coll_rec *c, uint32_t n)
{
    fputc('[', f);
    for (uint32_t i = 0; i < n; i++)
        fprintf(f, "%s{\"func\":\"%s\",\"seq\":%llu,\"peer\":%d,\"api_start_ns\":%llu,\"start_ns\":%llu,"
                   "\"stop_ns\":%llu,\"complete_ns\":%llu,\"behind_ns\":%llu,\"ready_ns\":%llu,\"end_ns\":%llu,"
                   "\"step\":%d,\"jitter_ns\":%llu}",
                i ? "," : "", emu_func_names[c[i].func], (unsigned long long)c[i].seq, (int)c[i].peer,
                (unsigned long long)c[i].api_start_ns, (unsigned long long)c[i].start_ns,
                (unsigned long long)c[i].stop_ns, (unsigned long long)c[i].complete_ns,
                (unsigned long long)c[i].behind_ns, (unsigned long long)c[i].ready_ns,
                (unsigned long long)c[i].end_ns, c[i].step, (unsigned long long)c[i].jitter_ns);
    fputc(']', f);
}

static void write_samples(FILE *f, const emu_sample *s, uint32_t n)
{
    fputc('[', f);
    for (uint32_t i = 0; i < n; i++)
        fprintf(f, "%s[%llu,%llu]", i ? "," : "", (unsigned long long)s[i].ptimer,
                (unsigned long long)s[i].true_ns);
    fputc(']', f);
}

static void add_counts(uint64_t (*to)[NSC_T_COUNT], const uint64_t (*from)[NSC_T_COUNT])
{
    for (int k = 0; k < 3; k++)
        for (int t = 0; t < NSC_T_COUNT; t++)
            to[k][t] += from[k][t];
}

static void write_slot(FILE *f, const emu_opts *o, const emu_acct_file *af, emu_acct *a, bool first)
{
    uint64_t started = 0, stopped = 0;
    for (int t = 0; t < NSC_T_COUNT; t++) {
        started += a->calls[EMU_CALL_START][t];
        stopped += a->calls[EMU_CALL_STOP][t];
    }
    fprintf(f, "%s\n  {\"comm_id\":%llu,\"rank\":%d,\"nranks\":%d,\"node\":%d,\"host\":\"%s%d\","
               "\"pid\":%u,\"api_version\":%d,\"profiled\":%s,\"tids\":[",
            first ? "" : ",", (unsigned long long)a->comm_id, a->rank, a->nranks, a->node,
            o->host_prefix, a->node, a->pid, a->version, a->profiled ? "true" : "false");
    for (uint32_t i = 0; i < a->ntids; i++)
        fprintf(f, "%s%u", i ? "," : "", a->tids[i]);
    fputs("],\"calls\":", f);
    write_counts(f, (const uint64_t(*)[NSC_T_COUNT])a->calls);
    fputs(",\"states\":", f);
    write_states(f, a->states);
    fprintf(f, ",\"null_handles\":%llu,\"open_states\":%llu,\"open_events\":%llu,\"seq\":",
            (unsigned long long)a->null_handles, (unsigned long long)a->open_states,
            (unsigned long long)(started - a->null_handles - stopped));
    emu_coll_rec *c = emu_acct_colls(af, a);
    write_seqs(f, c, a->ncoll);
    fputs(",\"collectives\":", f);
    write_colls(f, c, a->ncoll);
    fprintf(f, ",\"gpu\":{\"offset_ns\":%lld,\"drift_ppb\":%lld,\"epoch_ns\":%llu},\"kernel_samples\":",
            (long long)a->gpu.offset_ns, (long long)a->gpu.drift_ppb,
            (unsigned long long)a->gpu.epoch_ns);
    write_samples(f, emu_acct_samples(af, a), a->nsamples);
    fputs(",\"foreign\":", f);
    write_counts(f, (const uint64_t(*)[NSC_T_COUNT])a->foreign);
    fprintf(f, ",\"pxn\":{\"guarded\":%llu,\"unguarded\":%llu,\"probed\":%llu,\"probe_segv\":%llu}}",
            (unsigned long long)a->pxn_guarded, (unsigned long long)a->pxn_unguarded,
            (unsigned long long)a->pxn_probed, (unsigned long long)a->pxn_probe_segv);
}

/* The cost model and every injected fault, where and how much: the ground
 * truth a diagnosis is scored against. */
static void write_truth(FILE *f, const emu_opts *o)
{
    const emu_model *m = &o->model;
    fprintf(f, ",\"model\":{\"time_scale\":%g,\"link_gbps\":%g,\"nic_gbps\":%g,\"link_lat_us\":%g,"
               "\"nic_lat_us\":%g,\"compute_us\":%g},\"faults\":[",
            m->time_scale, m->link_gbps, m->nic_gbps, m->link_lat_us, m->nic_lat_us, m->compute_us);
    const char *sep = "";
    char when[64]; /* the iterations (train: steps) these four act in */
    snprintf(when, sizeof when, ",\"from\":%d,\"every\":%d", m->fault_from, m->fault_every);
    if (o->slow_rank >= 0)
        fprintf(f, "%s{\"kind\":\"host_late\",\"rank\":%d,\"delay_ns\":%lld%s}", sep, o->slow_rank,
                (long long)o->slow_us * 1000, when), sep = ",";
    if (m->slow_gpu_rank >= 0)
        fprintf(f, "%s{\"kind\":\"slow_gpu\",\"rank\":%d,\"delay_ns\":%llu%s}", sep, m->slow_gpu_rank,
                (unsigned long long)emu_model_us(o, m->slow_gpu_us), when), sep = ",";
    if (m->slow_link_from >= 0)
        fprintf(f, "%s{\"kind\":\"slow_link\",\"from_node\":%d,\"to_node\":%d,\"factor\":%g%s}", sep,
                m->slow_link_from, m->slow_link_to, m->slow_link_factor, when), sep = ",";
    if (m->slow_nic_node >= 0)
        fprintf(f, "%s{\"kind\":\"slow_nic\",\"node\":%d,\"factor\":%g%s}", sep, m->slow_nic_node,
                m->slow_nic_factor, when), sep = ",";
    if (m->stall_rank >= 0) {
        char comm[24] = ""; /* train: the communicator it stalls in, by name */
        if (m->stall_comm)
            snprintf(comm, sizeof comm, ",\"comm\":\"%s\"", m->stall_comm);
        fprintf(f, "%s{\"kind\":\"stall\",\"rank\":%d,\"coll\":%d,\"channel\":%d,\"step\":%d%s}", sep,
                m->stall_rank, m->stall_coll, m->stall_ch, m->stall_step, comm), sep = ",";
    }
    if (m->mismatch_rank >= 0)
        fprintf(f, "%s{\"kind\":\"mismatch\",\"rank\":%d,\"coll\":%d,\"what\":\"%s\"}", sep,
                m->mismatch_rank, m->mismatch_coll, m->mismatch_what), sep = ",";
    if (o->hang_rank >= 0)
        fprintf(f, "%s{\"kind\":\"hang\",\"rank\":%d,\"coll\":%d}", sep, o->hang_rank, o->hang_after),
            sep = ",";
    if (o->kill_rank >= 0)
        fprintf(f, "%s{\"kind\":\"kill\",\"rank\":%d,\"coll\":%d}", sep, o->kill_rank, o->kill_after);
    fputc(']', f);
}

/* One collective a fault's origin took part in while the fault acted. */
typedef struct fault_hit {
    uint64_t comm_id, seq, api_start_ns;
    int32_t func, step;
    uint32_t faults;
} fault_hit;

static int hit_cmp(const void *a, const void *b)
{
    const fault_hit *x = a, *y = b;
    return NSC_ORDER(NSC_CMP(x->api_start_ns, y->api_start_ns), NSC_CMP(x->comm_id, y->comm_id),
                     NSC_CMP(x->func, y->func), NSC_CMP(x->seq, y->seq));
}

typedef struct fault_hits {
    fault_hit *h;
    size_t n, cap;
} fault_hits;

/* Slot a's collectives that some fault's origin took part in. */
static void add_hits(fault_hits *hs, const emu_acct_file *af, emu_acct *a)
{
    const emu_coll_rec *c = emu_acct_colls(af, a);
    for (uint32_t j = 0; j < a->ncoll; j++) {
        if (!c[j].faults)
            continue;
        if (hs->n == hs->cap && !(hs->h = realloc(hs->h, (hs->cap = hs->cap ? 2 * hs->cap : 256) * sizeof *hs->h)))
            emu_die("out of memory");
        hs->h[hs->n++] = (fault_hit){a->comm_id, c[j].seq, c[j].api_start_ns, c[j].func, c[j].step, c[j].faults};
    }
}

/* Per fault acting by iteration: its onset (the first collective its
 * origin took part in while it acted: communicator, seq, step, time) and
 * every such collective once, in the order they began. */
static void write_fault_hits(FILE *f, fault_hits *hs)
{
    static const char *const kinds[] = {"host_late", "slow_gpu", "slow_link", "slow_nic"};
    size_t n = hs->n;
    fault_hit *h = hs->h;
    if (n)
        qsort(h, n, sizeof *h, hit_cmp);
    fputs(",\n \"fault_truth\":[", f);
    const char *sep = "";
    for (unsigned k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        const fault_hit *first = NULL, *last = NULL;
        for (size_t i = 0; i < n; i++) {
            const fault_hit *x = &h[i];
            if (!(x->faults & (1u << k)))
                continue;
            if (!first)
                fprintf(f, "%s{\"kind\":\"%s\",\"onset\":{\"comm_id\":%llu,\"func\":\"%s\",\"seq\":%llu,"
                           "\"step\":%d,\"api_start_ns\":%llu},\"collectives\":[",
                        sep, kinds[k], (unsigned long long)x->comm_id, emu_func_names[x->func],
                        (unsigned long long)x->seq, x->step, (unsigned long long)x->api_start_ns);
            bool again = last && last->comm_id == x->comm_id && last->func == x->func && last->seq == x->seq;
            if (!again)
                fprintf(f, "%s{\"comm_id\":%llu,\"func\":\"%s\",\"seq\":%llu,\"step\":%d}", first ? "," : "",
                        (unsigned long long)x->comm_id, emu_func_names[x->func], (unsigned long long)x->seq,
                        x->step);
            first = first ? first : x;
            last = x;
        }
        if (first)
            fputs("]}", f), sep = ",";
    }
    fputc(']', f);
}

static void write_header(FILE *f, const emu_opts *o, uint64_t epoch)
{
    fputs("{\"schema\":\"ncclscope-emu-summary/1\",\"scenario\":", f);
    nsc_json_write_str(f, o->scenario);
    fprintf(f, ",\"nodes\":%d,\"ranks_per_node\":%d,\"ranks_as\":\"%s\",\"iters\":%d,\"ops\":%d,"
               "\"channels\":%d,\"count\":%zu,\"epoch_ns\":%llu",
            o->nodes, o->ranks_per_node, o->threads ? "threads" : "processes", o->iters, o->ops,
            o->channels, o->count, (unsigned long long)epoch);
    write_truth(f, o);
    fputs(",\"node_clocks\":[", f);
    for (int n = 0; n < o->nodes; n++)
        fprintf(f, "%s{\"node\":%d,\"host\":\"%s%d\",\"rundir\":\"%s/node%d\",\"offset_ns\":%lld,"
                   "\"drift_ppb\":%lld,\"step_at_ns\":%lld,\"step_ns\":%lld}",
                n ? "," : "", n, o->host_prefix, n, o->rundir_base, n,
                (long long)o->node_clock[n].offset_ns,
                (long long)emu_ppm_to_ppb(o->node_clock[n].drift_ppm),
                (long long)o->node_clock[n].step_at_ns, (long long)o->node_clock[n].step_ns);
    fputs("],\n \"processes\":[", f);
}

int emu_summary_write(const emu_opts *o, const char *path, const emu_proc_result *procs, int nprocs,
                      uint64_t epoch)
{
    if (!path)
        return 0;
    FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
    if (!f) {
        fprintf(stderr, "ncclscope-emu: cannot write %s\n", path);
        return -1;
    }
    write_header(f, o, epoch);
    for (int p = 0; p < nprocs; p++) {
        int st = procs[p].status;
        fprintf(f, "%s{\"pid\":%d,\"node\":%d,\"exit_code\":%d,\"signal\":%d}", p ? "," : "",
                (int)procs[p].pid, procs[p].node, WIFEXITED(st) ? WEXITSTATUS(st) : -1,
                WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    }
    fputs("],\n \"ranks\":[", f);
    uint64_t total[3][NSC_T_COUNT] = {{0}}, foreign[3][NSC_T_COUNT] = {{0}}, states[NSC_S_COUNT] = {0};
    int inits = 0;
    bool first = true;
    fault_hits hits = {0};
    for (int p = 0; p < nprocs; p++) {
        emu_acct_file af;
        if (emu_acct_map(procs[p].acct_path, &af))
            continue;
        for (uint32_t i = 0; i < af.nslots; i++) {
            emu_acct *a = emu_acct_slot(&af, i);
            if (!a->used)
                continue;
            emu_acct_fold(a);
            write_slot(f, o, &af, a, first);
            first = false;
            add_counts(total, (const uint64_t(*)[NSC_T_COUNT])a->calls);
            add_counts(foreign, (const uint64_t(*)[NSC_T_COUNT])a->foreign);
            for (int s = 0; s < NSC_S_COUNT; s++)
                states[s] += a->states[s];
            inits += a->profiled;
            add_hits(&hits, &af, a);
        }
        emu_acct_unmap(&af);
    }
    fputs("],\n \"totals\":{\"calls\":", f);
    write_counts(f, (const uint64_t(*)[NSC_T_COUNT])total);
    fputs(",\"foreign\":", f);
    write_counts(f, (const uint64_t(*)[NSC_T_COUNT])foreign);
    fputs(",\"states\":", f);
    write_states(f, states);
    fprintf(f, ",\"profiled_ranks\":%d}", inits);
    write_fault_hits(f, &hits);
    free(hits.h);
    fputs("}\n", f);
    int rc = ferror(f) ? -1 : 0;
    if (f != stdout)
        rc |= fclose(f);
    else
        fflush(f);
    return rc;
}
