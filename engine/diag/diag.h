/* diag.h: why a job is slow or stuck, and where: the analysis behind
 * `ncclscope diagnose`, `links` and `hosts` and the collector's
 * /api/v1/{diagnose,links,hosts}, which give the same JSON.
 *
 * Owns the problems found (a cause class and a place), the three analyses
 * and their JSON documents (docs/api.md). The analysis reads the API's own
 * documents (comms, collectives, timeline, status) through a source, a get
 * callback: the CLI fetches them over HTTP or from a store directory, the
 * collector runs the queries in-process. So both see the same bytes and
 * write the same answer.
 *
 * A problem has a kind (its cause class), a place (communicator, seq, rank,
 * peer, channel, step, hosts: each -1 or empty when it does not apply), a
 * one-line text that names the cause and the place, and its evidence figures
 * (JSON object members, written as they are).
 *
 * Errors: NSC_DIAG_FAIL (the source's or the analysis's, s->err says why in
 * one line), NSC_DIAG_USAGE (a parameter that cannot be passed on) or
 * NSC_DIAG_NOTFOUND (no such communicator).
 */
#ifndef NCCLSCOPE_DIAG_H
#define NCCLSCOPE_DIAG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "query.h"
#include "store.h"
#include "stream.h"
#include "utc.h"

enum { NSC_DIAG_OK = 0, NSC_DIAG_FAIL = -1, NSC_DIAG_USAGE = -2, NSC_DIAG_NOTFOUND = -3 };

/* ---- the source ------------------------------------------------------------ */

/* Body bytes as they arrive; nonzero stops the transfer (and is returned). */
typedef int (*nsc_diag_body_fn)(void *arg, const char *data, size_t len);
/* GET /api/v1/<endpoint>?<qs> (qs "" or "&a=b..."): 0, the body callback's
 * nonzero return (positive), or with err set (one line) NSC_DIAG_USAGE when
 * the source refused a parameter (HTTP 400) and -1 for any other failure. */
typedef int (*nsc_diag_get_fn)(void *arg, const char *endpoint, const char *qs, nsc_diag_body_fn fn,
                               void *fn_arg, char *err, size_t errcap);

typedef struct nsc_diag_src {
    nsc_diag_get_fn get;
    void *arg;
    const char *name;  /* for messages: "http://...", "store DIR", "the collector" */
    char err[640];
} nsc_diag_src;

/* A whole document, NDJSON values one by one, or paged NDJSON (timeline,
 * collectives: every page until next_cursor is null, or only the first
 * `limit` records when limit is not NULL). 0, NSC_DIAG_USAGE (a parameter
 * the source refused) or NSC_DIAG_FAIL. */
int nsc_diag_fetch_doc(nsc_diag_src *s, const char *endpoint, const char *qs, nsc_doc *d);
int nsc_diag_fetch_ndjson(nsc_diag_src *s, const char *endpoint, const char *qs, nsc_ndjson_fn fn, void *arg);
int nsc_diag_fetch_pages(nsc_diag_src *s, const char *endpoint, const char *qs, const char *limit,
                         nsc_ndjson_fn fn, void *arg);

/* A query endpoint (comms, collectives, timeline, ...) answered from a store
 * reader, for a get callback: returns as one, *code the NSC_QUERY_* result.
 * In two steps for a caller that needs the parsed query first (the store it
 * reads depends on its job): parse (qs may start with '&'), then run. */
int nsc_diag_query_get(nsc_store_reader *rd, const char *endpoint, const char *qs, nsc_diag_body_fn fn, void *arg,
                       char *err, size_t errcap, int *code);
int nsc_diag_query_parse(const char *endpoint, const char *qs, nsc_query **q, char *err, size_t errcap, int *code);
int nsc_diag_query_run(nsc_store_reader *rd, const nsc_query *q, nsc_diag_body_fn fn, void *arg, char *err,
                       size_t errcap, int *code);

/* ---- problems ---------------------------------------------------------------- */

#define NSC_DIAG_MAX_PROBLEMS 64
#define NSC_DIAG_PASSED_MAX 32  /* (communicator, function) pairs nsc_findings.passed keeps */

/* Most severe last: the report sorts by severity, highest first. */
enum nsc_diag_severity {
    NSC_SEV_DROPPED,
    NSC_SEV_LATE,        /* a rank late on its host or GPU: the others wait for it */
    NSC_SEV_SLOW_LINK,   /* a link or a NIC slower than the comparable ones */
    NSC_SEV_IN_FLIGHT,
    NSC_SEV_P2P_UNMATCHED, /* a Recv whose Send never came, or a Send never received */
    NSC_SEV_NEVER_JOINED,
    NSC_SEV_HUNG,
    NSC_SEV_LAGGING,
    NSC_SEV_STALL,       /* a rank stopped sending inside a collective */
    NSC_SEV_MISSING,
    NSC_SEV_DEAD,
    NSC_SEV_MISMATCH
};

