/* timeline.c: the timeline and export verbs.
 *
 * Both read the timeline endpoint as NDJSON, one record per event, and never
 * hold more than one record: the text view keeps a fixed number of cells per
 * rank (the window widens by doubling as later or earlier events arrive),
 * CSV writes a line per record, export hands each record to export.c.
 * None of them shows an event's states, so they ask for none (states=0).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli.h"
#include "export.h"
#include "fields.h"
#include "table.h"

#define MAX_RANKS (1 << 20)

/* ---- text lanes ---- */

typedef struct cell {
    uint64_t cover;  /* ns of the dominant event inside the cell */
    char ch;
} cell;

typedef struct lanes {
    size_t width;
    uint64_t lo, res;  /* cell i covers [lo + i*res, lo + (i+1)*res) */
    int started;
    cell *rows;        /* nranks * width */
    size_t nranks;
    uint64_t events, open;
    nsc_fields fields;
    nsc_cli_ctx *c;
} lanes;

static const char *const lane_fields[] = {"type", "func", "rank", "start_ns", "complete_ns", "stop_ns", "kind"};
enum { L_TYPE, L_FUNC, L_RANK, L_START, L_COMPLETE, L_STOP, L_KIND, NLANE_FIELDS };

static char func_char(const char *func)
{
    static const struct {
        const char *name;
        char ch;
    } map[] = {{"AllReduce", 'A'},     {"AllGather", 'G'}, {"ReduceScatter", 'S'},
               {"Broadcast", 'B'},     {"Reduce", 'R'},    {"Send", '>'},
               {"Recv", '<'},          {"AlltoAll", 'X'}};
    for (size_t i = 0; func && i < sizeof map / sizeof map[0]; i++)
        if (strcasecmp(func, map[i].name) == 0)  /* NCCL spells AlltoAll */
            return map[i].ch;
    return '#';
}

static void merge_cell(cell *into, const cell *from)
{
    if (from->cover > into->cover)
        *into = *from;
}

/* Double the resolution until [s, e) fits, extending right, or left when s
 * is before the window. */
static void widen(lanes *l, uint64_t s, uint64_t e)
{
    while (s < l->lo || e > l->lo + l->width * l->res) {
        int left = s < l->lo;
        size_t half = l->width / 2;
        for (size_t r = 0; r < l->nranks; r++) {
            cell *row = l->rows + r * l->width;
            cell tmp[l->width];
            memset(tmp, 0, sizeof tmp);
            for (size_t i = 0; i < l->width; i++)
                merge_cell(&tmp[(left ? half : 0) + i / 2], &row[i]);
            memcpy(row, tmp, sizeof tmp);
        }
        if (left)
            l->lo = l->lo > half * 2 * l->res ? l->lo - half * 2 * l->res : 0;
        l->res *= 2;
    }
}

/* The end of an event: its completion, else its stop. -1: neither. */
static int event_end(const nsc_json *const *f, uint64_t *e)
{
    if (nsc_json_u64(f[L_COMPLETE], e) == 0)
        return 0;
    return nsc_json_u64(f[L_STOP], e);
}

