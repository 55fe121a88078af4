/* replay.c: nsc-ch-replay, the requests a collector made of one ClickHouse
 * release (recorded by record.py) made again of another: a current release
 * embedded as chDB's libchdb.so, loaded with dlopen.
 *
 *   nsc-ch-replay [--cluster NAME] LIBCHDB RECORD_DIR WORK_DIR
 *
 * Runs every recorded request in the order its answer came back, each in
 * the one chDB session (its data in WORK_DIR): an INSERT (its statement in
 * the URL) with its recorded body as its rows, read FROM INFILE (inline
 * binary rows would be split at a ';' byte by chDB's statement splitter),
 * any other statement as sent.
 * A statement the recorded server took must run; a SELECT that overlapped no
 * write (record.py's counters) must answer the recorded bytes, or, with no
 * ORDER BY, the same bytes in another order (the same multiset). With
 * --cluster, chDB knows cluster NAME as one shard, itself (a replica on
 * its own tcp_port is read and written in process), so the Distributed
 * tables the collector made on its front server work over the local tables
 * that every shard's rows went to; a SELECT made of one shard of several
 * (its own rows; chDB holds every shard's), or of a table written through a
 * Distributed table (18.16 sends those rows to the shards later), is run but
 * not compared. Prints one
 * line per difference and a summary; exits 0 when there is none, 1 on a
 * difference, 2 when libchdb or the record cannot be used.
 */
#include <dirent.h>
#include <errno.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

typedef struct chdb_api {
    void **(*connect)(int argc, char **argv);
    void *(*query_n)(void *conn, const char *q, size_t qlen, const char *fmt, size_t flen);
    char *(*buffer)(void *res);
    size_t (*length)(void *res);
    const char *(*error)(void *res);
    void (*destroy)(void *res);
    void (*close)(void **conn);
} chdb_api;

typedef struct request {
    unsigned long start, end;
    int status, write, upstream;
    char name[16];       /* its files' stem in the record */
    char *sql;           /* the statement */
    size_t sql_len;
    char *data;          /* an INSERT's rows (the body; the statement came in the URL) */
    size_t data_len;
    char *answer;
    size_t answer_len;
} request;

static int load_api(const char *path, chdb_api *a)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "nsc-ch-replay: %s\n", dlerror());
        return -1;
    }
    *(void **)&a->connect = dlsym(h, "chdb_connect");
    *(void **)&a->query_n = dlsym(h, "chdb_query_n");
    *(void **)&a->buffer = dlsym(h, "chdb_result_buffer");
    *(void **)&a->length = dlsym(h, "chdb_result_length");
    *(void **)&a->error = dlsym(h, "chdb_result_error");
    *(void **)&a->destroy = dlsym(h, "chdb_destroy_query_result");
    *(void **)&a->close = dlsym(h, "chdb_close_conn");
    if (!a->connect || !a->query_n || !a->buffer || !a->length || !a->error || !a->destroy || !a->close) {
        fprintf(stderr, "nsc-ch-replay: %s lacks chDB's C API (chdb_connect, chdb_query_n, ...)\n", path);
        return -1;
    }
    return 0;
}

