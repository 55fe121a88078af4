/* export.c: timeline records to Perfetto or Chrome JSON traces (see export.h). */
#include "export.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "pb.h"

#define LANE_NAME 48
#define SEQ_ID 1

typedef struct backing {
    uint64_t uuid;
    uint64_t free_at;  /* first time a new slice may start here; UINT64_MAX: open slice */
} backing;

/* A process track (name "") or a lane of one rank with its backing tracks. */
typedef struct lane {
    int used;
    int32_t rank;
    char name[LANE_NAME];
    uint64_t uuid;  /* process: its track; lane: unused (backings have their own) */
    backing *b;
    uint32_t nb, cap;
} lane;

struct nsc_export {
    FILE *out;
    nsc_export_format fmt;
    lane *tab;
    size_t cap, n;
    uint64_t next_uuid;
    nsc_pb pkt, body, sub, ann, frame;  /* scratch, reused for every packet */
    nsc_export_totals t;
    int failed;
    int chrome_first;  /* no event written yet: no comma before the next */
};

static uint64_t hash_lane(int32_t rank, const char *name)
{
    uint64_t h = 1469598103934665603ull ^ (uint32_t)rank;
    h *= 1099511628211ull;
    for (const char *p = name; *p; p++) {
        h ^= (uint8_t)*p;
        h *= 1099511628211ull;
    }
    return h;
}

static int grow_table(nsc_export *x)
{
    size_t cap = x->cap ? x->cap * 2 : 64;
    lane *tab = calloc(cap, sizeof *tab);
    if (!tab)
        return -1;
    for (size_t i = 0; i < x->cap; i++) {
        if (!x->tab[i].used)
            continue;
        size_t j = hash_lane(x->tab[i].rank, x->tab[i].name) & (cap - 1);
        while (tab[j].used)
            j = (j + 1) & (cap - 1);
        tab[j] = x->tab[i];
    }
    free(x->tab);
    x->tab = tab;
    x->cap = cap;
    return 0;
}

/* The lane (rank, name), created if new (*created set). NULL: out of memory.
 * Creating one may move the table: pointers from earlier calls are stale. */
static lane *find_lane(nsc_export *x, int32_t rank, const char *name, int *created)
{
    *created = 0;
    for (int pass = 0; pass < 2; pass++) {
        size_t j = x->cap ? hash_lane(rank, name) & (x->cap - 1) : 0;
        for (; x->cap && x->tab[j].used; j = (j + 1) & (x->cap - 1))
            if (x->tab[j].rank == rank && strcmp(x->tab[j].name, name) == 0)
                return &x->tab[j];
        if (2 * (x->n + 1) <= x->cap) {
            lane *l = &x->tab[j];
            l->used = 1;
            l->rank = rank;
            snprintf(l->name, sizeof l->name, "%s", name);
            x->n++;
            *created = 1;
            return l;
        }
        if (grow_table(x) != 0)
            return NULL;
    }
    return NULL;
}

/* ---- Perfetto ---- */

static void pf_emit(nsc_export *x)
{
    nsc_pb_uint(&x->pkt, NSC_PF_PACKET_SEQ_ID, SEQ_ID);
    nsc_pb_reset(&x->frame);
    nsc_pb_msg(&x->frame, NSC_PF_TRACE_PACKET, &x->pkt);
    if (!nsc_pb_ok(&x->frame) || fwrite(x->frame.data, 1, x->frame.len, x->out) != x->frame.len)
        x->failed = 1;
}

static void pf_process_track(nsc_export *x, uint64_t uuid, int32_t rank, const char *title)
{
    nsc_pb_reset(&x->sub);
    nsc_pb_uint(&x->sub, NSC_PF_PD_PID, (uint64_t)rank + 1);
    nsc_pb_str(&x->sub, NSC_PF_PD_PROCESS_NAME, title);
    nsc_pb_reset(&x->body);
    nsc_pb_uint(&x->body, NSC_PF_TD_UUID, uuid);
    nsc_pb_msg(&x->body, NSC_PF_TD_PROCESS, &x->sub);
    nsc_pb_reset(&x->pkt);
    nsc_pb_msg(&x->pkt, NSC_PF_PACKET_TRACK_DESCRIPTOR, &x->body);
    pf_emit(x);
}

