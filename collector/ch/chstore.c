/* chstore.c: ClickHouse over HTTP with libcurl (see chstore.h). */
#include "chstore.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chconn.h"
#include "chnative.h"
#include "chrows.h"
#include "chschema.h"
#include "fnv.h"
#include "mono.h"

#define REPLY_MAX 512  /* kept of ClickHouse's answer, for the error message */
#define SERVER_MAX 160
#define TARGETS_MAX NSC_CHSTORE_SHARDS_MAX
#define LOG_EVERY_NS 10000000000ull  /* an insert retried every second must not flood the log */

/* A server whose local tables get rows: a shard, or the store's server.
 * Each has its own connection: one table's inserts run on all at once. */
typedef struct target {
    char server[SERVER_MAX];  /* http://HOST:PORT/ */
    nsc_ch_cols tabs[2][NSC_CH_NTABLES];  /* the rows waiting, per table: two generations */
    CURL *h;
    /* Two Native blocks: one table's posted while the next one's is made. */
    nsc_ch_buf block[2];
    char what[2][256];        /* their INSERTs, for errors */
    int ready[2];             /* the slot holds a block to post */
    int slot;                 /* the one posted */
    char reply[REPLY_MAX];
    size_t reply_len;
    int posting;
} target;

struct nsc_chstore {
    nsc_chconn conn;
    CURL *h;
    char server[SERVER_MAX];  /* the store's server (the URL's) */
    char db[64], cluster[64];
    target t[TARGETS_MAX];
    size_t nt;
    char reply[REPLY_MAX];
    size_t reply_len;
    CURLM *multi;             /* the targets' inserts */
    nsc_ch_native *native;    /* turns a buffer's rows into a block */
    nsc_ch_buf answer;        /* a query's whole answer, while keep_answer */
    int keep_answer;
    uint64_t quiet_until_ns;  /* failures are logged once per LOG_EVERY_NS */
    uint64_t unlogged;
    /* Puts go to generation fill of the targets' tables while the inserter
     * thread inserts the other one (chstore.h, nsc_chstore_insert_start). */
    int fill, busy;           /* the writer's: busy while an insert is not waited for */
    char job_noted[2][64];    /* per generation: the job whose jobs row it holds last */
    nsc_store_wall_state wall; /* stored: cleared when rows are dropped or an insert fails */
    pthread_t inserter;
    int has_inserter;
    pthread_mutex_t mu;       /* the fields below, and the failure log's */
    pthread_cond_t cv;
    int order;                /* 1: insert generation `inserting`; -1: stop */
    int inserting, rc;        /* the generation ordered; the last insert's result */
    int wake[2];              /* a pipe: a byte when an insert ended */
};

static void *insert_loop(void *arg);

/* The start of an answer, for the error message. */
static void keep_text(char *reply, size_t *reply_len, const char *p, size_t len)
{
    size_t take = REPLY_MAX - 1 - *reply_len;
    if (take > len)
        take = len;
    memcpy(reply + *reply_len, p, take);
    *reply_len += take;
    reply[*reply_len] = 0;
}

static size_t keep_reply(char *p, size_t size, size_t n, void *arg)
{
    nsc_chstore *ch = arg;
    size_t len = size * n;
    nsc_ch_buf *a = &ch->answer;
    if (ch->keep_answer) {  /* a short count fails the transfer */
        if (nsc_ch_reserve(a, len))
            return 0;
        memcpy(a->p + a->len, p, len);
        a->len += len;
    }
    keep_text(ch->reply, &ch->reply_len, p, len);
    return len;
}

static size_t keep_target_reply(char *p, size_t size, size_t n, void *arg)
{
    target *tg = arg;
    keep_text(tg->reply, &tg->reply_len, p, size * n);
    return size * n;
}

static CURL *new_handle(const nsc_chconn *conn, curl_write_callback fn, void *arg)
{
    CURL *h = curl_easy_init();
    if (!h)
        return NULL;
    nsc_chconn_apply(conn, h);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 120L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, fn);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, arg);
    return h;
}