static char *read_all(const char *dir, const char *name, const char *ext, size_t *len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0, got;
    char *p = malloc(cap + 1);
    while (p && (got = fread(p + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *q = realloc(p, (cap *= 2) + 1);
            if (!q)
                free(p);
            p = q;
        }
    }
    fclose(f);
    if (p) {
        p[n] = 0;
        *len = n;
    }
    return p;
}

static int hex(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* The URL's query parameter, decoded into out (cap bytes); 0 when present. */
static int query_param(const char *target, char *out, size_t cap)
{
    const char *q = strstr(target, "?query=");
    if (!q)
        q = strstr(target, "&query=");
    if (!q)
        return -1;
    size_t n = 0;
    for (const char *p = q + 7; *p && *p != '&' && n + 1 < cap; p++) {
        if (*p == '%' && hex(p[1]) >= 0 && hex(p[2]) >= 0) {
            out[n++] = (char)(hex(p[1]) * 16 + hex(p[2]));
            p += 2;
        } else {
            out[n++] = *p == '+' ? ' ' : *p;
        }
    }
    out[n] = 0;
    return 0;
}

static int starts_with_select(const char *sql)
{
    while (*sql == ' ' || *sql == '\n' || *sql == '\t')
        sql++;
    return strncasecmp(sql, "SELECT", 6) == 0;
}

/* One record's request: 0, 1 to pass over (no statement), -1 unreadable. */
static int load_request(const char *dir, const char *name, request *r)
{
    size_t len, body_len;
    char *meta = read_all(dir, name, "meta", &len), method[16], target[8192], param[8192];
    if (!meta)
        return -1;
    int ok = sscanf(meta, "%lu %lu %d %d %15s %8191s", &r->start, &r->end, &r->status, &r->upstream, method, target) == 6;
    free(meta);
    char *body = ok ? read_all(dir, name, "body", &body_len) : NULL;
    r->answer = ok ? read_all(dir, name, "answer", &r->answer_len) : NULL;
    if (!body || !r->answer) {
        free(body);
        return -1;
    }
    snprintf(r->name, sizeof r->name, "%s", name);
    if (query_param(target, param, sizeof param) == 0) {  /* the statement in the URL, the rows in the body */
        r->sql = strdup(param);
        r->sql_len = strlen(param);
        r->data = body, r->data_len = body_len;
        if (!r->sql)
            return -1;
    } else if (body_len) {
        r->sql = body, r->sql_len = body_len;
    } else {
        free(body);
        free(r->answer);
        return 1;  /* /ping and the like */
    }
    r->write = !starts_with_select(r->sql);
    return 0;
}

static int by_end(const void *a, const void *b)
{
    const request *x = a, *y = b;
    return x->end < y->end ? -1 : x->end > y->end;
}

static int by_byte(const void *a, const void *b) { return *(const unsigned char *)a - *(const unsigned char *)b; }

/* A write ran while r ran: r's recorded answer may or may not hold it. */
static int overlapped(const request *all, size_t n, const request *r)
{
    for (size_t i = 0; i < n; i++)
        if (all[i].write && all[i].start < r->end && all[i].end > r->start)
            return 1;
    return 0;
}

/* The first db.table after word in sql, as " db.table " in out: 0, or -1
 * when word or a db.table after it is missing. */
static int table_after(const char *sql, const char *word, char *out, size_t cap)
{
    const char *p = strstr(sql, word);
    if (!p)
        return -1;
    p += strlen(word);
    snprintf(out, cap, " %.*s ", (int)strcspn(p, " \n("), p);
    return strchr(out, '.') ? 0 : -1;
}

/* sql reads, after any FROM, a table of list (" db.table " each), or with
 * list NULL a shard's own table (db.X_local). */
static int reads_one_of(const char *sql, const char *list)
{
    char one[260];
    for (const char *p = sql; (p = strstr(p, "FROM ")); p += 5) {
        if (table_after(p, "FROM ", one, sizeof one))
            continue;
        size_t len = strlen(one);
        if (list ? strstr(list, one) != NULL : len > 7 && strcmp(one + len - 7, "_local ") == 0)
            return 1;
    }
    return 0;
}

/* Why a SELECT's answer cannot be held against the recorded one. */
enum { NOT_OVERLAP, NOT_SHARD, NOT_ASYNC, NOT_N };
static const char *const why_not[NOT_N] = {"a write ran beside it", "one shard's rows",
                                           "a table written through a Distributed table"};

/* The reason (NOT_*) r's answer is not compared, or -1 when it is. async
 * lists the tables written through a Distributed table. */
static int not_comparable(const request *all, size_t n, const request *r, int shards, const char *async)
{
    if (overlapped(all, n, r))
        return NOT_OVERLAP;
    if (shards > 1 && r->upstream > 0 && reads_one_of(r->sql, NULL))
        return NOT_SHARD;
    if (reads_one_of(r->sql, async))
        return NOT_ASYNC;
    return -1;
}

static void sorted_copy(const char *p, size_t n, char *out)
{
    memcpy(out, p, n);
    qsort(out, n, 1, by_byte);
}

/* The answers are the same bytes, or (no ORDER BY) the same bytes in
 * another order; *unordered says which. */
static int same_answer(const request *r, const char *got, size_t len, int *unordered)
{
    *unordered = 0;
    if (len == r->answer_len && memcmp(got, r->answer, len) == 0)
        return 1;
    if (len != r->answer_len || strstr(r->sql, "ORDER BY"))
        return 0;
    char *a = malloc(len ? len : 1), *b = malloc(len ? len : 1);
    int same = 0;
    if (a && b) {
        sorted_copy(got, len, a);
        sorted_copy(r->answer, len, b);
        same = memcmp(a, b, len) == 0;
    }
    free(a);
    free(b);
    *unordered = same;
    return same;
}

static size_t load_record(const char *dir, request **out)
{
    DIR *d = opendir(dir);
    size_t n = 0, cap = 0;
    request *all = NULL;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 6 || len >= 16 + 5 || strcmp(e->d_name + len - 5, ".meta"))
            continue;
        char name[16];
        snprintf(name, sizeof name, "%.*s", (int)(len - 5), e->d_name);
        if (n == cap) {
            request *m = realloc(all, (cap = cap ? cap * 2 : 256) * sizeof *all);
            if (!m)
                break;
            all = m;
        }
        memset(&all[n], 0, sizeof all[n]);
        int rc = load_request(dir, name, &all[n]);
        if (rc < 0) {
            fprintf(stderr, "nsc-ch-replay: record %s/%s is unreadable\n", dir, name);
            n = 0;
            break;
        }
        n += rc == 0;
    }
    if (d)
        closedir(d);
    qsort(all, n, sizeof *all, by_end);
    *out = all;
    return n;
}