static void pf_lane_track(nsc_export *x, uint64_t uuid, uint64_t parent, const lane *l)
{
    char key[LANE_NAME + 16];
    snprintf(key, sizeof key, "r%" PRId32 "/%s", l->rank, l->name);
    nsc_pb_reset(&x->body);
    nsc_pb_uint(&x->body, NSC_PF_TD_UUID, uuid);
    nsc_pb_uint(&x->body, NSC_PF_TD_PARENT_UUID, parent);
    nsc_pb_str(&x->body, NSC_PF_TD_NAME, l->name);
    nsc_pb_uint(&x->body, NSC_PF_TD_SIBLING_MERGE_BEHAVIOR, NSC_PF_MERGE_BY_SIBLING_MERGE_KEY);
    nsc_pb_str(&x->body, NSC_PF_TD_SIBLING_MERGE_KEY, key);
    nsc_pb_reset(&x->pkt);
    nsc_pb_msg(&x->pkt, NSC_PF_PACKET_TRACK_DESCRIPTOR, &x->body);
    pf_emit(x);
}

/* A debug annotation from one scalar JSON member. */
static void pf_annotation(nsc_export *x, const nsc_json *m)
{
    nsc_pb_reset(&x->ann);
    nsc_pb_str(&x->ann, NSC_PF_DA_NAME, m->key);
    uint64_t u;
    int64_t i;
    double d;
    switch (m->kind) {
    case NSC_JSON_TRUE:
    case NSC_JSON_FALSE:
        nsc_pb_uint(&x->ann, NSC_PF_DA_BOOL, m->kind == NSC_JSON_TRUE);
        break;
    case NSC_JSON_STRING:
        nsc_pb_str(&x->ann, NSC_PF_DA_STRING, m->text);
        break;
    case NSC_JSON_NUMBER:
        if (nsc_json_u64(m, &u) == 0)
            nsc_pb_uint(&x->ann, NSC_PF_DA_UINT, u);
        else if (nsc_json_i64(m, &i) == 0)
            nsc_pb_int(&x->ann, NSC_PF_DA_INT, i);
        else if (nsc_json_double(m, &d) == 0)
            nsc_pb_double(&x->ann, NSC_PF_DA_DOUBLE, d);
        break;
    default:
        return;
    }
    nsc_pb_msg(&x->sub, NSC_PF_TE_DEBUG_ANNOTATIONS, &x->ann);
}

/* ---- Chrome JSON ---- */

static void chrome_sep(nsc_export *x)
{
    fputs(x->chrome_first ? "\n" : ",\n", x->out);
    x->chrome_first = 0;
}

static void chrome_ts(FILE *f, const char *key, uint64_t ns)
{
    fprintf(f, ",\"%s\":%" PRIu64 ".%03u", key, ns / 1000, (unsigned)(ns % 1000));
}

static void chrome_meta(nsc_export *x, const char *what, int32_t rank, const uint64_t *tid,
                        const char *title)
{
    chrome_sep(x);
    fprintf(x->out, "{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%" PRId64, what, (int64_t)rank + 1);
    if (tid)
        fprintf(x->out, ",\"tid\":%" PRIu64, *tid);
    fputs(",\"args\":{\"name\":", x->out);
    nsc_json_write_str(x->out, title);
    fputs("}}", x->out);
}

static void chrome_arg(nsc_export *x, const nsc_json *m, int *first)
{
    if (m->kind == NSC_JSON_OBJECT || m->kind == NSC_JSON_ARRAY || m->kind == NSC_JSON_NULL)
        return;
    fputs(*first ? "" : ",", x->out);
    *first = 0;
    nsc_json_write_str(x->out, m->key);
    fputc(':', x->out);
    if (m->kind == NSC_JSON_STRING)
        nsc_json_write_str(x->out, m->text);
    else if (m->kind == NSC_JSON_NUMBER)
        fputs(m->text, x->out);
    else
        fputs(m->kind == NSC_JSON_TRUE ? "true" : "false", x->out);
}

/* ---- records ---- */

typedef struct slice {
    int32_t rank;
    uint64_t start, end;
    int open;
    const char *end_key;
    const char *type, *name;
    char lane[LANE_NAME];
} slice;

/* The event a record describes; -1 if it is not one. The end is the
 * completion (Coll, P2p: the real end), else the stop. */