typedef struct nsc_problem {
    int severity;
    char kind[24];
    char comm[24];
    uint64_t seq;                   /* the collective's seq (0 if none) */
    int64_t rank, peer, channel, step;  /* -1 if none */
    char hosts[2][64];              /* the host(s) of the place ("" if none) */
    size_t order;                   /* found in this order: the last tie-break */
    char text[320];
    char figures[1536];             /* JSON members, "" for none */
    char began[NSC_UTC_MAX];        /* when it began, UTC ISO-8601 ("" if not known) */
} nsc_problem;

typedef struct nsc_rc_late nsc_rc_late;

typedef struct nsc_rc_links nsc_rc_links;

/* What the root-cause passes carry per communicator from one to the next
 * (kept by the caller across them), so that a pass reads what came since
 * and not the job whole: where its Send/Recv check starts (the p2p
 * endpoint's settled_ns at the last pass); the settled point, the first seq
 * the last pass found not yet settled (diagnose.c: every collective before
 * it ended on all ranks and has no problem of its own, so it is read once
 * and never again); and, over the seqs below `below` (those before the
 * settled point, or that left the window), the late ranks' tally and the
 * links' step times (and when some began: a slow link's onset), from which
 * the pass's own go on, so that a late rank's and a link's figures and
 * onset are the whole job's, as diagnose gives them. */
typedef struct nsc_rc_carry {
    struct nsc_rc_mark {
        char comm[24];
        uint64_t p2p_ns;
        uint64_t settled;
        uint64_t below;
        uint64_t collectives;  /* collectives below `below` */
        nsc_rc_late *late;     /* NULL until seqs went below */
        nsc_rc_links *links;   /* NULL until seqs went below */
    } *v;
    size_t n, cap;
} nsc_rc_carry;

void nsc_rc_carry_free(nsc_rc_carry *s);

typedef struct nsc_findings {
    nsc_diag_src *src;
    nsc_rc_late *late;  /* the communicator being checked */
    nsc_problem *in_flight;  /* ... its first collective in flight, NULL none */
    uint64_t queued;         /* ... and how many more of its collectives are in flight */
    const char *only;  /* a communicator's id or name, or NULL for all */
    char job[64];      /* the job looked at */
    const char *comm;
    const nsc_json *status;  /* the live state's document, while nsc_diag_find runs */
    int64_t wall_ns;   /* the job's wall clock (its collectives' header), if has_wall */
    int has_wall;
    /* Read only each communicator's last `window` seqs (by the live state's
     * highest seq of it; 0 or a communicator it does not list: all): the
     * collector's root-cause passes, whose cost must not grow with the job. */
    uint64_t window;
    char seqs[48];     /* the communicator being checked: its seq span, "" for all */
    /* ... what the proxy pass reads of its ledger: with a carry, from the
     * settled point (the links before it carried), else seqs */
    char rc_seqs[48];
    /* ... with a carry: each function's first seq not settled in this read,
     * the least of them (UINT64_MAX: none read), and the function whose
     * collectives are streaming by (the read is in (func, seq) order) */
    uint64_t settle_next, settled;
    char settle_func[32];
    int settle_stop;
    nsc_rc_carry *carry;     /* NULL: Send/Recv and late ranks are read from each communicator's start */
    struct nsc_rc_mark *mark;  /* the communicator being checked: its carry, NULL none */
    uint64_t first_seq;      /* ... its collectives before it only give the next one its previous */
    uint64_t p2p_lag_ns;     /* with carry: how late a Send or Recv record may still come */
    /* Per communicator and function, the highest seq of a collective that
     * needs every rank and ended on a rank, in the store or by the live
     * state (diagnose.c): every rank took part in it. */
    struct nsc_diag_passed {
        const char *comm;
        char func[32];
        uint64_t seq;
    } passed[NSC_DIAG_PASSED_MAX];
    size_t npassed;
    nsc_problem p[NSC_DIAG_MAX_PROBLEMS];
    size_t n, dropped;
    uint64_t collectives;
} nsc_findings;

/* Every problem of the job (NULL: the source's only or latest one), most
 * severe first; f zeroed but for f->src, f->only, f->window, f->carry and
 * f->p2p_lag_ns. `status` is the status
 * document when the caller has it (hosts, for every job), else NULL and it
 * is fetched. Used by diagnose, by watch while a communicator is stuck and
 * by hosts. */
int nsc_diag_find(const char *job, const nsc_json *status, nsc_findings *f);
/* "OK: no problem found in N collectives" or "PROBLEM: comm C: <first>". */
void nsc_diag_verdict(const nsc_findings *f, char *buf, size_t cap);
/* diagnose's document: {"job", "verdict", "collectives_checked", "problems": [...],
 * "problems_not_shown"}, one line. */
