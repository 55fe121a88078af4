/* test_topo_edges.c: the topology's edges (engine/diag/topology.c) on the
 * query fixture: ranks 0 and 1 on host h0, 2 and 3 on h1, a ring 0->1->2->3
 * on channel 0 and its reverse on channel 1, ProxyOps without ProxySteps.
 * The document is the query's, byte for byte, with "edges" added: each
 * send peer with its transport (intra within a host, NET between) and
 * health unknown (no step to judge a link by). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "json.h"
#include "qfixture.h"
#include "qjson.h"
#include "storeutil.h"

static int get(void *arg, const char *endpoint, const char *qs, nsc_diag_body_fn fn, void *fn_arg, char *err,
               size_t errcap)
{
    int code;
    return nsc_diag_query_get(arg, endpoint, qs, fn, fn_arg, err, errcap, &code);
}

Test(topo_edges, transport_by_host_and_unknown_health_without_steps)
{
    char *dir = nsc_tmp_store_dir();
    cr_assert(dir);
    cr_assert_eq(qf_fill(dir), 0);
    nsc_store *st;
    nsc_store_opts o = {.read_only = 1};
    cr_assert_eq(nsc_store_open(dir, &o, &st), 0);
    qf_result base = qf_run(st, "topology", "job=jobA&comm=0xabc123");
    cr_assert_eq(base.rc, 0, "%s", base.err);

    nsc_store_reader *rd;
    cr_assert_eq(nsc_store_read_begin(st, &rd), 0);
    nsc_diag_src s = {get, rd, "the fixture", ""};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert(f);
    cr_assert_eq(nsc_diag_topology_write(&s, "jobA", "0xabc123", "", f), NSC_DIAG_OK, "%s", s.err);
    cr_assert_eq(fclose(f), 0);
    nsc_store_read_end(rd);

    /* the query's document, its closing brace replaced by the edges */
    cr_assert_gt(base.len, 2);
    cr_assert_eq(memcmp(text, base.text, base.len - 2), 0, "not the query's document: %s", text);
    cr_assert_eq(strncmp(text + base.len - 2, ",\"edges\":[", 10), 0, "%s", text);
    nsc_json_doc d;
    nsc_json_error e;
    cr_assert_eq(nsc_json_parse(text, len, NULL, &d, &e), 0, "%s: %s", e.msg, text);
    const nsc_json *edges = nsc_json_get(nsc_json_root(&d), "edges");
    cr_assert_eq(edges->count, 8);
    for (uint32_t i = 0; i < edges->count; i++) {
        const nsc_json *x = nsc_json_at(edges, i);
        int64_t from = qj_i64(x, "from"), to = qj_i64(x, "to");
        int same_host = (from < 2) == (to < 2);
        cr_assert_eq(qj_i64(x, "channel"), i / 4);
        cr_assert_eq(to, qj_i64(x, "channel") == 0 ? (from + 1) % 4 : (from + 3) % 4);
        cr_assert_str_eq(nsc_json_str(nsc_json_get(x, "transport")), same_host ? "intra" : "NET", "%ld->%ld",
                         (long)from, (long)to);
        cr_assert_str_eq(nsc_json_str(nsc_json_get(x, "health")), "unknown");
        cr_assert_eq(nsc_json_get(x, "ratio")->kind, NSC_JSON_NULL);
    }
    nsc_json_free(&d);
    free(text);
    qf_result_free(&base);
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}