static int read_slice(const nsc_json *rec, slice *s)
{
    int64_t rank;
    const char *kind = nsc_json_str(nsc_json_get(rec, "kind"));
    if (rec->kind != NSC_JSON_OBJECT || !kind || strcmp(kind, "event") != 0 ||
        nsc_json_i64(nsc_json_get(rec, "rank"), &rank) != 0 || rank < INT32_MIN || rank > INT32_MAX ||
        nsc_json_u64(nsc_json_get(rec, "start_ns"), &s->start) != 0)
        return -1;
    s->rank = (int32_t)rank;
    s->end_key = "complete_ns";
    if (nsc_json_u64(nsc_json_get(rec, s->end_key), &s->end) != 0) {
        s->end_key = "stop_ns";
        if (nsc_json_u64(nsc_json_get(rec, s->end_key), &s->end) != 0)
            s->end_key = NULL;
    }
    if (s->end_key && s->end < s->start)
        s->end_key = NULL;  /* kept as an argument; the slice stays open */
    s->open = s->end_key == NULL;
    s->type = nsc_json_str(nsc_json_get(rec, "type"));
    if (!s->type)
        s->type = "event";
    s->name = nsc_json_str(nsc_json_get(rec, "func"));
    if (!s->name)
        s->name = s->type;
    int64_t ch;
    if (nsc_json_i64(nsc_json_get(rec, "channel"), &ch) == 0)
        snprintf(s->lane, sizeof s->lane, "%s ch%" PRId64, s->type, ch);
    else
        snprintf(s->lane, sizeof s->lane, "%s", s->type);
    return 0;
}

/* Size in bytes of an NCCL datatype by name ("ncclFloat32"), 0 if unknown. */
static uint64_t datatype_size(const char *dt)
{
    static const struct {
        const char *name;
        unsigned size;
    } sizes[] = {{"Int8", 1},     {"Char", 1},     {"Uint8", 1},    {"Int32", 4},
                 {"Int", 4},      {"Uint32", 4},   {"Int64", 8},    {"Uint64", 8},
                 {"Float16", 2},  {"Half", 2},     {"Float32", 4},  {"Float", 4},
                 {"Float64", 8},  {"Double", 8},   {"Bfloat16", 2}, {"Float8e4m3", 1},
                 {"Float8e5m2", 1}};
    if (!dt)
        return 0;
    if (strncmp(dt, "nccl", 4) == 0)
        dt += 4;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (strcmp(dt, sizes[i].name) == 0)
            return sizes[i].size;
    return 0;
}

/* What the record implies but does not say: bytes of this rank's buffer,
 * and graph_captured from its flags. */
typedef struct derived {
    int has_bytes, graph;
    uint64_t bytes;
} derived;

static void derive(const nsc_json *rec, derived *d)
{
    uint64_t count, size = datatype_size(nsc_json_str(nsc_json_get(rec, "datatype")));
    d->has_bytes = size && nsc_json_u64(nsc_json_get(rec, "count"), &count) == 0 &&
                   !nsc_json_get(rec, "bytes");
    d->bytes = d->has_bytes ? count * size : 0;
    d->graph = 0;
    const nsc_json *flags = nsc_json_get(rec, "flags");
    if (flags && flags->kind == NSC_JSON_ARRAY)
        for (const nsc_json *f = nsc_json_first(flags); f; f = nsc_json_next(flags, f))
            d->graph |= f->kind == NSC_JSON_STRING && strcmp(f->text, "graph") == 0;
}

/* The process track of a rank, created (with a plain title) if the header
 * did not name it. */
static lane *process_track(nsc_export *x, int32_t rank, const char *title)
{
    int created;
    lane *p = find_lane(x, rank, "", &created);
    if (!p || !created)
        return p;
    p->uuid = x->next_uuid++;
    x->t.tracks++;
    char plain[32];
    if (!title) {
        snprintf(plain, sizeof plain, "rank %" PRId32, rank);
        title = plain;
    }
    if (x->fmt == NSC_EXPORT_PERFETTO)
        pf_process_track(x, p->uuid, rank, title);
    else
        chrome_meta(x, "process_name", rank, NULL, title);
    return p;
}