void nsc_diag_write_json(const nsc_findings *f, FILE *out);
/* One problem as diagnose's document lists it: {"kind", "comm", "rank",
 * "peer", "channel", "step", "seq", "hosts", "figures", "evidence"}. */
void nsc_diag_write_problem(const nsc_problem *p, FILE *out);

/* ---- links ------------------------------------------------------------------- */

/* One network link per (sender rank -> receiver rank, channel). */
typedef struct nsc_diag_link {
    int32_t src, dst;
    uint8_t channel;
    uint8_t state;  /* NSC_LINK_* */
    size_t steps;
    uint64_t step_ns;  /* its typical step */
    uint64_t bytes, busy_ns;
    const char *src_host, *dst_host;  /* "?" if unknown; valid until nsc_diag_links_free */
} nsc_diag_link;

enum { NSC_LINK_FEW, NSC_LINK_OK, NSC_LINK_SLOW, NSC_LINK_BEHIND };
extern const char *const nsc_diag_link_state_names[4];  /* "few steps", "ok", "SLOW", "behind" */

typedef struct nsc_diag_links {
    char job[64];
    char comm[64];
    uint64_t ref_ns, slow_ns;  /* the reference step and the slow limit */
    nsc_diag_link *link;       /* by sender, receiver, channel */
    size_t n;
    char (*host)[64];          /* per rank */
} nsc_diag_links;

/* The links of a communicator (comm: an id or a name, in job or when job is
 * NULL in every job; NULL: the job's one with the most ranks among those
 * with network steps, else with the most ranks). */
int nsc_diag_links_get(nsc_diag_src *s, const char *job, const char *comm, nsc_diag_links *out);
void nsc_diag_links_free(nsc_diag_links *l);
/* The link's achieved bandwidth (GB/s) and its step against the reference. */
double nsc_diag_link_gbps(const nsc_diag_link *k);
double nsc_diag_link_ratio(const nsc_diag_links *l, const nsc_diag_link *k);
/* links' document: {"job", "comm", "reference_step_ns", "slow_step_ns", "links": [...]}. */
void nsc_diag_links_write_json(const nsc_diag_links *l, FILE *out);

/* ---- topology ------------------------------------------------------------------ */

/* The topology document (job, comm: NULL for the defaults; window_qs "" or
 * "&t0_ns=..&t1_ns=..") with "edges" added: per channel each (rank -> send
 * peer) with "transport" (NET between hosts, intra within one) and "health"
 * (ok, slow, behind from the links analysis, or unknown) and "ratio". */
int nsc_diag_topology_write(nsc_diag_src *s, const char *job, const char *comm, const char *window_qs, FILE *out);

/* ---- hosts ------------------------------------------------------------------- */

/* Per host, across every job of the status: how often it was the place of a
 * cause (a slow link counts at both ends; causes without a column of their
 * own count as other). */
enum { NSC_HOST_LATE, NSC_HOST_SLOW_LINK, NSC_HOST_SLOW_NIC, NSC_HOST_STALL, NSC_HOST_DEAD, NSC_HOST_DROPPED,
       NSC_HOST_OTHER, NSC_HOST_NCOLS };
extern const char *const nsc_diag_host_cols[NSC_HOST_NCOLS];  /* "late", "slow_link", ... */
/* The column a problem's kind counts in. */
int nsc_diag_host_col(const char *kind);

typedef struct nsc_diag_host {
    char host[64];
    uint64_t n[NSC_HOST_NCOLS];
    uint64_t total;
} nsc_diag_host;

typedef struct nsc_diag_hosts {
    nsc_diag_host *h;  /* most causes first, then by name */
    size_t n;
    uint64_t jobs;
} nsc_diag_hosts;

int nsc_diag_hosts_get(nsc_diag_src *s, nsc_diag_hosts *out);
/* Tallying by hand: an empty table (NSC_DIAG_OK, or NSC_DIAG_FAIL out of
 * memory), a host's count in a column (col -1: only listed, all zero), one
 * job's problems, and the order above. */
int nsc_diag_hosts_new(nsc_diag_hosts *t);
void nsc_diag_hosts_add(nsc_diag_hosts *t, const char *host, int col);
void nsc_diag_hosts_count(nsc_diag_hosts *t, const nsc_problem *p, size_t n);
void nsc_diag_hosts_sort(nsc_diag_hosts *t);
void nsc_diag_hosts_free(nsc_diag_hosts *t);
/* hosts' document: {"jobs", "hosts": [{"host", "late", ..., "total"}]}. */
void nsc_diag_hosts_write_json(const nsc_diag_hosts *t, FILE *out);

#endif
