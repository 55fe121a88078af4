/* check_util.c: summary loading and store opening for the e2e checkers. */
#include "check_util.h"

#include <stdbool.h>
#include <stdio.h>

int e2e_load_json(const char *who, const char *path, nsc_json_doc *doc)
{
    static char buf[64 << 20];
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot open %s\n", who, path);
        return -1;
    }
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    nsc_json_error err;
    if (nsc_json_parse(buf, n, NULL, doc, &err) != 0) {
        fprintf(stderr, "%s: %s: %s at %zu\n", who, path, err.msg, err.offset);
        return -1;
    }
    return 0;
}

uint64_t e2e_count(const nsc_json *obj, const char *name)
{
    uint64_t v = 0;
    if (obj)
        nsc_json_u64(nsc_json_get(obj, name), &v);
    return v;
}

bool e2e_pid_killed(const nsc_json *emu, uint64_t pid)
{
    const nsc_json *procs = nsc_json_get(emu, "processes");
    for (const nsc_json *p = nsc_json_first(procs); p; p = nsc_json_next(procs, p))
        if (e2e_count(p, "pid") == pid)
            return e2e_count(p, "signal") != 0;
    return false;
}

const nsc_json *e2e_rank_delivered(const nsc_json *emu, const nsc_json *r)
{
    return nsc_json_get(nsc_json_get(r, "calls"), e2e_pid_killed(emu, e2e_count(r, "pid")) ? "stop" : "start");
}

void e2e_emitted_by_type(const nsc_json *emu, uint64_t out[NSC_T_COUNT])
{
    const nsc_json *rs = nsc_json_get(emu, "ranks");
    const nsc_json *fs = nsc_json_get(nsc_json_get(nsc_json_get(emu, "totals"), "foreign"), "stop");
    for (unsigned t = 0; t < NSC_T_COUNT; t++)
        out[t] = e2e_count(fs, nsc_type_name(t));
    for (const nsc_json *r = nsc_json_first(rs); r; r = nsc_json_next(rs, r)) {
        bool profiled = false;
        nsc_json_bool(nsc_json_get(r, "profiled"), &profiled);
        const nsc_json *delivered = e2e_rank_delivered(emu, r);
        for (unsigned t = 0; profiled && t < NSC_T_COUNT; t++)
            out[t] += e2e_count(delivered, nsc_type_name(t));
    }
}

int e2e_store_open(const char *who, const char *dir, const char *job, e2e_store *s)
{
    nsc_store_opts o = {.read_only = 1};
    int rc = nsc_store_open(dir, &o, &s->st);
    if (rc) {
        fprintf(stderr, "%s: %s: %s\n", who, dir, nsc_store_strerror(rc));
        return -1;
    }
    if ((rc = nsc_store_read_begin(s->st, &s->rd)) != 0) {
        fprintf(stderr, "%s: read: %s\n", who, nsc_store_strerror(rc));
        nsc_store_close(s->st);
        return -1;
    }
    if ((rc = nsc_store_job_id(s->rd, job, &s->job)) != 0) {
        fprintf(stderr, "%s: job %s: %s\n", who, job, nsc_store_strerror(rc));
        e2e_store_close(s);
        return -1;
    }
    return 0;
}

void e2e_store_close(e2e_store *s)
{
    nsc_store_read_end(s->rd);
    nsc_store_close(s->st);
}