/* A request that did not answer 200 (rc, or HTTP code and reply): -1,
 * logged at most once per LOG_EVERY_NS. */
static int failed(nsc_chstore *ch, CURLcode rc, long code, const char *reply, const char *what)
{
    uint64_t now = nsc_mono_ns();
    pthread_mutex_lock(&ch->mu);  /* the writer's queries and the inserter's inserts */
    if (now < ch->quiet_until_ns) {
        ch->unlogged++;
        pthread_mutex_unlock(&ch->mu);
        return -1;
    }
    if (rc != CURLE_OK)
        fprintf(stderr, "ncclscope-collector: clickhouse: %.200s: %s", what, curl_easy_strerror(rc));
    else
        fprintf(stderr, "ncclscope-collector: clickhouse: %.200s: HTTP %ld: %.300s", what, code, reply);
    fprintf(stderr, " (nothing acknowledged; %" PRIu64 " more failures not logged)\n", ch->unlogged);
    ch->quiet_until_ns = now + LOG_EVERY_NS;
    ch->unlogged = 0;
    pthread_mutex_unlock(&ch->mu);
    return -1;
}

/* POST body to url; 0 when ClickHouse answered 200. what names it in errors. */
static int post(nsc_chstore *ch, const char *url, const void *body, size_t len, const char *what)
{
    long code = 0;
    ch->reply_len = 0;
    ch->reply[0] = 0;
    curl_easy_setopt(ch->h, CURLOPT_URL, url);
    curl_easy_setopt(ch->h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(ch->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    CURLcode rc = curl_easy_perform(ch->h);
    if (rc == CURLE_OK)
        curl_easy_getinfo(ch->h, CURLINFO_RESPONSE_CODE, &code);
    return rc == CURLE_OK && code == 200 ? 0 : failed(ch, rc, code, ch->reply, what);
}

/* Names go into SQL unquoted: letters, digits, '_' only. */
static int plain_name(const char *s, size_t n)
{
    if (n == 0 || n >= 64)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '_'))
            return 0;
    return 1;
}

/* clickhouse://HOST:PORT/DB[?cluster=NAME] */
static int parse_url(nsc_chstore *ch, const char *url)
{
    const char *hp = url + strlen(NSC_CH_PREFIX), *slash = strchr(hp, '/');
    if (strncmp(url, NSC_CH_PREFIX, strlen(NSC_CH_PREFIX)) || !slash || slash == hp ||
        nsc_chconn_server(&ch->conn, hp, (size_t)(slash - hp), ch->server, sizeof ch->server))
        return -1;
    const char *db = slash + 1, *q = strchr(db, '?');
    size_t dbl = q ? (size_t)(q - db) : strlen(db);
    if (!plain_name(db, dbl))
        return -1;
    memcpy(ch->db, db, dbl);
    if (!q)
        return 0;
    const char *cl = q + 1;
    if (strncmp(cl, "cluster=", 8) || !plain_name(cl + 8, strlen(cl + 8)))
        return -1;
    snprintf(ch->cluster, sizeof ch->cluster, "%s", cl + 8);
    return 0;
}

/* The targets: every shard listed, else the store's server. A cluster
 * needs its shards listed: the collector makes their tables and places rows. */
static int parse_shards(nsc_chstore *ch, const char *shards)
{
    for (const char *s = shards; *s;) {
        size_t n = strcspn(s, ",");
        if (n == 0 || ch->nt == TARGETS_MAX || nsc_chconn_server(&ch->conn, s, n, ch->t[ch->nt++].server, SERVER_MAX))
            return -1;
        s += n + (s[n] == ',');
    }
    if (ch->nt == 0 && ch->cluster[0])
        return -1;
    if (ch->nt == 0)
        snprintf(ch->t[ch->nt++].server, SERVER_MAX, "%s", ch->server);
    return 0;
}