static int lane_record(void *arg, const nsc_json *rec, const char *line, size_t len)
{
    (void)line, (void)len;
    lanes *l = arg;
    int64_t rank;
    uint64_t s, e;
    const nsc_json *f[NLANE_FIELDS];
    nsc_fields_pick(&l->fields, rec, f);
    const char *kind = nsc_json_str(f[L_KIND]);
    if (kind && strcmp(kind, "header") == 0) {
        nsc_units_wall(&l->c->units, rec);
        printf("job %s, comm %s (%s)\n", nsc_json_str_or(rec, "job", "?"), nsc_json_str_or(rec, "comm", "?"),
               nsc_json_str_or(rec, "name", ""));
        return 0;
    }
    const char *type = nsc_json_str(f[L_TYPE]);
    const char *func = nsc_json_str(f[L_FUNC]);
    if (!type || (strcmp(type, "Coll") != 0 && strcmp(type, "P2p") != 0) ||
        nsc_json_i64(f[L_RANK], &rank) != 0 || rank < 0 || rank >= MAX_RANKS ||
        nsc_json_u64(f[L_START], &s) != 0)
        return 0;  /* only collectives and p2p operations are drawn */
    int open = event_end(f, &e) != 0;
    if (open || e <= s)
        e = s + 1;
    l->events++;
    l->open += open;
    if ((size_t)rank >= l->nranks) {
        cell *rows = realloc(l->rows, (size_t)(rank + 1) * l->width * sizeof *rows);
        if (!rows) {
            snprintf(l->c->err, sizeof l->c->err, "out of memory");
            return 1;
        }
        memset(rows + l->nranks * l->width, 0, ((size_t)rank + 1 - l->nranks) * l->width * sizeof *rows);
        l->rows = rows;
        l->nranks = (size_t)rank + 1;
    }
    if (!l->started) {
        l->lo = s;
        l->res = 1;
        l->started = 1;
    }
    widen(l, s, e);
    cell *row = l->rows + (size_t)rank * l->width;
    for (size_t i = (s - l->lo) / l->res; i < l->width && l->lo + i * l->res < e; i++) {
        uint64_t a = l->lo + i * l->res, b = a + l->res;
        uint64_t cover = (e < b ? e : b) - (s > a ? s : a);
        cell n = {cover ? cover : 1, open ? '!' : func_char(func)};
        merge_cell(&row[i], &n);
    }
    return 0;
}

static void print_lanes(const lanes *l)
{
    if (l->events == 0) {
        printf("no collectives in this window\n");
        return;
    }
    char t0[48], res[32];
    if (l->c->units.raw) {
        snprintf(t0, sizeof t0, "%" PRIu64 " ns", l->lo);
        snprintf(res, sizeof res, "%" PRIu64 " ns", l->res);
    } else {
        nsc_fmt_unit(&l->c->units, NSC_UNIT_INSTANT, (double)l->lo, t0, sizeof t0);
        nsc_fmt_unit(&l->c->units, NSC_UNIT_NS, (double)l->res, res, sizeof res);
    }
    printf("t0 %s, %s per column, %zu columns\n", t0, res, l->width);
    for (size_t r = 0; r < l->nranks; r++) {
        size_t used = 0;
        while (used < l->width && !l->rows[r * l->width + used].ch)
            used++;
        if (used == l->width)
            continue;  /* a rank with no operation here (not asked for, or idle) */
        printf("rank %4zu |", r);
        for (size_t i = 0; i < l->width; i++) {
            char ch = l->rows[r * l->width + i].ch;
            putchar(ch ? ch : ' ');
        }
        printf("|\n");
    }
    printf("A AllReduce  G AllGather  S ReduceScatter  B Broadcast  R Reduce  > Send  < Recv"
           "  X AllToAll  # other  ! in flight\n%" PRIu64 " operations, %" PRIu64 " in flight\n",
           l->events, l->open);
}

/* ---- CSV ---- */

/* The columns, then "kind", which picks the lines that are events. */
static const char *const csv_cols[] = {
    "rank",  "type",     "pid",   "tid",      "id",      "parent",      "channel",
    "func",  "seq",      "datatype", "count", "algo",    "proto",       "peer",
    "start_ns", "stop_ns", "complete_ns", "gpu_start_ns", "gpu_stop_ns", "err_ns", "flags", "kind"};
#define NCSV (sizeof csv_cols / sizeof csv_cols[0] - 1)

