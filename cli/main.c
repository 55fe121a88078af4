/* main.c: ncclscope, the command line: verbs, options, help, exit codes.
 *
 * `ncclscope [GLOBAL OPTIONS] VERB [OPTIONS]`. Exit codes: 0 success, 1 not
 * found, nothing matched, an error or (diagnose) a problem found, 2 a bad
 * command line or value. Errors are one line on
 * stderr starting with "ncclscope: ". The verbs themselves and the fetch
 * helpers they share are in the files named in cli.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const nsc_cli_opt global_opts[] = {
    {"collector", "URL", "collector HTTP API (default $NCCLSCOPE_COLLECTOR, then " NSC_DEFAULT_COLLECTOR ")"},
    {"db", "DIR", "read a store directory instead of asking a collector (read-only)"},
    {"token-file", "FILE", "bearer token for the collector (default $NCCLSCOPE_TOKEN)"},
    {"ca-file", "FILE", "https: CA certificates (PEM) that verify the collector (default $NCCLSCOPE_CA_FILE, then the system's)"},
    {"timeout", "SECONDS", "longest wait for the collector (default 10)"},
    {"job", "NAME", "job to look at (default: the collector's only or latest job)"},
    {"json", NULL, "print the source's JSON unchanged, for scripts"},
    {"raw", NULL, "exact integers (ns, bytes) instead of units for people (us, ms, MiB, GB/s)"},
    {"help", NULL, "show help (also: ncclscope help VERB)"},
    {"version", NULL, "print the version"},
    {"completion", "bash", "print the bash completion script (made from this help's tables)"},
    {"man", NULL, "print the man page ncclscope(1) (made from this help's tables)"},
    {NULL, NULL, NULL}};

#define COMM_OPT {"comm", "ID", "communicator (hex id \"0x...\" or name; looked up in every job; default: the job's only one)"}
#define WINDOW_OPTS {"t0", "TIME", "window start: on the collector's clock (ns, or 1216.5s) or UTC (2026-11-28T17:30:00Z)"}, \
                    {"t1", "TIME", "window end, as --t0"}, \
                    {"since", "AGO", "window start: this long before now (90s, 5m, 2h) or a UTC time"}, \
                    {"until", "AGO", "window end: this long before now, or a UTC time"}

#define CLOCK_OPT {"clock", "model|causal", "causal: the hosts' clock bounds narrowed by the communicator's causality (docs/api.md)"}

static const nsc_cli_opt no_opts[] = {{NULL, NULL, NULL}};
static const nsc_cli_opt watch_opts[] = {
    {"count", "N", "stop after N summaries (default: until interrupted)"}, {NULL, NULL, NULL}};
static const nsc_cli_opt comm_opts[] = {COMM_OPT, {NULL, NULL, NULL}};
static const nsc_cli_opt timeline_opts[] = {
    COMM_OPT, WINDOW_OPTS, {"rank", "R", "only these ranks (3, 0,2,4-7)"},
    {"type", "TYPES", "event types (coll,p2p,kernelch,proxyop,...; default all)"},
    {"csv", NULL, "one CSV line per event"},
    {"width", "COLS", "width of the text lanes (default 100)"},
    {"limit", "N", "at most N events, the first in time order (default: all of the window)"}, CLOCK_OPT,
    {NULL, NULL, NULL}};
static const nsc_cli_opt coll_opts[] = {
    COMM_OPT, WINDOW_OPTS, {"func", "NAME", "only this collective (AllReduce, ...)"},
    {"rank", "R", "only these ranks"}, {"seq", "N", "only this sequence number (or N-M)"},
    {"limit", "N", "at most N collectives"},
    {"sort", "FIELD", "order by a column (duration, skew, busbw, bytes, ...: largest first)"},
    {"top", "N", "show only the first N rows (after --sort)"}, CLOCK_OPT, {NULL, NULL, NULL}};
static const nsc_cli_opt stats_opts[] = {
    COMM_OPT, WINDOW_OPTS, {"func", "NAME", "only this collective"},
    {"seq", "N", "only this sequence number (or N-M)"}, CLOCK_OPT, {NULL, NULL, NULL}};
static const nsc_cli_opt ledger_opts[] = {
    COMM_OPT, {"rank", "R", "only these ranks (3, 0,2,4-7)"}, {"seq", "N", "only this sequence number (or N-M)"},
    {"limit", "N", "at most N records, the first in (seq, rank) order"},
    {"sort", "FIELD", "order by a column (gpu_bound, dropped, bytes, ...: largest first)"},
    {"top", "N", "show only the first N rows (after --sort)"}, CLOCK_OPT, {NULL, NULL, NULL}};
static const nsc_cli_opt p2p_opts[] = {COMM_OPT, WINDOW_OPTS, {NULL, NULL, NULL}};
static const nsc_cli_opt export_opts[] = {
    COMM_OPT, WINDOW_OPTS, {"rank", "R", "only these ranks (3, 0,2,4-7)"},
    {"type", "TYPES", "event types (default all)"},
    {"format", "perfetto|chrome", "trace format (default perfetto)"},
    {"output", "FILE", "file to write (-o FILE; required)"},
    {"input", "FILE", "convert timeline NDJSON from FILE ('-': stdin) instead of fetching"},
    {NULL, NULL, NULL}};
static const nsc_cli_opt up_opts[] = {
    {"run-dir", "DIR", "pid files, logs and store (default $NCCLSCOPE_RUNDIR, then the agent's default)"},
    {"port", "PORT", "collector HTTP port on 127.0.0.1 (default 7761; 0: any free port)"},
    {"zmq-port", "PORT", "collector port the agent sends to (default 7760; 0: any)"},
    {"agent-port", "PORT", "agent /healthz and /metrics port (default 7762; 0: any)"},
    {"wait", "SECONDS", "how long to wait for /healthz (default 10)"}, {NULL, NULL, NULL}};
static const nsc_cli_opt down_opts[] = {
    {"run-dir", "DIR", "as given to up"},
    {"wait", "SECONDS", "how long to wait for each to exit after SIGTERM (default 10)"},
    {NULL, NULL, NULL}};

typedef struct verb {
    const char *name;
    nsc_verb_fn fn;
    const nsc_cli_opt *opts;
    const char *usage;
    const char *summary;
} verb;

static const verb verbs[] = {
    {"status", nsc_verb_status, no_opts, "",
     "job report: nodes, processes, GPUs, communicators by shape, errors"},
    {"watch", nsc_verb_watch, watch_opts, "", "live summary, refreshing (plain lines when piped)"},
    {"comms", nsc_verb_comms, no_opts, "", "communicators of the job"},
    {"timeline", nsc_verb_timeline, timeline_opts, "[--comm ID]",
     "one aligned timeline across ranks (text lanes, --json, --csv)"},
    {"collectives", nsc_verb_collectives, coll_opts, "[--comm ID] [--sort FIELD] [--top N]",
     "collectives matched across ranks: duration, skew, last to arrive, busBW"},
    {"topology", nsc_verb_topology, comm_opts, "[--comm ID]",
     "ranks to hosts, pids and GPUs; rings per channel; split communicators"},
    {"stats", nsc_verb_stats, stats_opts, "[--comm ID]",
     "latency percentiles and bandwidth per function and size; stragglers"},
    {"p2p", nsc_verb_p2p, p2p_opts, "[--comm ID]",
     "Send/Recv matched per (rank -> peer): counts, unmatched, size mismatches, wait"},
    {"ledger", nsc_verb_ledger, ledger_opts, "[--comm ID] [--seq N-M] [--rank R]",
     "the collective ledger: one record per seq and rank, times aligned with their error bound"},
    {"diagnose", nsc_verb_diagnose, comm_opts, "[--comm ID]",
     "find hangs, mismatches, missing, lagging and dead ranks (exit 1 if any)"},
    {"hosts", nsc_verb_hosts, no_opts, "",
     "per host, across the collector's jobs: how often diagnose placed a cause there"},
    {"links", nsc_verb_links, comm_opts, "[--comm ID]",
     "network links per (rank -> rank, channel): step time, bandwidth, slow ones"},
    {"export", nsc_verb_export, export_opts, "[--comm ID] -o FILE [--format perfetto|chrome]",
     "write a Perfetto (.pftrace) or Chrome JSON trace"},
    {"up", nsc_verb_up, up_opts, "", "start a local collector and agent"},
    {"down", nsc_verb_down, down_opts, "", "stop what up started"},
    {"help", NULL, no_opts, "[VERB]", "show help"},
};
#define NVERBS (sizeof verbs / sizeof verbs[0])

static const verb *find_verb(const char *name)
{
    for (size_t i = 0; i < NVERBS; i++)
        if (strcmp(verbs[i].name, name) == 0)
            return &verbs[i];
    return NULL;
}

static const nsc_cli_opt *verb_opts(const char *name)
{
    const verb *v = find_verb(name);
    return v ? v->opts : NULL;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: ncclscope [GLOBAL OPTIONS] VERB [OPTIONS]\n\n"
               "Traces of NCCL collectives across every rank of a job, from a collector\n"
               "(--collector URL) or a store directory (--db DIR).\n\nverbs:\n");
    for (size_t i = 0; i < NVERBS; i++)
        fprintf(f, "  %-12s %s\n", verbs[i].name, verbs[i].summary);
    fprintf(f, "\nglobal options:\n");
    nsc_cli_print_opts(f, global_opts);
    fprintf(f, "\nexit codes: 0 success, 1 not found, nothing matched, an error or (diagnose) a problem\n"
               "found, 2 a bad command line or value.\n"
               "See 'ncclscope help VERB' and docs/cli.md.\n");
}

static void verb_help(FILE *f, const verb *v)
{
    fprintf(f, "usage: ncclscope %s %s\n\n%s\n", v->name, v->usage, v->summary);
    if (v->opts[0].name) {
        fprintf(f, "\noptions:\n");
        nsc_cli_print_opts(f, v->opts);
    }
    fprintf(f, "\nglobal options:\n");
    nsc_cli_print_opts(f, global_opts);
}

/* roff text: a backslash and a leading dot or quote escaped. */
static void roff(FILE *f, const char *s)
{
    if (*s == '.' || *s == '\'')
        fputs("\\&", f);
    for (; *s; s++)
        fputs(*s == '\\' ? "\\e" : *s == '-' ? "\\-" : (char[2]){*s, 0}, f);
}