/* The local tables on every shard (or on the store's server). */
static int create_tables(nsc_chstore *ch)
{
    for (size_t i = 0; i < ch->nt; i++)
        if (nsc_chschema_local(&ch->conn, ch->t[i].server, ch->db))
            return -1;
    return 0;
}

/* The store's latest wall record, over every target: the offset this
 * collector keeps while its readings stay within the slack (store.h,
 * nsc_store_wall_state), so that every collector of the store answers with
 * one. None readable: the first commit records this collector's own. */
static void read_latest_wall(nsc_chstore *ch)
{
    char q[256];
    uint64_t latest = 0, utc;
    int64_t off;
    snprintf(q, sizeof q, "SELECT utc_ns, offset_ns FROM %s.wall_local ORDER BY utc_ns DESC LIMIT 1 "
             "FORMAT TabSeparated", ch->db);
    for (size_t i = 0; i < ch->nt; i++) {
        ch->answer = (nsc_ch_buf){.p = ch->answer.p, .cap = ch->answer.cap};
        ch->keep_answer = 1;
        int rc = post(ch, ch->t[i].server, q, strlen(q), q);
        ch->keep_answer = 0;
        char text[64];
        size_t n = ch->answer.len < sizeof text - 1 ? ch->answer.len : sizeof text - 1;
        if (rc || !n)
            continue;
        memcpy(text, ch->answer.p, n);
        text[n] = 0;
        if (sscanf(text, "%" SCNu64 "\t%" SCNd64, &utc, &off) == 2 && utc >= latest) {
            latest = utc;
            ch->wall = (nsc_store_wall_state){off, 1, 1};
        }
    }
}

int nsc_chstore_open(const char *url, const char *shards, const nsc_chconn *conn, nsc_chstore **out)
{
    nsc_chstore *ch = calloc(1, sizeof *ch);
    if (!ch)
        return -1;
    ch->conn = *conn;
    ch->wake[0] = ch->wake[1] = -1;
    pthread_mutex_init(&ch->mu, NULL);
    pthread_cond_init(&ch->cv, NULL);
    if (parse_url(ch, url) || parse_shards(ch, shards)) {
        fprintf(stderr, "ncclscope-collector: store %s: not clickhouse://HOST:PORT/DB[?cluster=NAME], "
                        "or ch_shards not HOST:PORT,... (%d at most; a cluster needs them)\n",
                url, TARGETS_MAX);
        free(ch);
        return -1;
    }
    if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
        fprintf(stderr, "ncclscope-collector: libcurl: cannot start\n");
        free(ch);
        return -1;
    }
    int ok = (ch->native = nsc_ch_native_new()) && (ch->multi = curl_multi_init()) &&
             (ch->h = new_handle(&ch->conn, keep_reply, ch));
    for (size_t i = 0; ok && i < ch->nt; i++)
        ok = (ch->t[i].h = new_handle(&ch->conn, keep_target_reply, &ch->t[i])) != NULL;
    if (!ok) {
        fprintf(stderr, "ncclscope-collector: libcurl: cannot start\n");
        nsc_chstore_close(ch);
        return -1;
    }
    if (create_tables(ch) ||
        (ch->cluster[0] && nsc_chschema_distributed(&ch->conn, ch->server, ch->db, ch->cluster))) {
        fprintf(stderr, "ncclscope-collector: store %s: cannot create the tables\n", url);
        nsc_chstore_close(ch);
        return -1;
    }
    read_latest_wall(ch);
    if (pipe(ch->wake) || pthread_create(&ch->inserter, NULL, insert_loop, ch)) {
        fprintf(stderr, "ncclscope-collector: clickhouse: cannot start the inserter thread\n");
        nsc_chstore_close(ch);
        return -1;
    }
    ch->has_inserter = 1;
    *out = ch;
    return 0;
}