/* The header names every rank: "rank 3 node-a pid 4242 gpu 3". */
static int header_ranks(nsc_export *x, const nsc_json *hdr)
{
    const nsc_json *ranks = nsc_json_get(hdr, "ranks");
    if (!ranks || ranks->kind != NSC_JSON_ARRAY)
        return 0;
    for (const nsc_json *r = nsc_json_first(ranks); r; r = nsc_json_next(ranks, r)) {
        int64_t rank, pid, gpu;
        if (nsc_json_i64(nsc_json_get(r, "rank"), &rank) != 0 || rank < INT32_MIN || rank > INT32_MAX)
            continue;
        char title[160];
        const char *host = nsc_json_str(nsc_json_get(r, "host"));
        int n = snprintf(title, sizeof title, "rank %" PRId64, rank);
        if (host)
            n += snprintf(title + n, sizeof title - (size_t)n, " %.64s", host);
        if (nsc_json_i64(nsc_json_get(r, "pid"), &pid) == 0)
            n += snprintf(title + n, sizeof title - (size_t)n, " pid %" PRId64, pid);
        if (nsc_json_i64(nsc_json_get(r, "gpu"), &gpu) == 0 && gpu >= 0)
            snprintf(title + n, sizeof title - (size_t)n, " gpu %" PRId64, gpu);
        if (!process_track(x, (int32_t)rank, title))
            return -1;
    }
    return 0;
}

/* A backing track of the lane free at s->start (a new one if all are busy). */
static backing *backing_for(nsc_export *x, lane *proc, lane *l, const slice *s)
{
    for (uint32_t i = 0; i < l->nb; i++)
        if (l->b[i].free_at <= s->start)
            return &l->b[i];
    if (l->nb == l->cap) {
        uint32_t cap = l->cap ? l->cap * 2 : 2;
        backing *b = realloc(l->b, cap * sizeof *b);
        if (!b)
            return NULL;
        l->b = b;
        l->cap = cap;
    }
    backing *b = &l->b[l->nb++];
    b->uuid = x->next_uuid++;
    b->free_at = 0;
    x->t.tracks++;
    if (x->fmt == NSC_EXPORT_PERFETTO)
        pf_lane_track(x, b->uuid, proc->uuid, l);
    else
        chrome_meta(x, "thread_name", l->rank, &b->uuid, l->name);
    return b;
}

static int is_structural(const nsc_json *m, const slice *s)
{
    return strcmp(m->key, "kind") == 0 || strcmp(m->key, "rank") == 0 ||
           strcmp(m->key, "start_ns") == 0 || (s->end_key && strcmp(m->key, s->end_key) == 0);
}

static void pf_annotate_derived(nsc_export *x, const derived *d)
{
    if (d->has_bytes) {
        nsc_pb_reset(&x->ann);
        nsc_pb_str(&x->ann, NSC_PF_DA_NAME, "bytes");
        nsc_pb_uint(&x->ann, NSC_PF_DA_UINT, d->bytes);
        nsc_pb_msg(&x->sub, NSC_PF_TE_DEBUG_ANNOTATIONS, &x->ann);
    }
    nsc_pb_reset(&x->ann);
    nsc_pb_str(&x->ann, NSC_PF_DA_NAME, "graph_captured");
    nsc_pb_uint(&x->ann, NSC_PF_DA_BOOL, (uint64_t)d->graph);
    nsc_pb_msg(&x->sub, NSC_PF_TE_DEBUG_ANNOTATIONS, &x->ann);
}

static void pf_slice(nsc_export *x, const nsc_json *rec, const slice *s, uint64_t track)
{
    derived d;
    derive(rec, &d);
    nsc_pb_reset(&x->sub);
    nsc_pb_uint(&x->sub, NSC_PF_TE_TYPE, NSC_PF_TE_SLICE_BEGIN);
    nsc_pb_uint(&x->sub, NSC_PF_TE_TRACK_UUID, track);
    nsc_pb_str(&x->sub, NSC_PF_TE_NAME, s->name);
    for (const nsc_json *m = nsc_json_first(rec); m; m = nsc_json_next(rec, m))
        if (!is_structural(m, s))
            pf_annotation(x, m);
    pf_annotate_derived(x, &d);
    nsc_pb_reset(&x->pkt);
    nsc_pb_uint(&x->pkt, NSC_PF_PACKET_TIMESTAMP, s->start);
    nsc_pb_msg(&x->pkt, NSC_PF_PACKET_TRACK_EVENT, &x->sub);
    pf_emit(x);
    if (s->open)
        return;
    nsc_pb_reset(&x->sub);
    nsc_pb_uint(&x->sub, NSC_PF_TE_TYPE, NSC_PF_TE_SLICE_END);
    nsc_pb_uint(&x->sub, NSC_PF_TE_TRACK_UUID, track);
    nsc_pb_reset(&x->pkt);
    nsc_pb_uint(&x->pkt, NSC_PF_PACKET_TIMESTAMP, s->end);
    nsc_pb_msg(&x->pkt, NSC_PF_PACKET_TRACK_EVENT, &x->sub);
    pf_emit(x);
}