static void csv_field(const nsc_json *v)
{
    if (v && v->kind == NSC_JSON_ARRAY) {  /* flags: "graph|open" */
        for (const nsc_json *e = nsc_json_first(v); e; e = nsc_json_next(v, e))
            if (e->kind == NSC_JSON_STRING)
                printf("%s%s", e == nsc_json_first(v) ? "" : "|", e->text);
        return;
    }
    if (!v || v->kind == NSC_JSON_NULL || v->kind == NSC_JSON_OBJECT)
        return;
    if (v->kind == NSC_JSON_TRUE || v->kind == NSC_JSON_FALSE) {
        fputs(v->kind == NSC_JSON_TRUE ? "true" : "false", stdout);
        return;
    }
    if (v->kind == NSC_JSON_NUMBER || !strpbrk(v->text, ",\"\n\r")) {
        fputs(v->text, stdout);
        return;
    }
    putchar('"');
    for (const char *p = v->text; *p; p++) {
        if (*p == '"')
            putchar('"');
        putchar(*p);
    }
    putchar('"');
}

static int csv_record(void *arg, const nsc_json *rec, const char *line, size_t len)
{
    (void)line, (void)len;
    const nsc_json *f[NCSV + 1];
    nsc_fields_pick(arg, rec, f);
    const char *kind = nsc_json_str(f[NCSV]);
    if (!kind || strcmp(kind, "event") != 0)
        return 0;
    for (size_t i = 0; i < NCSV; i++) {
        if (i)
            putchar(',');
        csv_field(f[i]);
    }
    putchar('\n');
    return ferror(stdout) ? 1 : 0;
}

/* The views below show no states: the source need not even decode them. */
static int no_states(nsc_cli_ctx *c, char *qs, size_t cap)
{
    if (nsc_qs_add(qs, cap, "states", "0") == 0)
        return NSC_EXIT_OK;
    snprintf(c->err, sizeof c->err, "query too long");
    return NSC_EXIT_USAGE;
}

int nsc_verb_timeline(nsc_cli_ctx *c)
{
    char qs[2048];
    int rc = nsc_cli_query(c, qs, sizeof qs);
    if (rc)
        return rc;
    if (c->json)
        return nsc_cli_fetch_pages(c, "timeline", qs, nsc_cli_print_line, NULL);
    if ((rc = no_states(c, qs, sizeof qs)))
        return rc;
    if (nsc_cli_has(c->args, "csv")) {
        nsc_fields cols;
        nsc_fields_init(&cols, csv_cols, NCSV + 1);
        for (size_t i = 0; i < NCSV; i++)
            printf("%s%s", i ? "," : "", csv_cols[i]);
        putchar('\n');
        return nsc_cli_fetch_pages(c, "timeline", qs, csv_record, &cols);
    }
    unsigned long long width = 100;
    if ((rc = nsc_cli_u64_opt(c, "width", &width)))
        return rc;
    if (width < 8 || width > 4096 || width % 2) {
        snprintf(c->err, sizeof c->err, "--width wants an even number from 8 to 4096");
        return NSC_EXIT_USAGE;
    }
    lanes l = {.width = (size_t)width, .c = c};
    nsc_fields_init(&l.fields, lane_fields, NLANE_FIELDS);
    rc = nsc_cli_fetch_pages(c, "timeline", qs, lane_record, &l);
    if (rc == NSC_EXIT_OK)
        print_lanes(&l);
    free(l.rows);
    return rc;
}

/* ---- export ---- */

typedef struct exporting {
    nsc_export *x;
    nsc_cli_ctx *c;
} exporting;

static int export_record(void *arg, const nsc_json *rec, const char *line, size_t len)
{
    (void)line, (void)len;
    exporting *e = arg;
    if (nsc_export_record(e->x, rec) == 0)
        return 0;
    snprintf(e->c->err, sizeof e->c->err, "writing the trace: %s", strerror(errno ? errno : EIO));
    return 1;
}