void nsc_chstore_close(nsc_chstore *ch)
{
    if (!ch)
        return;
    if (ch->has_inserter) {
        pthread_mutex_lock(&ch->mu);
        ch->order = -1;
        pthread_cond_signal(&ch->cv);
        pthread_mutex_unlock(&ch->mu);
        pthread_join(ch->inserter, NULL);
    }
    for (int i = 0; i < 2; i++)
        if (ch->wake[i] >= 0)
            close(ch->wake[i]);
    pthread_cond_destroy(&ch->cv);
    pthread_mutex_destroy(&ch->mu);
    for (size_t i = 0; i < ch->nt; i++) {
        for (int t = 0; t < NSC_CH_NTABLES; t++)
            nsc_ch_cols_free(&ch->t[i].tabs[0][t]), nsc_ch_cols_free(&ch->t[i].tabs[1][t]);
        free(ch->t[i].block[0].p), free(ch->t[i].block[1].p);
        curl_easy_cleanup(ch->t[i].h);
    }
    free(ch->answer.p);
    nsc_ch_native_free(ch->native);
    curl_multi_cleanup(ch->multi);
    curl_easy_cleanup(ch->h);
    curl_global_cleanup();
    free(ch);
}

/* FNV-1a over the fields that decide a row's place, NUL-separated. */
static uint64_t mix_text(uint64_t h, const char *s, size_t max)
{
    return nsc_fnv1a(h, s, strnlen(s, max) + 1);
}

/* The tables of the target a row of (job, host, pid) goes to. The place
 * depends on the row's identity alone, so a batch sent again lands where
 * its first copy is, and ReplacingMergeTree folds the two. */
static nsc_ch_cols *tabs_of(nsc_chstore *ch, const char *job, const char *host, uint32_t pid)
{
    uint64_t h = mix_text(mix_text(NSC_FNV1A_BASIS, job, 64), host, 64);
    return ch->t[nsc_fnv1a(h, &pid, sizeof pid) % ch->nt].tabs[ch->fill];
}

void nsc_chstore_put(nsc_chstore *ch, const char *agent, uint64_t epoch, uint64_t seq, uint32_t section,
                     const nsc_store_batch *b)
{
    nsc_ch_origin o = {agent, epoch, seq, section};
    nsc_ch_rows_section(tabs_of(ch, b->proc->job, b->proc->host, b->proc->pid), &o, b);
    char *noted = ch->job_noted[ch->fill];
    if (strncmp(noted, b->proc->job, sizeof ch->job_noted[0]) != 0) {  /* once per job and insert, mostly */
        nsc_ch_rows_job(&tabs_of(ch, b->proc->job, "", 0)[NSC_CH_JOBS], b->proc->job, nsc_wall_ns());
        snprintf(noted, sizeof ch->job_noted[0], "%s", b->proc->job);
    }
}

void nsc_chstore_put_ledger(nsc_chstore *ch, const char *agent, uint64_t epoch, uint64_t seq, uint32_t index,
                            const nsc_proc *p, const void *data, size_t len, const nsc_ledger_batch *b)
{
    nsc_ch_origin o = {agent, epoch, seq, index};
    nsc_ch_rows_ledger(tabs_of(ch, p->job, p->host, p->pid), &o, p, data, len, b);
}

void nsc_chstore_put_life(nsc_chstore *ch, const char *agent, uint64_t epoch, uint64_t seq, uint32_t index,
                          const nsc_store_life *l)
{
    nsc_ch_origin o = {agent, epoch, seq, index};
    nsc_ch_rows_life(&tabs_of(ch, l->job, l->host, l->pid)[NSC_CH_LIFECYCLE], &o, l);
}

int nsc_chstore_put_clock(nsc_chstore *ch, const char *host, const nsc_clock_model *m)
{
    nsc_ch_cols *b = &tabs_of(ch, "", host, 0)[NSC_CH_CLOCKS];
    nsc_ch_rows_clock(b, host, m, nsc_wall_ns());
    return b->failed ? NSC_STORE_ENOMEM : 0;
}