static void man_opts(FILE *f, const nsc_cli_opt *opts)
{
    for (const nsc_cli_opt *o = opts; o->name; o++) {
        fprintf(f, ".TP\n.B \\-\\-");
        roff(f, o->name);
        if (o->arg) {
            fputs(" \\fI", f);
            roff(f, o->arg);
            fputs("\\fR", f);
        }
        fputc('\n', f);
        roff(f, o->help);
        fputc('\n', f);
    }
}

/* ncclscope(1), from the tables --help prints. */
static void man_page(FILE *f)
{
    fprintf(f, ".TH NCCLSCOPE 1 \"\" \"ncclscope %s\" \"User Commands\"\n.SH NAME\n"
               "ncclscope \\- traces of NCCL collectives across every rank of a job\n.SH SYNOPSIS\n"
               ".B ncclscope\n[\\fIGLOBAL OPTIONS\\fR] \\fIVERB\\fR [\\fIOPTIONS\\fR]\n.SH DESCRIPTION\n"
               "Asks a collector (\\-\\-collector URL) or reads a store directory (\\-\\-db DIR).\n"
               ".SH GLOBAL OPTIONS\n", NSC_VERSION);
    man_opts(f, global_opts);
    fputs(".SH VERBS\n", f);
    for (size_t i = 0; i < NVERBS; i++) {
        fprintf(f, ".SS %s ", verbs[i].name);
        roff(f, verbs[i].usage);
        fputc('\n', f);
        roff(f, verbs[i].summary);
        fputc('\n', f);
        man_opts(f, verbs[i].opts);
    }
    fputs(".SH EXIT STATUS\n0 success; 1 not found, nothing matched, an error, or (diagnose) a problem found;\n"
          "2 a bad command line or value.\n.SH SEE ALSO\ndocs/cli.md, docs/api.md\n", f);
}

