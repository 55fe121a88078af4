/* export.c: timeline records to Perfetto or Chrome JSON traces (see export.h). */
#include "export.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "busbw.h"
#include "fields.h"
#include "fnv.h"
#include "grow.h"
#include "pb.h"

#define LANE_NAME 48
#define SEQ_ID 1
#define FLUSH_AT (256u << 10)  /* output gathered before one write */

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
    uint32_t nb;
    size_t cap;
} lane;

/* The members a record is read by (fields.h): names and their indexes. */
static const char *const field_names[] = {"kind", "rank", "start_ns", "complete_ns", "stop_ns", "type",
                                          "func", "channel", "datatype", "count", "bytes", "flags"};
enum { F_KIND, F_RANK, F_START, F_COMPLETE, F_STOP, F_TYPE, F_FUNC, F_CHANNEL, F_DATATYPE, F_COUNT,
       F_BYTES, F_FLAGS, NFIELDS };

struct nsc_export {
    FILE *out;
    nsc_fields fields;
    nsc_export_format fmt;
    lane *tab;
    size_t cap, n;
    uint64_t next_uuid;
    nsc_pb pkt, body, sub, ann;  /* scratch, reused for every packet */
    nsc_pb outbuf;               /* the file's next bytes, written at FLUSH_AT */
    nsc_export_totals t;
    int failed;
    int chrome_first;  /* no event written yet: no comma before the next */
    char *meta;        /* Chrome: the header's scalar members, JSON, for "metadata" */
    size_t meta_len;
};