int nsc_chstore_put_wall(nsc_chstore *ch, uint64_t now_ns)
{
    nsc_store_wall_rec r;
    if (!nsc_store_wall_due(&ch->wall, now_ns, &r))
        return 0;
    nsc_ch_cols *b = &tabs_of(ch, "", "wall", 0)[NSC_CH_WALL];
    nsc_ch_rows_wall(b, &r);
    if (b->failed)
        return NSC_STORE_ENOMEM;
    nsc_store_wall_recorded(&ch->wall, &r);
    return 0;
}

int nsc_chstore_wall_kept(const nsc_chstore *ch, int64_t *offset_ns)
{
    *offset_ns = ch->wall.offset_ns;
    return ch->wall.known ? 0 : -1;
}

int nsc_chstore_put_progress(void *arg, const nsc_store_progress *p)
{
    nsc_chstore *ch = arg;
    char comm[24];
    snprintf(comm, sizeof comm, "%016" PRIx64, p->comm_id);
    nsc_ch_cols *b = &tabs_of(ch, p->job, comm, 0)[NSC_CH_PROGRESS];
    nsc_ch_rows_progress(b, p);
    return b->failed ? NSC_STORE_ENOMEM : 0;
}

/* The answer's (host, model) rows to fn. */
static int each_clock(const nsc_ch_buf *a, nsc_chstore_clock_fn fn, void *arg)
{
    if (a->len == 0)  /* no model stored (and maybe no buffer yet) */
        return 0;
    const uint8_t *p = a->p, *end = a->p + a->len;
    int rc = 0;
    while (!rc && p != end) {
        size_t hl, ml;
        const uint8_t *h = nsc_ch_take_string(&p, end, &hl), *m = h ? nsc_ch_take_string(&p, end, &ml) : NULL;
        nsc_clock_model model;
        char host[64];
        if (!m || hl >= sizeof host || nsc_clock_deserialize(&model, m, ml))
            return -1;
        memcpy(host, h, hl);
        host[hl] = 0;
        rc = fn(arg, host, &model);
        nsc_clock_free(&model);
    }
    return rc;
}

int nsc_chstore_clocks(nsc_chstore *ch, nsc_chstore_clock_fn fn, void *arg)
{
    char q[256];
    snprintf(q, sizeof q, "SELECT host, argMax(model, ref_ns) FROM %s.clocks_local GROUP BY host FORMAT RowBinary",
             ch->db);
    int rc = 0;
    for (size_t i = 0; !rc && i < ch->nt; i++) {
        ch->answer = (nsc_ch_buf){.p = ch->answer.p, .cap = ch->answer.cap};
        ch->keep_answer = 1;
        rc = post(ch, ch->t[i].server, q, strlen(q), q);
        ch->keep_answer = 0;
        if (!rc && (rc = each_clock(&ch->answer, fn, arg)) == -1)
            fprintf(stderr, "ncclscope-collector: clickhouse: %s: a stored clock model does not decode\n",
                    ch->t[i].server);
    }
    return rc;
}

size_t nsc_chstore_sources(const nsc_chstore *ch, const char **servers, size_t max, const char **suffix,
                           const char **db)
{
    *db = ch->db;
    *suffix = ch->cluster[0] ? "" : "_local";
    if (ch->cluster[0]) {
        servers[0] = ch->server;
        return max ? 1 : 0;
    }
    return nsc_chstore_shards(ch, servers, max, db);
}

size_t nsc_chstore_shards(const nsc_chstore *ch, const char **servers, size_t max, const char **db)
{
    *db = ch->db;
    size_t n = 0;
    for (; n < ch->nt && n < max; n++)
        servers[n] = ch->t[n].server;
    return n;
}

const nsc_chconn *nsc_chstore_conn(const nsc_chstore *ch)
{
    return &ch->conn;
}

size_t nsc_chstore_pending(const nsc_chstore *ch)
{
    size_t n = 0;
    for (size_t i = 0; i < ch->nt; i++)
        for (int t = 0; t < NSC_CH_NTABLES; t++)
            n += nsc_ch_cols_bytes(&ch->t[i].tabs[ch->fill][t]);
    return n;
}

