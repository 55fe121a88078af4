/* statusdoc.c: reading a status document (see statusdoc.h). */
#include "statusdoc.h"

#include <string.h>

#include "dfind.h"

/* The string member key of o, "" when absent. */
static const char *text_of(const nsc_json *o, const char *key)
{
    const char *s = nsc_json_str(nsc_json_get(o, key));
    return s ? s : "";
}

#define EACH(it, arr) for (const nsc_json *it = nsc_json_first(arr); it; it = nsc_json_next(arr, it))

const nsc_json *nsc_status_process(const nsc_json *status, const char *host, uint64_t pid)
{
    const nsc_json *procs = nsc_json_get(status, "processes");
    EACH(p, procs)
    if (nsc_diag_num(p, "pid") == pid && strcmp(text_of(p, "host"), host) == 0)
        return p;
    return NULL;
}

/* A rank is behind when one of its functions' last seq is below the
 * communicator's highest for that function. */
int nsc_status_rank_behind(const nsc_json *comm, const nsc_json *rank, const char **func, uint64_t *seq,
                           uint64_t *max)
{
    const nsc_json *funcs = nsc_json_get(comm, "funcs");
    EACH(c, nsc_json_get(rank, "collectives")) {
        const char *name = nsc_json_str(nsc_json_get(c, "func"));
        name = name ? name : "?";
        EACH(f, funcs)
        if (strcmp(text_of(f, "func"), name) == 0 && nsc_diag_num(c, "seq") < nsc_diag_num(f, "max_seq")) {
            *func = name;
            *seq = nsc_diag_num(c, "seq");
            *max = nsc_diag_num(f, "max_seq");
            return 1;
        }
    }
    return 0;
}

int nsc_status_rank_unstarted(const nsc_json *comm, const nsc_json *rank, const char **func, uint64_t *max)
{
    const nsc_json *colls = nsc_json_get(rank, "collectives"), *f = nsc_json_first(nsc_json_get(comm, "funcs"));
    if (nsc_json_first(colls) || !f)
        return 0;
    *func = *text_of(f, "func") ? text_of(f, "func") : "?";
    *max = nsc_diag_num(f, "max_seq");
    return 1;
}

const nsc_json *nsc_status_job(const nsc_json *status, const char *job)
{
    EACH(j, nsc_json_get(status, "jobs"))
    if (strcmp(text_of(j, "job"), job) == 0)
        return j;
    return NULL;
}

uint64_t nsc_status_comm_max_seq(const nsc_json *status, const char *job, const char *comm)
{
    uint64_t top = 0;
    EACH(c, nsc_json_get(nsc_status_job(status, job), "comms"))
    if (strcmp(text_of(c, "comm"), comm) == 0)
        EACH(f, nsc_json_get(c, "funcs"))
        if (nsc_diag_num(f, "max_seq") > top)
            top = nsc_diag_num(f, "max_seq");
    return top;
}

const char *nsc_status_rank_process(const nsc_json *status, const char *job, const char *comm, int64_t rank)
{
    EACH(c, nsc_json_get(nsc_status_job(status, job), "comms"))
    if (strcmp(text_of(c, "comm"), comm) == 0)
        EACH(r, nsc_json_get(c, "ranks"))
        if (nsc_diag_num_or(r, "rank", -1) == rank && *text_of(r, "process"))
            return text_of(r, "process");
    return "unknown";
}
