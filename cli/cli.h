/* cli.h: what the verbs of ncclscope share.
 *
 * Owns the context a verb runs with (its parsed arguments, the data source,
 * the output mode), the exit codes, and the helpers every verb uses to ask
 * its source for JSON. Each verb lives in the file of its concern:
 * report.c (comms, collectives, topology, stats), status.c (status, watch),
 * diagnose.c (diagnose, links, hosts: the analysis is engine/diag/),
 * timeline.c (timeline, export), updown.c (up, down).
 */
#ifndef NCCLSCOPE_CLI_H
#define NCCLSCOPE_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "args.h"
#include "diag.h"
#include "paint.h"
#include "source.h"
#include "stream.h"
#include "units.h"

enum {
    NSC_EXIT_OK = 0,
    NSC_EXIT_FAIL = 1,   /* not found, nothing matched, an error, or diagnose found a problem */
    NSC_EXIT_USAGE = 2   /* a bad command line or value */
};

typedef struct nsc_cli_ctx {
    const nsc_cli_args *args;
    nsc_src_opts src_opts;
    nsc_src *src;        /* opened by nsc_cli_source() on first use */
    int json;            /* --json: the source's JSON, unchanged */
    nsc_units units;     /* --raw, and the wall clock of the answer being shown */
    int color;           /* paint.h: a terminal, NO_COLOR unset */
    char err[640];       /* why a verb failed: printed as "ncclscope: <err>" */
} nsc_cli_ctx;

typedef int (*nsc_verb_fn)(nsc_cli_ctx *c);

/* The query string of a verb: job plus the verb's API options that were
 * given (comm, rank, func, seq, limit, t0 -> t0_ns, t1 -> t1_ns). Checks the
 * time range. Returns NSC_EXIT_OK or NSC_EXIT_USAGE with c->err set. */
int nsc_cli_query(nsc_cli_ctx *c, char *qs, size_t cap);
/* Fetch an endpoint: the whole document (parsed), NDJSON values one by one,
 * or raw bytes to stdout (--json). Return NSC_EXIT_OK or NSC_EXIT_FAIL. */
int nsc_cli_fetch_doc(nsc_cli_ctx *c, const char *endpoint, const char *qs, nsc_doc *d);
int nsc_cli_fetch_ndjson(nsc_cli_ctx *c, const char *endpoint, const char *qs, nsc_ndjson_fn fn,
                         void *arg);
/* Paged NDJSON (timeline, collectives): every page until next_cursor is null
 * (only one with --limit); fn sees one header, the records, one end line. */
int nsc_cli_fetch_pages(nsc_cli_ctx *c, const char *endpoint, const char *qs, nsc_ndjson_fn fn,
                        void *arg);
/* An nsc_ndjson_fn that prints each line unchanged (--json of paged results). */
int nsc_cli_print_line(void *arg, const nsc_json *v, const char *line, size_t len);
/* The verb's source as the analysis's (diag.h), and the exit code of an
 * analysis's return (its error copied to c->err). */
int nsc_cli_diag_src(nsc_cli_ctx *c, nsc_diag_src *d);
int nsc_cli_diag_rc(nsc_cli_ctx *c, const nsc_diag_src *d, int rc);
int nsc_cli_fetch_raw(nsc_cli_ctx *c, const char *endpoint, const char *qs);
/* Server-sent events, no timeout; ends when the stream does or fn says stop
 * (a positive return that is not an error leaves c->err empty). */
int nsc_cli_fetch_sse(nsc_cli_ctx *c, const char *endpoint, const char *qs, nsc_sse_fn fn, void *arg);
/* A number option: NSC_EXIT_OK (absent leaves *v), or NSC_EXIT_USAGE. */
int nsc_cli_u64_opt(nsc_cli_ctx *c, const char *name, unsigned long long *v);

/* Walking a /api/v1/status document (status.c; statusdoc.h has the rest). */
/* "running" (a process alive), "finished" (all ranks seen, none behind or in
 * flight) or "incomplete". */
const char *nsc_status_comm_state(const nsc_json *status, const nsc_json *comm);
/* --job absent, or this job object's name. */
int nsc_status_job_wanted(const nsc_cli_ctx *c, const nsc_json *job);

int nsc_verb_status(nsc_cli_ctx *c);
int nsc_verb_watch(nsc_cli_ctx *c);
int nsc_verb_comms(nsc_cli_ctx *c);
int nsc_verb_collectives(nsc_cli_ctx *c);
int nsc_verb_topology(nsc_cli_ctx *c);
int nsc_verb_stats(nsc_cli_ctx *c);
int nsc_verb_p2p(nsc_cli_ctx *c);
int nsc_verb_ledger(nsc_cli_ctx *c);
int nsc_verb_diagnose(nsc_cli_ctx *c);
int nsc_verb_hosts(nsc_cli_ctx *c);
int nsc_verb_links(nsc_cli_ctx *c);  /* rootcause.c */
int nsc_verb_timeline(nsc_cli_ctx *c);
int nsc_verb_export(nsc_cli_ctx *c);
int nsc_verb_up(nsc_cli_ctx *c);
int nsc_verb_down(nsc_cli_ctx *c);

#endif