/* Target tg's rows of table t in generation g, if any, as one Native block
 * in key order (the server neither decodes rows nor sorts them) in its slot sl. */
static int build_block(nsc_chstore *ch, target *tg, int g, int t, int sl)
{
    const nsc_ch_table_def d = nsc_ch_def(t);
    tg->ready[sl] = 0;
    const nsc_ch_cols *rows = &tg->tabs[g][t];
    if (!rows->rows && !rows->failed)
        return 0;
    snprintf(tg->what[sl], sizeof tg->what[sl], "INSERT INTO %s.%s_local FORMAT Native", ch->db, d.name);
    if (nsc_ch_native_block(ch->native, &d, rows, &tg->block[sl])) {
        fprintf(stderr, "ncclscope-collector: clickhouse: %s: rows do not make a block (out of memory?)\n",
                tg->what[sl]);
        return -1;
    }
    tg->ready[sl] = 1;
    return 0;
}

/* The blocks of slot sl, their inserts added to ch->multi. */
static int post_blocks(nsc_chstore *ch, int sl)
{
    for (size_t i = 0; i < ch->nt; i++) {
        target *tg = &ch->t[i];
        char url[SERVER_MAX + 512];
        if (!tg->ready[sl])
            continue;
        char *esc = curl_easy_escape(tg->h, tg->what[sl], 0);
        if (!esc)
            return -1;
        snprintf(url, sizeof url, "%s?query=%s", tg->server, esc);
        curl_free(esc);
        tg->reply_len = 0;
        tg->reply[0] = 0;
        curl_easy_setopt(tg->h, CURLOPT_URL, url);
        curl_easy_setopt(tg->h, CURLOPT_POSTFIELDS, tg->block[sl].p);
        curl_easy_setopt(tg->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)tg->block[sl].len);
        curl_easy_setopt(tg->h, CURLOPT_PRIVATE, tg);
        if (curl_multi_add_handle(ch->multi, tg->h) != CURLM_OK)
            return -1;
        tg->posting = 1;
        tg->slot = sl;
    }
    return 0;
}

/* Until every posted block is sent (or a transfer ended): the servers then
 * write their parts while the writer makes the next table's blocks. */
static int send_blocks(nsc_chstore *ch)
{
    for (;;) {
        int running, sent = 1;
        if (curl_multi_perform(ch->multi, &running) != CURLM_OK)
            return -1;
        for (size_t i = 0; i < ch->nt; i++) {
            curl_off_t up = 0;
            const target *tg = &ch->t[i];
            if (tg->posting && curl_easy_getinfo(tg->h, CURLINFO_SIZE_UPLOAD_T, &up) == CURLE_OK &&
                up < (curl_off_t)tg->block[tg->slot].len)
                sent = 0;
        }
        if (sent || !running)
            return 0;
        if (curl_multi_poll(ch->multi, NULL, 0, 1000, NULL) != CURLM_OK)
            return -1;
    }
}

/* Run the inserts started until all ended: 0 when each answered 200. */
static int finish_inserts(nsc_chstore *ch)
{
    int running = 1, rc = 0, left;
    while (running && !rc) {
        rc = curl_multi_perform(ch->multi, &running) != CURLM_OK;
        if (running && !rc)
            rc = curl_multi_poll(ch->multi, NULL, 0, 1000, NULL) != CURLM_OK;
    }
    for (CURLMsg *m; (m = curl_multi_info_read(ch->multi, &left));) {
        char *priv = NULL;
        long code = 0;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &priv);
        target *tg = (target *)priv;
        if (m->msg != CURLMSG_DONE || !tg)
            continue;
        if (m->data.result == CURLE_OK)
            curl_easy_getinfo(tg->h, CURLINFO_RESPONSE_CODE, &code);
        if (m->data.result != CURLE_OK || code != 200)
            rc = failed(ch, m->data.result, code, tg->reply, tg->what[tg->slot]);
    }
    for (size_t i = 0; i < ch->nt; i++)
        if (ch->t[i].posting) {
            curl_multi_remove_handle(ch->multi, ch->t[i].h);
            ch->t[i].posting = 0;
        }
    return rc ? -1 : 0;
}

