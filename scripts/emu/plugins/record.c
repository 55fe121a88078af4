/* record.c: libnccl-profiler-record.so, a test plugin that writes every call it
 * receives as one JSON line: call kind, API version, event type, every
 * descriptor field read through our ABI headers, handles, state and args, the
 * calling pid/tid and its CLOCK_MONOTONIC time (as the clock shim makes it).
 *
 * Environment: NCCLSCOPE_TEST_RECORD_FILE (required; "%p" becomes the pid),
 * NCCLSCOPE_TEST_RECORD_MASK (mask it sets in init, default all),
 * NCCLSCOPE_TEST_RECORD_FAIL_INIT=1 (init fails, to test unloading),
 * NCCLSCOPE_TEST_RECORD_FAIL_CALLS=1 (startEvent, stopEvent and
 * recordEventState record the call, then return ncclInternalError),
 * NCCLSCOPE_TEST_RECORD_MASK_AT=TYPE:MASK (at the process's first start of an
 * event of TYPE it writes MASK into NCCL's activation mask: a profiler that
 * changes the mask in the middle of an operation),
 * NCCLSCOPE_TEST_RECORD_HOLD=RANK:NTH:MS[:TYPE] (the thread that starts
 * rank RANK's NTH event of TYPE, ProxyStep if not given, of the process,
 * from 1, sleeps MS ms first: a proxy thread a loaded machine held back).
 * Handles and contexts are addresses in a private mapping that is never
 * touched: unique, real addresses of this process, never dereferenced.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "../../../plugin/nccl/profiler.h"
#include "event.h"

#define ARENA_BYTES (64u << 20)
#define SLOT 64u

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static int out_fd = -1;
static int users;
static char *arena;
static uint64_t next_slot;
static int *nccl_mask;          /* NCCL's activation mask, as init got it */
static int mask_at_type = -1;   /* NCCLSCOPE_TEST_RECORD_MASK_AT */
static uint32_t mask_at_value;
static int mask_switched;
static ncclResult_t calls_rc;   /* NCCLSCOPE_TEST_RECORD_FAIL_CALLS */
static int hold_rank = -1;      /* NCCLSCOPE_TEST_RECORD_HOLD */
static int hold_type = NSC_T_PROXY_STEP;
static unsigned hold_nth, hold_ms, hold_seen;

typedef struct line {
    char buf[2048];
    size_t n;
} line;