/* Timeline NDJSON from a file or stdin, through the same reader as HTTP bodies. */
static int export_from_file(nsc_cli_ctx *c, const char *path, exporting *e)
{
    FILE *in = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!in) {
        snprintf(c->err, sizeof c->err, "cannot open %s: %s", path, strerror(errno));
        return NSC_EXIT_FAIL;
    }
    nsc_ndjson r;
    nsc_ndjson_init(&r, export_record, e);
    char buf[1 << 16];
    size_t n;
    int rc = 0;
    while (rc == 0 && (n = fread(buf, 1, sizeof buf, in)) > 0)
        rc = nsc_ndjson_feed(&r, buf, n);
    if (rc == 0 && ferror(in)) {
        snprintf(c->err, sizeof c->err, "reading %s: %s", path, strerror(errno));
        rc = 1;
    } else if (rc == 0)
        rc = nsc_ndjson_end(&r);
    if (rc && r.err[0])
        snprintf(c->err, sizeof c->err, "%s: %s", path, r.err);
    nsc_ndjson_free(&r);
    if (in != stdin)
        fclose(in);
    return rc ? NSC_EXIT_FAIL : NSC_EXIT_OK;
}

static int export_format(nsc_cli_ctx *c, nsc_export_format *fmt)
{
    const char *f = nsc_cli_get(c->args, "format");
    if (!f || strcmp(f, "perfetto") == 0)
        *fmt = NSC_EXPORT_PERFETTO;
    else if (strcmp(f, "chrome") == 0)
        *fmt = NSC_EXPORT_CHROME;
    else {
        snprintf(c->err, sizeof c->err, "--format wants perfetto or chrome, got '%s'", f);
        return NSC_EXIT_USAGE;
    }
    return NSC_EXIT_OK;
}

int nsc_verb_export(nsc_cli_ctx *c)
{
    nsc_export_format fmt;
    char qs[2048];
    const char *out = nsc_cli_get(c->args, "output"), *input = nsc_cli_get(c->args, "input");
    int rc = export_format(c, &fmt);
    if (rc)
        return rc;
    if (!out) {
        snprintf(c->err, sizeof c->err, "export needs -o FILE ('-' for stdout)");
        return NSC_EXIT_USAGE;
    }
    if (!input && ((rc = nsc_cli_query(c, qs, sizeof qs)) ||
                   (rc = no_states(c, qs, sizeof qs))))
        return rc;
    int to_stdout = strcmp(out, "-") == 0;
    if (to_stdout && fmt == NSC_EXPORT_PERFETTO && isatty(STDOUT_FILENO)) {
        snprintf(c->err, sizeof c->err, "not writing a binary trace to a terminal; use -o FILE");
        return NSC_EXIT_USAGE;
    }
    FILE *f = to_stdout ? stdout : fopen(out, "wb");
    if (!f) {
        snprintf(c->err, sizeof c->err, "cannot write %s: %s", out, strerror(errno));
        return NSC_EXIT_FAIL;
    }
    exporting e = {nsc_export_new(f, fmt), c};
    if (!e.x) {
        snprintf(c->err, sizeof c->err, "out of memory");
        rc = NSC_EXIT_FAIL;
    } else {
        rc = input ? export_from_file(c, input, &e)
                   : nsc_cli_fetch_pages(c, "timeline", qs, export_record, &e);
        nsc_export_totals t;
        if (nsc_export_finish(e.x, &t) != 0 && rc == NSC_EXIT_OK) {
            snprintf(c->err, sizeof c->err, "writing %s: %s", out, strerror(errno ? errno : EIO));
            rc = NSC_EXIT_FAIL;
        }
        if (rc == NSC_EXIT_OK && !to_stdout)
            fprintf(stderr, "ncclscope: wrote %s: %" PRIu64 " slices, %" PRIu64 " in flight, %" PRIu64
                            " tracks (%" PRIu64 " records, %" PRIu64 " not events)\n",
                    out, t.slices, t.open, t.tracks, t.records, t.skipped);
    }
    if (!to_stdout && fclose(f) != 0 && rc == NSC_EXIT_OK) {
        snprintf(c->err, sizeof c->err, "writing %s: %s", out, strerror(errno));
        rc = NSC_EXIT_FAIL;
    }
    return rc;
}