static void clear_gen(nsc_chstore *ch, int g)
{
    ch->job_noted[g][0] = 0;
    for (size_t i = 0; i < ch->nt; i++)
        for (int t = 0; t < NSC_CH_NTABLES; t++)
            nsc_ch_cols_clear(&ch->t[i].tabs[g][t]);
}

void nsc_chstore_discard(nsc_chstore *ch)
{
    ch->wall.stored = 0;  /* its wall record, if any, goes with the rows */
    clear_gen(ch, ch->fill);
}

/* The first table after t with rows of generation g on some target
 * (NSC_CH_NTABLES: none). */
static int next_table(const nsc_chstore *ch, int g, int t)
{
    while (++t < NSC_CH_NTABLES)
        for (size_t i = 0; i < ch->nt; i++)
            if (ch->t[i].tabs[g][t].rows || ch->t[i].tabs[g][t].failed)
                return t;
    return t;
}

/* Generation g's rows: one table at a time, its inserts into every target
 * at once (the shards write their parts side by side); the next table's
 * blocks are made while the servers write. */
static int insert_gen(nsc_chstore *ch, int g)
{
    int rc = 0, sl = 0, t = next_table(ch, g, -1);
    for (size_t i = 0; t < NSC_CH_NTABLES && i < ch->nt; i++)
        rc = build_block(ch, &ch->t[i], g, t, sl) || rc;
    while (!rc && t < NSC_CH_NTABLES) {
        int next = next_table(ch, g, t);
        rc = post_blocks(ch, sl) || send_blocks(ch);
        for (size_t i = 0; !rc && next < NSC_CH_NTABLES && i < ch->nt; i++)
            rc = build_block(ch, &ch->t[i], g, next, !sl);
        rc = finish_inserts(ch) || rc;
        t = next, sl = !sl;
    }
    clear_gen(ch, g);
    return rc ? -1 : 0;
}

/* The inserter thread: each generation ordered inserted, its result kept
 * and a byte written to the wake pipe. */
static void *insert_loop(void *arg)
{
    nsc_chstore *ch = arg;
    pthread_mutex_lock(&ch->mu);
    for (;;) {
        while (!ch->order)
            pthread_cond_wait(&ch->cv, &ch->mu);
        if (ch->order < 0)
            break;
        ch->order = 0;
        int g = ch->inserting;
        pthread_mutex_unlock(&ch->mu);
        int rc = insert_gen(ch, g);
        pthread_mutex_lock(&ch->mu);
        ch->rc = rc;
        while (write(ch->wake[1], "", 1) < 0 && errno == EINTR)
            ;
    }
    pthread_mutex_unlock(&ch->mu);
    return NULL;
}

void nsc_chstore_insert_start(nsc_chstore *ch)
{
    pthread_mutex_lock(&ch->mu);
    ch->inserting = ch->fill;
    ch->order = 1;
    pthread_cond_signal(&ch->cv);
    pthread_mutex_unlock(&ch->mu);
    ch->fill = !ch->fill;
    ch->busy = 1;
}

int nsc_chstore_insert_fd(const nsc_chstore *ch)
{
    return ch->wake[0];
}

int nsc_chstore_insert_wait(nsc_chstore *ch)
{
    char byte;
    if (!ch->busy)
        return 0;
    while (read(ch->wake[0], &byte, 1) < 0 && errno == EINTR)
        ;
    ch->busy = 0;
    pthread_mutex_lock(&ch->mu);
    int rc = ch->rc;
    pthread_mutex_unlock(&ch->mu);
    ch->wall.stored &= !rc;  /* its wall record, if any, may be lost: put it again */
    return rc;
}