/* "INSERT INTO T FORMAT F" with rows as "INSERT INTO T FROM INFILE 'F' FORMAT F"
 * (the rows written to WORK/rows/NAME first). */
static void *run(const chdb_api *api, void *conn, const request *r, const char *work)
{
    if (!r->data)
        return api->query_n(conn, r->sql, r->sql_len, "TabSeparated", 12);
    char path[4200], sql[8192 + 4400];
    const char *fmt = strstr(r->sql, " FORMAT ");
    snprintf(path, sizeof path, "%s/rows/%s", work, r->name);
    FILE *f = strchr(path, '\'') ? NULL : fopen(path, "wb");
    int ok = f && fwrite(r->data, 1, r->data_len, f) == r->data_len;
    if (f)
        ok &= fclose(f) == 0;
    if (!ok || !fmt)
        return NULL;
    int n = snprintf(sql, sizeof sql, "%.*s FROM INFILE '%s'%s", (int)(fmt - r->sql), r->sql, path, fmt);
    return api->query_n(conn, sql, (size_t)n, "TabSeparated", 12);
}

/* WORK/cluster.xml: cluster NAME, one shard whose replica is chDB itself. */
static int cluster_config(const char *work, const char *name, char *arg, size_t cap)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/cluster.xml", work);
    mkdir(work, 0700);
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f,
            "<clickhouse><tcp_port>9000</tcp_port><remote_servers><%s><shard><replica>"
            "<host>127.0.0.1</host><port>9000</port></replica></shard></%s></remote_servers></clickhouse>\n",
            name, name);
    if (fclose(f))
        return -1;
    snprintf(arg, cap, "--config-file=%s", path);
    return 0;
}

