/* topology.c: the topology document with each channel's edges judged.
 *
 * The query's topology document goes out unchanged, with one member added at
 * its end: "edges", per channel each (rank -> send peer) edge of the ring
 * (or tree) with its transport (NET when the two ranks are on different
 * hosts, else intra-node) and its health from the links analysis of the
 * communicator (ok, slow or behind with its step ratio to the reference;
 * unknown where the proxy steps do not tell: no ProxyStep events, too few
 * steps, or an intra-node edge the proxy does not drive). A document that
 * already has edges (a collector judged it) is passed on as it is.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dint.h"
#include "qs.h"

/* The host of rank r in the document's "ranks", or NULL. */
static const char *rank_host(const nsc_json *root, int64_t r)
{
    const nsc_json *ranks = nsc_json_get(root, "ranks");
    for (const nsc_json *x = nsc_json_first(ranks); x; x = nsc_json_next(ranks, x))
        if (nsc_diag_num_or(x, "rank", -1) == r)
            return nsc_json_str(nsc_json_get(x, "host"));
    return NULL;
}

static const nsc_diag_link *find_link(const nsc_diag_links *l, int64_t from, int64_t to, int64_t channel)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->link[i].src == from && l->link[i].dst == to && l->link[i].channel == channel)
            return &l->link[i];
    return NULL;
}

static void write_edge(FILE *out, const nsc_json *root, const nsc_diag_links *l, int64_t channel, int64_t from,
                       int64_t to, int first)
{
    const char *a = rank_host(root, from), *b = rank_host(root, to);
    const char *transport = !a || !b ? "unknown" : strcmp(a, b) != 0 ? "NET" : "intra";
    const nsc_diag_link *k = find_link(l, from, to, channel);
    static const char *const health[] = {[NSC_LINK_FEW] = "unknown", [NSC_LINK_OK] = "ok",
                                         [NSC_LINK_SLOW] = "slow", [NSC_LINK_BEHIND] = "behind"};
    fprintf(out, "%s{\"channel\":%" PRId64 ",\"from\":%" PRId64 ",\"to\":%" PRId64 ",\"transport\":\"%s\"",
            first ? "" : ",", channel, from, to, transport);
    if (k && k->state != NSC_LINK_FEW && l->ref_ns)
        fprintf(out, ",\"health\":\"%s\",\"ratio\":%.2f}", health[k->state], nsc_diag_link_ratio(l, k));
    else
        fputs(",\"health\":\"unknown\",\"ratio\":null}", out);
}

/* The edges member: every channel's send peers, in the document's order. */
static void write_edges(FILE *out, const nsc_json *root, const nsc_diag_links *l)
{
    const nsc_json *channels = nsc_json_get(root, "channels");
    int first = 1;
    fputs(",\"edges\":[", out);
    for (const nsc_json *c = nsc_json_first(channels); c; c = nsc_json_next(channels, c)) {
        int64_t ch = nsc_diag_num_or(c, "channel", -1);
        const nsc_json *peers = nsc_json_get(c, "send_peers");
        for (const nsc_json *p = nsc_json_first(peers); p; p = nsc_json_next(peers, p), first = 0) {
            int64_t from = -1, to = -1;
            nsc_json_i64(nsc_json_at(p, 0), &from);
            nsc_json_i64(nsc_json_at(p, 1), &to);
            write_edge(out, root, l, ch, from, to, first);
        }
    }
    fputs("]}\n", out);
}

int nsc_diag_topology_write(nsc_diag_src *s, const char *job, const char *comm, const char *window_qs, FILE *out)
{
    char qs[1024] = "";
    if ((job && nsc_qs_add(qs, sizeof qs, "job", job) != 0) || (comm && nsc_qs_add(qs, sizeof qs, "comm", comm) != 0) ||
        strlen(qs) + strlen(window_qs) >= sizeof qs) {
        snprintf(s->err, sizeof s->err, "query string too long");
        return NSC_DIAG_USAGE;
    }
    strcat(qs, window_qs);
    nsc_doc d;
    int rc = nsc_diag_fetch_doc(s, "topology", qs, &d);
    if (rc != NSC_DIAG_OK)
        return rc;
    const nsc_json *root = nsc_json_root(&d.doc);
    const char *id = nsc_json_str(nsc_json_get(root, "comm"));
    size_t end = d.len;
    while (end && d.buf[end - 1] != '}')
        end--;
    if (nsc_json_get(root, "edges") || !id || !end) {
        fwrite(d.buf, 1, d.len, out);
        nsc_doc_free(&d);
        return NSC_DIAG_OK;
    }
    nsc_diag_links l;
    rc = nsc_diag_links_get(s, job, id, &l);
    if (rc == NSC_DIAG_OK) {
        fwrite(d.buf, 1, end - 1, out);
        write_edges(out, root, &l);
    }
    nsc_diag_links_free(&l);
    nsc_doc_free(&d);
    return rc;
}
