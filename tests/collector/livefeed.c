/* livefeed.c: live-state feeding for tests (see livefeed.h). */
#include "livefeed.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storeutil.h"

#define FEED_MAX 32

int nsc_test_feed_colls(nsc_live *l, const nsc_test_feed *f, uint64_t from, uint64_t to, int open_last,
                        uint64_t now)
{
    nsc_event ev[FEED_MAX];
    nsc_completion cp[FEED_MAX];
    nsc_ctx_def ctx = nsc_test_ctx(0, f->comm, f->rank, f->nranks);
    nsc_str_def strs[2] = {{.id = 1}, {.id = 2, .text = "ncclFloat32"}};
    snprintf(strs[0].text, sizeof strs[0].text, "%s", f->func);
    nsc_batch b;
    memset(&b, 0, sizeof b);
    b.hdr.proc = nsc_test_proc(f->job, f->host, f->pid, f->rank);
    b.ctxs = &ctx, b.nctxs = 1, b.strs = strs, b.nstrs = 2, b.events = ev, b.completions = cp;
    for (uint64_t s = from; s <= to && b.nevents < FEED_MAX; s++) {
        ev[b.nevents++] = (nsc_event){.id = s + 1, .type = NSC_T_COLL, .rank = f->rank, .start_ns = s * 1000000ull,
                                      .d.coll = {.seq = s, .func = 1, .datatype = 2, .count = 1000}};
        if (s < to || !open_last)
            cp[b.ncompletions++] = (nsc_completion){s + 1, s * 1000000ull + 500000};
    }
    return nsc_live_section(l, f->agent, &b, now) || nsc_live_agent_seen(l, f->agent, f->host, now) ? -1 : 0;
}

char *nsc_test_live_status(const nsc_live *l, uint64_t now, size_t *len)
{
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    if (!f)
        return NULL;
    int rc = nsc_live_status_json(l, now, f);
    if (fclose(f) || rc) {
        free(text);
        return NULL;
    }
    if (len)
        *len = n;
    return text;
}

int nsc_test_live_status_doc(const nsc_live *l, uint64_t now, nsc_json_doc *doc, const char **why)
{
    size_t len = 0;
    char *text = nsc_test_live_status(l, now, &len);
    nsc_json_error err;
    int rc = text ? nsc_json_parse(text, len, NULL, doc, &err) : -1;
    *why = !text ? "no status" : rc ? err.msg : NULL;
    free(text);
    return rc ? -1 : 0;
}