static void words(FILE *f, const nsc_cli_opt *opts, int valued)
{
    for (const nsc_cli_opt *o = opts; o->name; o++)
        if (!valued || o->arg)
            fprintf(f, " --%s", o->name);
}

/* The bash completion script: verbs, each verb's options and the global
 * ones, from the tables --help prints; an option's value completes as a file. */
static void completion(FILE *f)
{
    fputs("# bash completion for ncclscope (ncclscope --completion bash)\n_ncclscope() {\n"
          "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} verb= w opts=\n"
          "    local valued=\"", f);
    words(f, global_opts, 1);
    for (size_t i = 0; i < NVERBS; i++)
        words(f, verbs[i].opts, 1);
    fputs(" \"\n    [[ $valued == *\" $prev \"* ]] && return 0\n    local verbs=\"", f);
    for (size_t i = 0; i < NVERBS; i++)
        fprintf(f, "%s%s", i ? " " : "", verbs[i].name);
    fputs("\"\n    for w in \"${COMP_WORDS[@]:1:COMP_CWORD-1}\"; do\n"
          "        [[ \" $verbs \" == *\" $w \"* ]] && { verb=$w; break; }\n    done\n    case $verb in\n", f);
    for (size_t i = 0; i < NVERBS; i++) {
        fprintf(f, "    %s) opts=\"", verbs[i].name);
        words(f, verbs[i].opts, 0);
        fputs("\" ;;\n", f);
    }
    fputs("    esac\n    if [[ $cur == -* ]]; then\n        COMPREPLY=($(compgen -W \"", f);
    words(f, global_opts, 0);
    fputs(" $opts\" -- \"$cur\"))\n    elif [[ -z $verb ]]; then\n"
          "        COMPREPLY=($(compgen -W \"$verbs\" -- \"$cur\"))\n    fi\n}\n"
          "complete -o default -F _ncclscope ncclscope\n", f);
}