static uint64_t hash_lane(int32_t rank, const char *name)
{
    /* its own start, not FNV's offset basis: the track ids of the traces
     * written so far stay what they were */
    uint64_t h = (1469598103934665603ull ^ (uint32_t)rank) * NSC_FNV1A_PRIME;
    return nsc_fnv1a(h, name, strlen(name));
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

/* ---- output ---- */

static void flush(nsc_export *x)
{
    if (!nsc_pb_ok(&x->outbuf) || fwrite(x->outbuf.data, 1, x->outbuf.len, x->out) != x->outbuf.len)
        x->failed = 1;
    nsc_pb_reset(&x->outbuf);
}

static void put(nsc_export *x, const char *s, size_t n) { nsc_pb_raw(&x->outbuf, s, n); }

static void put_s(nsc_export *x, const char *s) { put(x, s, strlen(s)); }

static void put_u64(nsc_export *x, uint64_t v)
{
    char d[20];
    size_t i = sizeof d;
    do
        d[--i] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    put(x, d + i, sizeof d - i);
}

static void put_i64(nsc_export *x, int64_t v)
{
    if (v < 0)
        put(x, "-", 1);
    put_u64(x, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
}

/* s as a JSON string literal. Strings that need no escape (all the API
 * writes) are copied; the others take json.h's writer, after what is
 * gathered so far. */
static void put_str(nsc_export *x, const char *s)
{
    size_t n = 0;
    while ((unsigned char)s[n] >= 0x20 && s[n] != '"' && s[n] != '\\')
        n++;
    if (s[n]) {
        flush(x);
        nsc_json_write_str(x->out, s);
        return;
    }
    put(x, "\"", 1);
    put(x, s, n);
    put(x, "\"", 1);
}

/* ---- Perfetto ---- */

static void pf_emit(nsc_export *x)
{
    nsc_pb_uint(&x->pkt, NSC_PF_PACKET_SEQ_ID, SEQ_ID);
    nsc_pb_msg(&x->outbuf, NSC_PF_TRACE_PACKET, &x->pkt);
    if (x->outbuf.len >= FLUSH_AT)
        flush(x);
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

/* Events are separated by ",\n"; an event that fills the buffer writes it. */
static void chrome_sep(nsc_export *x)
{
    if (x->outbuf.len >= FLUSH_AT)
        flush(x);
    put_s(x, x->chrome_first ? "\n" : ",\n");
    x->chrome_first = 0;
}

/* ,"key":us.fff (microseconds with the nanoseconds as three decimals) */
static void chrome_ts(nsc_export *x, const char *key, uint64_t ns)
{
    char frac[4] = {(char)('0' + ns / 100 % 10), (char)('0' + ns / 10 % 10), (char)('0' + ns % 10), 0};
    put(x, ",\"", 2);
    put_s(x, key);
    put(x, "\":", 2);
    put_u64(x, ns / 1000);
    put(x, ".", 1);
    put(x, frac, 3);
}

static void chrome_meta(nsc_export *x, const char *what, int32_t rank, const uint64_t *tid,
                        const char *title)
{
    chrome_sep(x);
    put_s(x, "{\"ph\":\"M\",\"name\":\"");
    put_s(x, what);
    put_s(x, "\",\"pid\":");
    put_i64(x, (int64_t)rank + 1);
    if (tid) {
        put_s(x, ",\"tid\":");
        put_u64(x, *tid);
    }
    put_s(x, ",\"args\":{\"name\":");
    put_str(x, title);
    put_s(x, "}}");
}

static void chrome_arg(nsc_export *x, const nsc_json *m, int *first)
{
    if (m->kind == NSC_JSON_OBJECT || m->kind == NSC_JSON_ARRAY || m->kind == NSC_JSON_NULL)
        return;
    put_s(x, *first ? "" : ",");
    *first = 0;
    put_str(x, m->key);
    put(x, ":", 1);
    if (m->kind == NSC_JSON_STRING)
        put_str(x, m->text);
    else if (m->kind == NSC_JSON_NUMBER)
        put(x, m->text, m->count);
    else
        put_s(x, m->kind == NSC_JSON_TRUE ? "true" : "false");
}

/* ---- records ---- */

typedef struct slice {
    int32_t rank;
    uint64_t start, end;
    int open;
    int end_field;  /* F_COMPLETE or F_STOP: the member that ended it; -1: open */
    const char *type, *name;
    char lane[LANE_NAME];
} slice;

/* The event a record describes; -1 if it is not one. The end is the
 * completion (Coll, P2p: the real end), else the stop. */
static int read_slice(const nsc_json *const *f, slice *s)
{
    int64_t rank;
    const char *kind = nsc_json_str(f[F_KIND]);
    if (!kind || strcmp(kind, "event") != 0 || nsc_json_i64(f[F_RANK], &rank) != 0 ||
        rank < INT32_MIN || rank > INT32_MAX || nsc_json_u64(f[F_START], &s->start) != 0)
        return -1;
    s->rank = (int32_t)rank;
    s->end_field = F_COMPLETE;
    if (nsc_json_u64(f[F_COMPLETE], &s->end) != 0) {
        s->end_field = F_STOP;
        if (nsc_json_u64(f[F_STOP], &s->end) != 0)
            s->end_field = -1;
    }
    if (s->end_field >= 0 && s->end < s->start)
        s->end_field = -1;  /* kept as an argument; the slice stays open */
    s->open = s->end_field < 0;
    s->type = nsc_json_str(f[F_TYPE]);
    if (!s->type)
        s->type = "event";
    s->name = nsc_json_str(f[F_FUNC]);
    if (!s->name)
        s->name = s->type;
    int64_t ch;
    if (nsc_json_i64(f[F_CHANNEL], &ch) == 0)
        snprintf(s->lane, sizeof s->lane, "%s ch%" PRId64, s->type, ch);
    else
        snprintf(s->lane, sizeof s->lane, "%s", s->type);
    return 0;
}

/* What the record implies but does not say: bytes of this rank's buffer,
 * and graph_captured from its flags. */
typedef struct derived {
    int has_bytes, graph;
    uint64_t bytes;
} derived;

static void derive(const nsc_json *const *f, derived *d)
{
    uint64_t count, size = nsc_dtype_size(nsc_json_str(f[F_DATATYPE]));
    d->has_bytes = size && nsc_json_u64(f[F_COUNT], &count) == 0 && !f[F_BYTES];
    d->bytes = d->has_bytes ? count * size : 0;
    d->graph = 0;
    const nsc_json *flags = f[F_FLAGS];
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

/* Chrome: the header's scalar members (job, comm, name, the window in ns
 * and in UTC, the wall clock: docs/api.md) kept for the trace's
 * "metadata", as the API wrote them. */
static int keep_meta(nsc_export *x, const nsc_json *hdr)
{
    free(x->meta);
    x->meta = NULL;
    FILE *m = open_memstream(&x->meta, &x->meta_len);
    if (!m)
        return -1;
    int n = 0;
    for (const nsc_json *v = nsc_json_first(hdr); v; v = nsc_json_next(hdr, v)) {
        if (v->kind == NSC_JSON_OBJECT || v->kind == NSC_JSON_ARRAY || strcmp(v->key, "kind") == 0)
            continue;
        fprintf(m, "%s\"%.*s\":", n++ ? "," : "", (int)v->key_len, v->key);
        if (v->kind == NSC_JSON_STRING)
            nsc_json_write_str(m, v->text);
        else if (v->kind == NSC_JSON_NUMBER)
            fputs(v->text, m);
        else
            fputs(v->kind == NSC_JSON_NULL ? "null" : v->kind == NSC_JSON_TRUE ? "true" : "false", m);
    }
    return fclose(m) ? -1 : 0;
}

/* The header names every rank: "rank 3 node-a pid 4242 gpu 3". */
static int header_ranks(nsc_export *x, const nsc_json *hdr)
{
    if (x->fmt == NSC_EXPORT_CHROME && keep_meta(x, hdr))
        return -1;
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
    if (nsc_grow(&l->b, l->nb, &l->cap, sizeof *l->b, 2))
        return NULL;
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

static int is_structural(const nsc_export *x, const nsc_json *m, const slice *s)
{
    int id = nsc_fields_id(&x->fields, m);
    return id == F_KIND || id == F_RANK || id == F_START || (id >= 0 && id == s->end_field);
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

static void pf_slice(nsc_export *x, const nsc_json *rec, const nsc_json *const *f, const slice *s,
                     uint64_t track)
{
    derived d;
    derive(f, &d);
    nsc_pb_reset(&x->sub);
    nsc_pb_uint(&x->sub, NSC_PF_TE_TYPE, NSC_PF_TE_SLICE_BEGIN);
    nsc_pb_uint(&x->sub, NSC_PF_TE_TRACK_UUID, track);
    nsc_pb_str(&x->sub, NSC_PF_TE_NAME, s->name);
    for (const nsc_json *m = nsc_json_first(rec); m; m = nsc_json_next(rec, m))
        if (!is_structural(x, m, s))
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

static void chrome_slice(nsc_export *x, const nsc_json *rec, const nsc_json *const *f, const slice *s,
                         uint64_t tid)
{
    chrome_sep(x);
    put_s(x, "{\"name\":");
    put_str(x, s->name);
    put_s(x, ",\"cat\":");
    put_str(x, s->type);
    put_s(x, s->open ? ",\"ph\":\"B\",\"pid\":" : ",\"ph\":\"X\",\"pid\":");
    put_i64(x, (int64_t)s->rank + 1);
    put_s(x, ",\"tid\":");
    put_u64(x, tid);
    chrome_ts(x, "ts", s->start);
    if (!s->open)
        chrome_ts(x, "dur", s->end - s->start);
    put_s(x, ",\"args\":{");
    int first = 1;
    derived d;
    derive(f, &d);
    for (const nsc_json *m = nsc_json_first(rec); m; m = nsc_json_next(rec, m))
        if (!is_structural(x, m, s))
            chrome_arg(x, m, &first);
    if (d.has_bytes) {
        put_s(x, first ? "\"bytes\":" : ",\"bytes\":");
        put_u64(x, d.bytes);
    }
    put_s(x, first && !d.has_bytes ? "" : ",");
    put_s(x, d.graph ? "\"graph_captured\":true}}" : "\"graph_captured\":false}}");
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
    nsc_fields_init(&x->fields, field_names, NFIELDS);
    if (fmt == NSC_EXPORT_CHROME)
        put_s(x, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
    return x;
}

int nsc_export_record(nsc_export *x, const nsc_json *rec)
{
    slice s;
    const nsc_json *f[NFIELDS];
    x->t.records++;
    nsc_fields_pick(&x->fields, rec, f);
    const char *kind = nsc_json_str(f[F_KIND]);
    if (kind && strcmp(kind, "header") == 0)
        return header_ranks(x, rec);
    if (read_slice(f, &s) != 0) {
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
        pf_slice(x, rec, f, &s, b->uuid);
    else
        chrome_slice(x, rec, f, &s, b->uuid);
    if (s.open)
        x->t.open++;
    else
        x->t.slices++;
    return x->failed || ferror(x->out) ? -1 : 0;
}

int nsc_export_finish(nsc_export *x, nsc_export_totals *totals)
{
    if (x->fmt == NSC_EXPORT_CHROME) {
        put_s(x, "\n],\"metadata\":{");
        if (x->meta)
            put(x, x->meta, x->meta_len);
        put_s(x, "}}\n");
    }
    flush(x);
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
    nsc_pb_free(&x->outbuf);
    free(x->meta);
    free(x);
    return rc;
}