static void put(line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(line *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(l->buf + l->n, sizeof l->buf - l->n, fmt, ap);
    va_end(ap);
    if (k > 0)
        l->n = l->n + (size_t)k < sizeof l->buf ? l->n + (size_t)k : sizeof l->buf - 1;
}

static void put_str(line *l, const char *key, const char *s)
{
    put(l, ",\"%s\":", key);
    if (!s) {
        put(l, "null");
        return;
    }
    put(l, "\"");
    for (; *s; s++)
        put(l, *s == '"' || *s == '\\' ? "\\%c" : "%c", *s);
    put(l, "\"");
}

static void begin(line *l, const char *call, int v)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    l->n = 0;
    put(l, "{\"call\":\"%s\",\"v\":%d,\"pid\":%d,\"tid\":%ld,\"ts\":%llu", call, v, (int)getpid(),
        (long)syscall(SYS_gettid), (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec);
}

static void emit(line *l)
{
    put(l, "}\n");
    pthread_mutex_lock(&out_lock);
    if (out_fd >= 0 && write(out_fd, l->buf, l->n) != (ssize_t)l->n)
        abort(); /* a test plugin that loses lines would make every test lie */
    pthread_mutex_unlock(&out_lock);
}

static void *new_handle(void)
{
    uint64_t i = __atomic_fetch_add(&next_slot, 1, __ATOMIC_RELAXED) % (ARENA_BYTES / SLOT);
    return arena + i * SLOT;
}

static int open_output(void)
{
    const char *path = getenv("NCCLSCOPE_TEST_RECORD_FILE");
    if (!path)
        return -1;
    char p[1024];
    size_t o = 0;
    for (; *path && o + 16 < sizeof p; path++) {
        if (path[0] == '%' && path[1] == 'p') {
            o += (size_t)snprintf(p + o, sizeof p - o, "%d", (int)getpid());
            path++;
        } else
            p[o++] = *path;
    }
    p[o] = '\0';
    out_fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    return out_fd >= 0 ? 0 : -1;
}

/* The common part of every init: open the output once, set the mask. */
static ncclResult_t init_common(int v, void **ctx, int *mask, line *l)
{
    pthread_mutex_lock(&out_lock);
    int rc = 0;
    if (users == 0) {
        arena = mmap(NULL, ARENA_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        rc = arena == MAP_FAILED || open_output() ? -1 : 0;
        if (rc && arena != MAP_FAILED)
            munmap(arena, ARENA_BYTES);
    }
    if (rc == 0)
        users++;
    pthread_mutex_unlock(&out_lock);
    const char *fail = getenv("NCCLSCOPE_TEST_RECORD_FAIL_INIT");
    if (rc || (fail && strcmp(fail, "1") == 0)) {
        if (rc == 0) {
            begin(l, "init_fail", v);
            emit(l);
            pthread_mutex_lock(&out_lock);
            if (--users == 0) {
                close(out_fd);
                out_fd = -1;
                munmap(arena, ARENA_BYTES);
            }
            pthread_mutex_unlock(&out_lock);
        }
        return ncclInternalError;
    }
    const char *fail_calls = getenv("NCCLSCOPE_TEST_RECORD_FAIL_CALLS");
    calls_rc = fail_calls && strcmp(fail_calls, "1") == 0 ? ncclInternalError : ncclSuccess;
    const char *m = getenv("NCCLSCOPE_TEST_RECORD_MASK");
    uint32_t want = NSC_MASK_ALL;
    if (m && nsc_mask_parse(m, &want))
        want = NSC_MASK_ALL;
    const char *at = getenv("NCCLSCOPE_TEST_RECORD_MASK_AT");
    const char *colon = at ? strchr(at, ':') : NULL;
    if (colon && nsc_mask_parse(colon + 1, &mask_at_value) == 0) {
        char name[32];
        snprintf(name, sizeof name, "%.*s", (int)(colon - at), at);
        mask_at_type = nsc_type_from_name(name);
    }
    const char *hold = getenv("NCCLSCOPE_TEST_RECORD_HOLD");
    char hold_name[32];
    int held = hold ? sscanf(hold, "%d:%u:%u:%31s", &hold_rank, &hold_nth, &hold_ms, hold_name) : 0;
    if (held == 4)
        hold_type = nsc_type_from_name(hold_name);
    if (held < 3 || hold_type < 0)
        hold_rank = -1;
    nccl_mask = mask;
    *ctx = new_handle();
    begin(l, "init", v);
    put(l, ",\"ctx\":\"%p\",\"mask_in\":%d,\"mask_out\":%u", *ctx, *mask, want);
    *mask = (int)want;
    return ncclSuccess;
}

#define REC_INIT_V1(N)                                                                 \
    static ncclResult_t init_v##N(void **ctx, int *mask)                               \
    {                                                                                  \
        line l;                                                                        \
        ncclResult_t r = init_common(N, ctx, mask, &l);                                \
        if (r == ncclSuccess)                                                          \
            emit(&l);                                                                  \
        return r;                                                                      \
    }
REC_INIT_V1(1)
REC_INIT_V1(2)
REC_INIT_V1(3)

static ncclResult_t init_v4(void **ctx, int *mask, const char *name, uint64_t hash, int nnodes,
                            int nranks, int rank, ncclDebugLogger_t log)
{
    (void)log;
    line l;
    ncclResult_t r = init_common(4, ctx, mask, &l);
    if (r == ncclSuccess) {
        put(&l, ",\"comm_id\":%llu,\"nnodes\":%d,\"nranks\":%d,\"rank\":%d", (unsigned long long)hash,
            nnodes, nranks, rank);
        put_str(&l, "comm_name", name);
        emit(&l);
    }
    return r;
}

#define REC_INIT_V5(N)                                                                        \
    static ncclResult_t init_v##N(void **ctx, uint64_t id, int *mask, const char *name,       \
                                  int nnodes, int nranks, int rank, ncclDebugLogger_t log)    \
    {                                                                                         \
        (void)log;                                                                            \
        line l;                                                                               \
        ncclResult_t r = init_common(N, ctx, mask, &l);                                       \
        if (r == ncclSuccess) {                                                               \
            put(&l, ",\"comm_id\":%llu,\"nnodes\":%d,\"nranks\":%d,\"rank\":%d",              \
                (unsigned long long)id, nnodes, nranks, rank);                                \
            put_str(&l, "comm_name", name);                                                   \
            emit(&l);                                                                         \
        }                                                                                     \
        return r;                                                                             \
    }
REC_INIT_V5(5)
REC_INIT_V5(6)
REC_INIT_V5(7)

static unsigned type_index(uint64_t bit)
{
    return bit ? (unsigned)__builtin_ctzll(bit) : NSC_T_COUNT;
}

/* Header and proxy/net fields: the same names and offsets in every version. */
#define PUT_HEADER(l, d, ctx, h)                                                               \
    put(l, ",\"ctx\":\"%p\",\"handle\":\"%p\",\"type\":\"%s\",\"type_bits\":%llu,\"parent\":\"%p\",\"rank\":%d", \
        ctx, h, nsc_type_name(type_index((d)->type)) ? nsc_type_name(type_index((d)->type)) : "?", \
        (unsigned long long)(d)->type, (d)->parentObj, (d)->rank)

#define PUT_PROXY(l, d)                                                                        \
    do {                                                                                       \
        if ((d)->type == ncclProfileProxyOp)                                                   \
            put(l, ",\"pid_field\":%d,\"channelId\":%u,\"peer\":%d,\"nSteps\":%d,\"chunkSize\":%d,\"isSend\":%d", \
                (int)(d)->proxyOp.pid, (d)->proxyOp.channelId, (d)->proxyOp.peer,              \
                (d)->proxyOp.nSteps, (d)->proxyOp.chunkSize, (d)->proxyOp.isSend);             \
        else if ((d)->type == ncclProfileProxyStep)                                            \
            put(l, ",\"step\":%d", (d)->proxyStep.step);                                       \
    } while (0)

/* NetPlugin (v3 and later): the net plugin's id and descriptor address. */
#define PUT_NET(l, d)                                                                          \
    do {                                                                                       \
        if ((d)->type == ncclProfileNetPlugin)                                                 \
            put(l, ",\"id\":%lld,\"data\":\"%p\"", (long long)(d)->netPlugin.id,                \
                (d)->netPlugin.data);                                                          \
    } while (0)

/* Copy-engine events (v6 and later). */
#define PUT_CE(l, d)                                                                           \
    do {                                                                                       \
        if ((d)->type == ncclProfileCeColl) {                                                  \
            put(l, ",\"seqNumber\":%llu,\"ceSeqNum\":%u,\"count\":%zu,\"root\":%d,"            \
                   "\"sendBuff\":\"%p\",\"recvBuff\":\"%p\",\"stream\":\"%p\",\"intraBatchSync\":%s," \
                   "\"batchSize\":%u,\"numBatches\":%u",                                         \
                (unsigned long long)(d)->ceColl.seqNumber, (d)->ceColl.ceSeqNum,               \
                (d)->ceColl.count, (d)->ceColl.root, (d)->ceColl.sendBuff, (d)->ceColl.recvBuff, \
                (d)->ceColl.stream, (d)->ceColl.intraBatchSync ? "true" : "false",             \
                (d)->ceColl.batchSize, (d)->ceColl.numBatches);                                \
            put_str(l, "func", (d)->ceColl.func);                                              \
            put_str(l, "datatype", (d)->ceColl.datatype);                                      \
            put_str(l, "syncStrategy", (d)->ceColl.syncStrategy);                              \
        } else if ((d)->type == ncclProfileCeSync)                                             \
            put(l, ",\"isComplete\":%s,\"nRanks\":%d",                                         \
                (d)->ceCollSync.isComplete ? "true" : "false", (d)->ceCollSync.nRanks);        \
        else if ((d)->type == ncclProfileCeBatch)                                              \
            put(l, ",\"numOps\":%d,\"totalBytes\":%zu,\"useIntraSync\":%s",                    \
                (d)->ceCollBatch.numOps, (d)->ceCollBatch.totalBytes,                          \
                (d)->ceCollBatch.useIntraSync ? "true" : "false");                             \
    } while (0)

static void fields_v1(line *l, const ncclProfilerEventDescr_v1_t *d)
{
    if (d->type == ncclProfileColl) {
        put_str(l, "name", d->coll.name);
        put(l, ",\"commHash\":%llu,\"seqNumber\":%llu,\"func\":%u,\"sendBuff\":\"%p\",\"recvBuff\":\"%p\","
               "\"count\":%zu,\"root\":%d,\"datatype\":%u,\"op\":%u,\"trafficBytes\":%zu,"
               "\"nMaxChannels\":%u,\"nWarps\":%u,\"algo\":%u,\"proto\":%u,\"isCollnet\":%d,\"isNvls\":%d",
            (unsigned long long)d->coll.commHash, (unsigned long long)d->coll.seqNumber, d->coll.func,
            d->coll.sendBuff, d->coll.recvBuff, d->coll.count, d->coll.root, d->coll.datatype,
            d->coll.op, d->coll.trafficBytes, d->coll.nMaxChannels, d->coll.nWarps, d->coll.algo,
            d->coll.proto, d->coll.isCollnet, d->coll.isNvls);
    } else if (d->type == ncclProfileP2p) {
        put_str(l, "name", d->p2p.name);
        put(l, ",\"commHash\":%llu,\"func\":%u,\"buff\":\"%p\",\"datatype\":%u,\"count\":%zu,\"peer\":%d",
            (unsigned long long)d->p2p.commHash, d->p2p.func, d->p2p.buff, d->p2p.datatype,
            d->p2p.count, d->p2p.peer);
    } else
        PUT_PROXY(l, d);
}

/* v2 and v3 Coll/P2p: names of v3; v2 adds trafficBytes. */
#define PUT_V23(l, d)                                                                          \
    do {                                                                                       \
        if ((d)->type == ncclProfileColl) {                                                    \
            put_str(l, "name", (d)->coll.name);                                                \
            put(l, ",\"commHash\":%llu,\"seqNumber\":%llu,\"sendBuff\":\"%p\",\"recvBuff\":\"%p\"," \
                   "\"count\":%zu,\"root\":%d,\"nMaxChannels\":%u,\"nWarps\":%u",             \
                (unsigned long long)(d)->coll.commHash, (unsigned long long)(d)->coll.seqNumber, \
                (d)->coll.sendBuff, (d)->coll.recvBuff, (d)->coll.count, (d)->coll.root,       \
                (d)->coll.nMaxChannels, (d)->coll.nWarps);                                     \
            put_str(l, "func", (d)->coll.func);                                                \
            put_str(l, "datatype", (d)->coll.datatype);                                        \
            put_str(l, "algo", (d)->coll.algo);                                                \
            put_str(l, "proto", (d)->coll.proto);                                              \
        } else if ((d)->type == ncclProfileP2p) {                                              \
            put_str(l, "name", (d)->p2p.name);                                                 \
            put(l, ",\"commHash\":%llu,\"buff\":\"%p\",\"count\":%zu,\"peer\":%d",             \
                (unsigned long long)(d)->p2p.commHash, (d)->p2p.buff, (d)->p2p.count, (d)->p2p.peer); \
            put_str(l, "func", (d)->p2p.func);                                                 \
            put_str(l, "datatype", (d)->p2p.datatype);                                         \
        } else                                                                                 \
            PUT_PROXY(l, d);                                                                   \
    } while (0)

/* Coll/P2p/KernelCh of v4 and later. */
#define PUT_V4(l, d)                                                                           \
    do {                                                                                       \
        if ((d)->type == ncclProfileColl) {                                                    \
            put(l, ",\"seqNumber\":%llu,\"sendBuff\":\"%p\",\"recvBuff\":\"%p\",\"count\":%zu," \
                   "\"root\":%d,\"nChannels\":%u,\"nWarps\":%u",                               \
                (unsigned long long)(d)->coll.seqNumber, (d)->coll.sendBuff, (d)->coll.recvBuff, \
                (d)->coll.count, (d)->coll.root, (d)->coll.nChannels, (d)->coll.nWarps);       \
            put_str(l, "func", (d)->coll.func);                                                \
            put_str(l, "datatype", (d)->coll.datatype);                                        \
            put_str(l, "algo", (d)->coll.algo);                                                \
            put_str(l, "proto", (d)->coll.proto);                                              \
        } else if ((d)->type == ncclProfileP2p) {                                              \
            put(l, ",\"buff\":\"%p\",\"count\":%zu,\"peer\":%d,\"nChannels\":%u",              \
                (d)->p2p.buff, (d)->p2p.count, (d)->p2p.peer, (d)->p2p.nChannels);             \
            put_str(l, "func", (d)->p2p.func);                                                 \
            put_str(l, "datatype", (d)->p2p.datatype);                                         \
        } else if ((d)->type == ncclProfileKernelCh)                                           \
            put(l, ",\"channelId\":%u,\"pTimer\":%llu", (d)->kernelCh.channelId,               \
                (unsigned long long)(d)->kernelCh.pTimer);                                     \
        else {                                                                                 \
            PUT_PROXY(l, d);                                                                   \
            PUT_NET(l, d);                                                                     \
        }                                                                                      \
    } while (0)

/* API events and parentGroup of v5 and later. */
#define PUT_V5(l, d)                                                                           \
    do {                                                                                       \
        PUT_V4(l, d);                                                                          \
        if ((d)->type == ncclProfileColl)                                                      \
            put(l, ",\"parentGroup\":\"%p\"", (d)->coll.parentGroup);                          \
        else if ((d)->type == ncclProfileP2p)                                                  \
            put(l, ",\"parentGroup\":\"%p\"", (d)->p2p.parentGroup);                           \
        else if ((d)->type == ncclProfileGroupApi)                                             \
            put(l, ",\"graphCaptured\":%s,\"groupDepth\":%d",                                  \
                (d)->groupApi.graphCaptured ? "true" : "false", (d)->groupApi.groupDepth);     \
        else if ((d)->type == ncclProfileCollApi) {                                            \
            put(l, ",\"count\":%zu,\"root\":%d,\"stream\":\"%p\",\"graphCaptured\":%s",        \
                (d)->collApi.count, (d)->collApi.root, (d)->collApi.stream,                    \
                (d)->collApi.graphCaptured ? "true" : "false");                                \
            put_str(l, "func", (d)->collApi.func);                                             \
            put_str(l, "datatype", (d)->collApi.datatype);                                     \
        } else if ((d)->type == ncclProfileP2pApi) {                                           \
            put(l, ",\"count\":%zu,\"stream\":\"%p\",\"graphCaptured\":%s",                    \
                (d)->p2pApi.count, (d)->p2pApi.stream, (d)->p2pApi.graphCaptured ? "true" : "false"); \
            put_str(l, "func", (d)->p2pApi.func);                                              \
            put_str(l, "datatype", (d)->p2pApi.datatype);                                      \
        } else if ((d)->type == ncclProfileKernelLaunch)                                       \
            put(l, ",\"stream\":\"%p\"", (d)->kernelLaunch.stream);                            \
    } while (0)

static void fields_v7(line *l, const ncclProfilerEventDescr_v7_t *d)
{
    PUT_V5(l, d);
    if (d->type == ncclProfileColl) {
        put_str(l, "kernelVariant", d->coll.kernelVariant);
        put(l, ",\"isSymColl\":%s,\"userTag\":%llu", d->coll.isSymColl ? "true" : "false",
            (unsigned long long)d->coll.userTag);
    } else if (d->type == ncclProfileP2p)
        put(l, ",\"userTag\":%llu", (unsigned long long)d->p2p.userTag);
    else if (d->type == ncclProfileCollApi)
        put(l, ",\"userTag\":%llu", (unsigned long long)d->collApi.userTag);
    else if (d->type == ncclProfileP2pApi)
        put(l, ",\"userTag\":%llu", (unsigned long long)d->p2pApi.userTag);
    else if (d->type == ncclProfileCeColl)
        put(l, ",\"userTag\":%llu", (unsigned long long)d->ceColl.userTag);
    else if (d->type == ncclProfileKernelPhase) {
        put(l, ",\"channelId\":%u,\"phaseId\":%u,\"pTimer\":%llu", d->kernelPhase.channelId,
            d->kernelPhase.phaseId, (unsigned long long)d->kernelPhase.pTimer);
        put_str(l, "phaseName", d->kernelPhase.phaseName);
    }
    PUT_CE(l, d);
}

/* NCCLSCOPE_TEST_RECORD_MASK_AT: change NCCL's mask at the first start of a type. */
static void switch_mask(uint64_t type_bit)
{
    if (mask_at_type >= 0 && type_bit == 1ull << mask_at_type &&
        !__atomic_exchange_n(&mask_switched, 1, __ATOMIC_RELAXED))
        __atomic_store_n(nccl_mask, (int)mask_at_value, __ATOMIC_RELAXED);
}

/* NCCLSCOPE_TEST_RECORD_HOLD: hold the thread at the rank's nth event of the type. */
static void hold_step(uint64_t type_bit, int rank)
{
    if (type_bit != 1ull << hold_type || rank != hold_rank ||
        __atomic_add_fetch(&hold_seen, 1, __ATOMIC_RELAXED) != hold_nth)
        return;
    struct timespec t = {(time_t)(hold_ms / 1000), (long)(hold_ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
}

#define REC_START(N, BODY)                                                                    \
    static ncclResult_t start_v##N(void *ctx, void **h, ncclProfilerEventDescr_v##N##_t *d)   \
    {                                                                                         \
        line l;                                                                               \
        *h = new_handle();                                                                    \
        switch_mask((uint64_t)d->type);                                                       \
        hold_step((uint64_t)d->type, d->rank);                                                \
        begin(&l, "start", N);                                                                \
        PUT_HEADER(&l, d, ctx, *h);                                                           \
        BODY;                                                                                 \
        emit(&l);                                                                             \
        return calls_rc;                                                                      \
    }
REC_START(1, fields_v1(&l, d))
REC_START(2, PUT_V23(&l, d); if (d->type == ncclProfileColl) put(&l, ",\"trafficBytes\":%zu", d->coll.trafficBytes))
REC_START(3, PUT_V23(&l, d); PUT_NET(&l, d); if (d->type == ncclProfileKernelCh) put(&l, ",\"channelId\":%u", d->kernelCh.channelId))
REC_START(4, PUT_V4(&l, d))
REC_START(5, PUT_V5(&l, d))
REC_START(6, PUT_V5(&l, d); PUT_CE(&l, d))
REC_START(7, fields_v7(&l, d))

static ncclResult_t stop_event(void *h)
{
    line l;
    begin(&l, "stop", 0);
    put(&l, ",\"handle\":\"%p\"", h);
    emit(&l);
    return calls_rc;
}

static void state_head(line *l, int v, void *h, ncclProfilerEventState_t s)
{
    begin(l, "state", v);
    put(l, ",\"handle\":\"%p\",\"state\":%d,\"name\":\"%s\"", h, (int)s,
        nsc_state_name((unsigned)s) ? nsc_state_name((unsigned)s) : "?");
}

static ncclResult_t state_v1(void *h, ncclProfilerEventState_t s, ncclProfilerEventStateArgs_v1_t *a)
{
    line l;
    state_head(&l, 1, h, s);
    if (a && (int)s == NSC_S_PROXY_CTRL_APPEND_END)
        put(&l, ",\"appendedProxyOps\":%d", a->proxyCtrl.appendedProxyOps);
    else if (a)
        put(&l, ",\"transSize\":%zu,\"steps\":%d", a->proxyOp.transSize, a->proxyOp.steps);
    emit(&l);
    return calls_rc;
}

static ncclResult_t state_v4(void *h, ncclProfilerEventState_t s, ncclProfilerEventStateArgs_v4_t *a)
{
    line l;
    state_head(&l, 4, h, s);
    if (!a)
        ;
    else if ((int)s == NSC_S_PROXY_CTRL_APPEND_END)
        put(&l, ",\"appendedProxyOps\":%d", a->proxyCtrl.appendedProxyOps);
    else if ((int)s == NSC_S_KERNEL_CH_STOP || (int)s == NSC_S_KERNEL_PHASE_STOP)
        put(&l, ",\"pTimer\":%llu", (unsigned long long)a->kernelCh.pTimer);
    else if ((int)s == NSC_S_NET_PLUGIN_UPDATE)
        put(&l, ",\"data\":\"%p\"", a->netPlugin.data);
    else
        put(&l, ",\"transSize\":%zu", a->proxyStep.transSize);
    emit(&l);
    return calls_rc;
}

static ncclResult_t finalize(void *ctx)
{
    line l;
    begin(&l, "finalize", 0);
    put(&l, ",\"ctx\":\"%p\"", ctx);
    emit(&l);
    pthread_mutex_lock(&out_lock);
    if (--users == 0) {
        close(out_fd);
        out_fd = -1;
        munmap(arena, ARENA_BYTES);
    }
    pthread_mutex_unlock(&out_lock);
    return ncclSuccess;
}

#define EXPORT __attribute__((visibility("default")))
EXPORT const ncclProfiler_v1_t ncclProfiler_v1 = {"record", init_v1, start_v1, stop_event, state_v1, finalize};
EXPORT const ncclProfiler_v2_t ncclProfiler_v2 = {"record", init_v2, start_v2, stop_event, state_v1, finalize};
EXPORT const ncclProfiler_v3_t ncclProfiler_v3 = {"record", init_v3, start_v3, stop_event, state_v1, finalize};
EXPORT const ncclProfiler_v4_t ncclProfiler_v4 = {"record", init_v4, start_v4, stop_event, state_v4, finalize};
EXPORT const ncclProfiler_v5_t ncclProfiler_v5 = {"record", init_v5, start_v5, stop_event, state_v4, finalize};
EXPORT const ncclProfiler_v6_t ncclProfiler_v6 = {"record", init_v6, start_v6, stop_event, state_v4, finalize};
EXPORT const ncclProfiler_v7_t ncclProfiler_v7 = {"record", init_v7, start_v7, stop_event, state_v4, finalize};