static void chrome_slice(nsc_export *x, const nsc_json *rec, const slice *s, uint64_t tid)
{
    chrome_sep(x);
    fputs("{\"name\":", x->out);
    nsc_json_write_str(x->out, s->name);
    fputs(",\"cat\":", x->out);
    nsc_json_write_str(x->out, s->type);
    fprintf(x->out, ",\"ph\":\"%s\",\"pid\":%" PRId64 ",\"tid\":%" PRIu64, s->open ? "B" : "X",
            (int64_t)s->rank + 1, tid);
    chrome_ts(x->out, "ts", s->start);
    if (!s->open)
        chrome_ts(x->out, "dur", s->end - s->start);
    fputs(",\"args\":{", x->out);
    int first = 1;
    derived d;
    derive(rec, &d);
    for (const nsc_json *m = nsc_json_first(rec); m; m = nsc_json_next(rec, m))
        if (!is_structural(m, s))
            chrome_arg(x, m, &first);
    if (d.has_bytes)
        fprintf(x->out, "%s\"bytes\":%" PRIu64, first ? "" : ",", d.bytes);
    fprintf(x->out, "%s\"graph_captured\":%s}}", first && !d.has_bytes ? "" : ",",
            d.graph ? "true" : "false");
}

nsc_export *nsc_export_new(FILE *out, nsc_export_format fmt)
{
    nsc_export *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->out = out;
    x->fmt = fmt;
    x->next_uuid = 1;
    x->chrome_first = 1;
    if (fmt == NSC_EXPORT_CHROME)
        fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", out);
    return x;
}

int nsc_export_record(nsc_export *x, const nsc_json *rec)
{
    slice s;
    x->t.records++;
    const char *kind = nsc_json_str(nsc_json_get(rec, "kind"));
    if (kind && strcmp(kind, "header") == 0)
        return header_ranks(x, rec);
    if (read_slice(rec, &s) != 0) {
        x->t.skipped++;
        return 0;
    }
    lane *proc = process_track(x, s.rank, NULL);
    int created;
    lane *l = proc ? find_lane(x, s.rank, s.lane, &created) : NULL;
    /* find_lane may have grown the table: look the process up again. */
    proc = l ? find_lane(x, s.rank, "", &created) : NULL;
    backing *b = proc ? backing_for(x, proc, l, &s) : NULL;
    if (!b)
        return -1;
    b->free_at = s.open ? UINT64_MAX : s.end + 1;
    if (x->fmt == NSC_EXPORT_PERFETTO)
        pf_slice(x, rec, &s, b->uuid);
    else
        chrome_slice(x, rec, &s, b->uuid);
    if (s.open)
        x->t.open++;
    else
        x->t.slices++;
    return x->failed || ferror(x->out) ? -1 : 0;
}

int nsc_export_finish(nsc_export *x, nsc_export_totals *totals)
{
    if (x->fmt == NSC_EXPORT_CHROME)
        fputs("\n]}\n", x->out);
    int rc = x->failed || ferror(x->out) || fflush(x->out) != 0 ? -1 : 0;
    if (totals)
        *totals = x->t;
    for (size_t i = 0; i < x->cap; i++)
        free(x->tab[i].b);
    free(x->tab);
    nsc_pb_free(&x->pkt);
    nsc_pb_free(&x->body);
    nsc_pb_free(&x->sub);
    nsc_pb_free(&x->ann);
    nsc_pb_free(&x->frame);
    free(x);
    return rc;
}