static int help(const nsc_cli_args *a)
{
    if (!a->verb || (strcmp(a->verb, "help") == 0 && a->npos == 0)) {
        usage(stdout);
        return NSC_EXIT_OK;
    }
    const char *name = strcmp(a->verb, "help") == 0 ? a->pos[0] : a->verb;
    const verb *v = find_verb(name);
    if (!v) {
        fprintf(stderr, "ncclscope: unknown command '%s' (see ncclscope --help)\n", name);
        return NSC_EXIT_USAGE;
    }
    verb_help(stdout, v);
    return NSC_EXIT_OK;
}

int main(int argc, char **argv)
{
    nsc_cli_args a;
    char err[256];
    if (nsc_cli_parse(argc, argv, global_opts, verb_opts, &a, err, sizeof err) != 0) {
        fprintf(stderr, "ncclscope: %s\n", err);
        return NSC_EXIT_USAGE;
    }
    if (nsc_cli_has(&a, "version")) {
        printf("ncclscope %s\n", NSC_VERSION);
        return NSC_EXIT_OK;
    }
    if (nsc_cli_has(&a, "man")) {
        man_page(stdout);
        return NSC_EXIT_OK;
    }
    if (nsc_cli_get(&a, "completion")) {
        if (strcmp(nsc_cli_get(&a, "completion"), "bash") != 0) {
            fprintf(stderr, "ncclscope: --completion wants bash, got '%s'\n", nsc_cli_get(&a, "completion"));
            return NSC_EXIT_USAGE;
        }
        completion(stdout);
        return NSC_EXIT_OK;
    }
    if (nsc_cli_has(&a, "help") || !a.verb || strcmp(a.verb, "help") == 0) {
        if (!a.verb && !nsc_cli_has(&a, "help")) {
            usage(stderr);
            return NSC_EXIT_USAGE;
        }
        return help(&a);
    }
    if (a.npos > 0) {
        fprintf(stderr, "ncclscope: %s takes no argument '%s' (see ncclscope help %s)\n", a.verb,
                a.pos[0], a.verb);
        return NSC_EXIT_USAGE;
    }
    nsc_cli_ctx c = {.args = &a, .json = nsc_cli_has(&a, "json"), .units.raw = nsc_cli_has(&a, "raw"),
                     .color = nsc_paint_wanted()};
    c.src_opts.collector = nsc_cli_get(&a, "collector");
    c.src_opts.db = nsc_cli_get(&a, "db");
    c.src_opts.token_file = nsc_cli_get(&a, "token-file");
    c.src_opts.ca_file = nsc_cli_get(&a, "ca-file");
    unsigned long long timeout = 10;
    int rc = nsc_cli_u64_opt(&c, "timeout", &timeout);
    c.src_opts.timeout_ms = (int)(timeout > 86400 ? 86400000 : timeout * 1000);
    if (rc == NSC_EXIT_OK)
        rc = find_verb(a.verb)->fn(&c);
    if (rc != NSC_EXIT_OK && c.err[0])
        fprintf(stderr, "ncclscope: %s\n", c.err);
    if (c.src)
        nsc_src_close(c.src);
    if (fflush(stdout) != 0 && rc == NSC_EXIT_OK) {
        fprintf(stderr, "ncclscope: writing output: %s\n", strerror(errno));
        rc = NSC_EXIT_FAIL;
    }
    return rc;
}