int main(int argc, char **argv)
{
    const char *cluster = NULL;
    if (argc > 2 && strcmp(argv[1], "--cluster") == 0) {
        cluster = argv[2];
        argc -= 2, argv += 2;
    }
    if (argc != 4 || (cluster && strspn(cluster, "abcdefghijklmnopqrstuvwxyz0123456789_") != strlen(cluster))) {
        fprintf(stderr, "usage: nsc-ch-replay [--cluster NAME] LIBCHDB RECORD_DIR WORK_DIR (NAME: [a-z0-9_]+)\n");
        return 2;
    }
    chdb_api api;
    request *all = NULL;
    size_t n = load_record(argv[2], &all);
    if (n == 0 || load_api(argv[1], &api)) {
        fprintf(stderr, "nsc-ch-replay: nothing to replay in %s, or no chDB\n", argv[2]);
        return 2;
    }
    char path[4200], config[4300];
    snprintf(path, sizeof path, "--path=%s", argv[3]);
    if (cluster && cluster_config(argv[3], cluster, config, sizeof config)) {
        fprintf(stderr, "nsc-ch-replay: cannot write %s/cluster.xml\n", argv[3]);
        return 2;
    }
    char *cargv[] = {"clickhouse", path, config};
    void **conn = api.connect(cluster ? 3 : 2, cargv);
    if (!conn || !*conn) {
        fprintf(stderr, "nsc-ch-replay: chDB did not open %s\n", argv[3]);
        return 2;
    }
    char rows[4200];
    snprintf(rows, sizeof rows, "%s/rows", argv[3]);
    if (mkdir(rows, 0700) && errno != EEXIST) {
        fprintf(stderr, "nsc-ch-replay: cannot make %s: %s\n", rows, strerror(errno));
        return 2;
    }
    void *v = api.query_n(*conn, "SELECT version()", 16, "TabSeparated", 12);
    char version[64] = "?";
    if (!api.error(v) || !*api.error(v))
        snprintf(version, sizeof version, "%.*s", (int)strcspn(api.buffer(v), "\n"), api.buffer(v));
    api.destroy(v);

    /* With a cluster the first upstream is the front: its INSERTs go
     * through Distributed tables, the others are the shards. */
    char async[4096] = "", one[260];
    int shards = 0;
    for (size_t i = 0; cluster && i < n; i++) {
        if (all[i].upstream > shards)
            shards = all[i].upstream;
        if (all[i].upstream == 0 && all[i].data && table_after(all[i].sql, "INTO ", one, sizeof one) == 0 &&
            !strstr(async, one) && strlen(async) + strlen(one) < sizeof async)
            strcat(async, one);
    }
    size_t writes = 0, compared = 0, unordered_n = 0, skipped[NOT_N] = {0}, refused_both = 0, diffs = 0;
    for (size_t i = 0; i < n; i++) {
        request *r = &all[i];
        void *res = run(&api, *conn, r, argv[3]);
        if (!res) {
            fprintf(stderr, "nsc-ch-replay: cannot hand %s's rows to chDB in %s\n", r->name, argv[3]);
            return 2;
        }
        const char *err = api.error(res);
        int failed = err && *err;
        int reason;
        const char *head = r->sql;
        int head_len = (int)strcspn(head, "\n");
        if (head_len > 300)
            head_len = 300;
        if (failed && r->status == 200) {
            printf("%s: ClickHouse %s refused what the recorded server took: %.*s: %.400s\n", r->name, version,
                   head_len, head, err);
            diffs++;
        } else if (failed || r->status != 200) {
            if (failed != (r->status != 200))
                printf("%s: note: the recorded server answered %d, ClickHouse %s %s: %.*s\n", r->name, r->status,
                       version, failed ? "refused it" : "took it", head_len, head);
            refused_both += failed && r->status != 200;
        } else if (r->write) {
            writes++;
        } else if ((reason = not_comparable(all, n, r, shards, async)) >= 0) {
            skipped[reason]++;
        } else {
            int unordered;
            if (same_answer(r, api.buffer(res), api.length(res), &unordered)) {
                compared++;
                unordered_n += unordered;
            } else {
                printf("%s: ClickHouse %s answered %zu bytes, the recorded server %zu, other bytes: %.*s\n", r->name,
                       version, api.length(res), r->answer_len, head_len, head);
                diffs++;
            }
        }
        api.destroy(res);
    }
    printf("nsc-ch-replay: %zu requests on ClickHouse %s: %zu writes taken, %zu SELECT answers the same (%zu "
           "in another order); run, not compared: %zu (%s), %zu (%s), %zu (%s); %zu refused by both; %zu "
           "differences\n",
           n, version, writes, compared, unordered_n, skipped[NOT_OVERLAP], why_not[NOT_OVERLAP], skipped[NOT_SHARD],
           why_not[NOT_SHARD], skipped[NOT_ASYNC], why_not[NOT_ASYNC], refused_both, diffs);
    api.close(conn);
    for (size_t i = 0; i < n; i++) {
        free(all[i].sql);
        free(all[i].data);
        free(all[i].answer);
    }
    free(all);
    return diffs ? 1 : 0;
}
