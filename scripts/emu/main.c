/* main.c: ncclscope-emu's command line: options, their checks, and the choice
 * between a cluster run, a replay, a benchmark and the hidden worker role. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"

void emu_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("ncclscope-emu: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static void usage(FILE *f)
{
    fputs("usage: ncclscope-emu [options]\n"
          "Drives an NCCL profiler plugin exactly as NCCL would, without GPUs.\n\n"
          "Plugin:\n"
          "  --plugin NAME|PATH     as NCCL_PROFILER_PLUGIN (default: that variable; unset:\n"
          "                         libnccl-profiler.so; none: no profiling)\n"
          "  --api N                use ncclProfiler_vN (1..7); default: the newest exported\n"
          "  --mask M               initial activation mask before init (number, all, or names)\n"
          "  --nccl-quirk NAME      make one of real NCCL's known profiler bugs (repeatable),\n"
          "                         see below\n"
          "Cluster:\n"
          "  --scenario NAME        what to emit (default coll), see below\n"
          "  --nodes N              simulated nodes (default 1, at most 64)\n"
          "  --ranks-per-node M     ranks per node (default 2; nodes x ranks at most 1024)\n"
          "  --ranks-as processes|threads   one process per rank (default), or per node\n"
          "  --comms N              communicators every rank inits (default 1, at most 256),\n"
          "                         each with its own hash; the scenario runs on each in turn\n"
          "  --node-clock N=OFF[:PPM][@AT_MS:STEP_NS]  node N's clock (clock shim): offset ns,\n"
          "                         drift ppm, and a step of STEP_NS (signed) AT_MS ms after the\n"
          "                         epoch (NCCLSCOPE_EMU_EPOCH_NS if set, else the launch)\n"
          "  --rundir-base DIR      node n's NCCLSCOPE_RUNDIR is DIR/node<n> (default /tmp/ncclscope-emu)\n"
          "  --host-prefix P        node n's NCCLSCOPE_HOSTNAME is P<n> (default node)\n"
          "  --gpu-spread-ns NS     each GPU timer is off by up to +-NS (default 60 s)\n"
          "  --gpu-drift-ppm D      GPU timer drift, alternating sign per rank (default 0)\n"
          "  --seed S               seed for comm hashes and GPU offsets (default 1)\n"
          "Work:\n"
          "  --iters N (default 3)  --ops N per group (default 1)  --channels N (default 2)\n"
          "  --count N elements (default 65536)  --dtype T (default ncclFloat32)\n"
          "  --func F (AllReduce, AllGather, ReduceScatter, Broadcast, Reduce; default AllReduce)\n"
          "  --also-func F          every group also calls F, after its --ops collectives\n"
          "  --algo RING|TREE (default RING)  --proto SIMPLE|LL|LL128 (default SIMPLE)\n"
          "  --chunk-size BYTES (default 131072)  --pace-us US between iterations (default 0)\n"
          "  --progress FILE        rank 0 writes how many iterations it has issued to FILE\n"
          "  --slow-rank R --slow-us US   a straggler: rank R waits US (default 2000) before\n"
          "                         each iteration (coll, grouped, ring, tree, pxn, split, train)\n"
          "  --hang-rank R --hang-after K --hang-ms MS   (scenario hang)\n"
          "  --kill-rank R --kill-after K [--kill-delay-ms MS]  (scenario kill; MS: quiet\n"
          "                         time before the SIGKILL, default 0)\n"
          "  --tp N --pp N --dp N   train: tensor, pipeline, data parallel sizes (default 1, 1,\n"
          "                         and the ranks left); tp ranks share a node\n"
          "  --microbatches N       train: microbatches per step (default 4)\n"
          "  --jitter-us US         every rank's host waits a seeded draw in [0, US] before\n"
          "                         each group (train; default 0)\n"
          "  --pxn-probe            PXN: fork a child that reads each foreign address\n"
          "  --unsynced-init        ranks do not wait for each other at init (for far more\n"
          "                         rank processes than cores: each runs as soon as it starts)\n"
          "  --ce                   collectives on the copy engine (v6+ CeColl/CeSync/CeBatch;\n"
          "                         one node, --func AllGather)\n"
          "  --kernel-phases        v7: KernelPhase events (3 per KernelCh)\n"
          "  --net-qps N            IB queue pairs per network step, one NetPlugin event each\n"
          "                         (default 1; 0: the net plugin reports nothing)\n"
          "Time (docs/emulator-model.md \"Time\"; model durations, times --time-scale in real time):\n"
          "  --time-scale X         real ns per model ns (default 1; 0: no model, ranks never wait)\n"
          "  --link-gbps G          a GPU's intra-node link, GB/s per direction (default 100)\n"
          "  --nic-gbps G           a node's NIC, GB/s per direction (default 25)\n"
          "  --link-lat-us U --nic-lat-us U   latency of one step (default 1 and 4)\n"
          "  --compute-us U         GPU work before every collective (default 0)\n"
          "Faults (besides --slow-rank, hang and kill):\n"
          "  --slow-gpu R:US        rank R's GPU work before each collective takes US longer\n"
          "  --slow-link A:B:F      the links from node A to node B have 1/F of their bandwidth\n"
          "  --slow-nic N:F         every link of node N has 1/F of its bandwidth\n"
          "  --stall R:K:CH:STEP[:COMM]  rank R stops sending in collective K, channel CH,\n"
          "                         from STEP; train: only in its COMM (tp, pp, dp)\n"
          "  --mismatch R:K:WHAT    rank R's collective K calls another count|dtype|func\n"
          "  --fault-from S         the late host, slow GPU, link and NIC act from iteration\n"
          "                         (train: step) S on (default 0)\n"
          "  --fault-every N        ... and then in every Nth one only (default 1)\n"
          "Output:\n"
          "  --summary FILE         write the JSON summary (- for stdout)\n"
          "Replay:\n"
          "  --replay FILE.jsonl    replay a recorded NCCL call log into the plugin\n"
          "  --speed X              replay speed factor (default 1; 0: as fast as possible)\n"
          "Benchmark:\n"
          "  --bench                tight start/state/stop loop, prints ns per call\n"
          "  --threads N (default 1)  --bench-iters N (default 2000000)  --reps N (default 7)\n"
          "Other:\n"
          "  --help                 this text\n"
          "  --version              print the version\n"
          "Scenarios:\n",
          f);
    for (int i = 0; i < emu_nscenarios; i++)
        fprintf(f, "  %-10s %s\n", emu_scenarios[i].name, emu_scenarios[i].help);
    fputs("NCCL quirks (docs/nccl-abi.md, \"Known NCCL bugs\"):\n", f);
    for (int i = 0; i < emu_nquirks; i++)
        fprintf(f, "  %-15s %s\n", emu_quirk_table[i].name, emu_quirk_table[i].help);
}

static long num(const char *opt, const char *v, long lo, long hi)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 0);
    if (errno || *end || x < lo || x > hi)
        emu_die("%s: '%s' is not a number in [%ld, %ld]", opt, v, lo, hi);
    return x;
}

static double real(const char *opt, const char *v)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || *end || x != x)
        emu_die("%s: '%s' is not a number", opt, v);
    return x;
}

/* N=OFF_NS[:PPM][@AT_MS:STEP_NS] */
static void node_clock(emu_opts *o, const char *v)
{
    static const char form[] = "expected N=OFFSET_NS[:PPM][@AT_MS:STEP_NS]";
    char *end;
    errno = 0;
    long node = strtol(v, &end, 10);
    if (*end != '=' || node < 0 || node >= EMU_MAX_NODES)
        emu_die("--node-clock: %s, got '%s'", form, v);
    long long off = strtoll(end + 1, &end, 10), at_ms = 0, step = 0;
    double ppm = 0;
    if (*end == ':')
        ppm = strtod(end + 1, &end);
    if (*end == '@') {
        at_ms = strtoll(end + 1, &end, 10);
        if (*end != ':')
            emu_die("--node-clock: %s, got '%s'", form, v);
        step = strtoll(end + 1, &end, 10);
        if (step == 0)
            emu_die("--node-clock: a step of 0 ns in '%s'", v);
    }
    if (*end)
        emu_die("--node-clock: %s, got '%s'", form, v);
    if (errno || ppm != ppm || ppm < -1000 || ppm > 1000 || at_ms < 0 || at_ms > 86400000 ||
        step < -3600000000000LL || step > 3600000000000LL)
        emu_die("--node-clock: out of range: '%s'", v);
    o->node_clock[node] = (emu_node_clock){off, ppm, at_ms * 1000000, step};
}

enum { O_API = 256, O_MASK, O_QUIRK, O_SCEN, O_NODES, O_RPN, O_AS, O_COMMS, O_NCLOCK, O_RUNDIR, O_HOSTP, O_SPREAD,
       O_GDRIFT, O_SEED, O_ITERS, O_OPS, O_CH, O_COUNT, O_DTYPE, O_FUNC, O_ALSO, O_ALGO, O_PROTO, O_CHUNK,
       O_PACE, O_PROGRESS, O_SRANK, O_SUS, O_HRANK, O_HAFTER, O_HMS, O_KRANK, O_KAFTER, O_KDELAY, O_PROBE, O_UNSYNCED, O_CE, O_PHASES, O_QPS, O_SUMMARY, O_REPLAY, O_SPEED,
       O_TSCALE, O_LINK, O_NIC, O_LLAT, O_NLAT, O_COMPUTE, O_SGPU, O_SLINK, O_SNIC, O_STALL, O_MISMATCH,
       O_TP, O_PP, O_DP, O_MICRO, O_JITTER, O_FFROM, O_FEVERY,
       O_BENCH, O_THREADS, O_BITERS, O_REPS, O_WORKER, O_PLUGIN, O_HELP, O_VERSION };

static const char *one_of(const char *opt, const char *v, const char *const *allowed);

static double positive(const char *opt, const char *v, double lo, double hi)
{
    double x = real(opt, v);
    if (x < lo || x > hi)
        emu_die("%s: '%s' is not in [%g, %g]", opt, v, lo, hi);
    return x;
}

/* A fault's "A:B:..." fields: n integers, then a number or a word. */
static void fields(const char *opt, const char *v, int n, long *ints, const char **rest)
{
    char *end = (char *)v;
    for (int i = 0; i < n; i++) {
        errno = 0;
        ints[i] = strtol(end, &end, 10);
        if (errno || ints[i] < 0 || *end != ':')
            emu_die("%s: cannot read '%s' (see --help)", opt, v);
        end++;
    }
    *rest = end;
}

/* --stall's STEP[:COMM]: the first step that is not sent, and the train
 * communicator it acts in (the rank's first collective K, whichever, if none). */
static void stall_step(emu_model *m, const char *v)
{
    static const char *const comms[] = {"tp", "pp", "dp", NULL};
    char *end;
    errno = 0;
    long step = strtol(v, &end, 10);
    if (errno || end == v || step < 0 || step > 1 << 20 || (*end && *end != ':'))
        emu_die("--stall: '%s' is not STEP[:COMM] (see --help)", v);
    m->stall_step = (int)step;
    m->stall_comm = *end ? one_of("--stall", end + 1, comms) : NULL;
}

static void fault(emu_opts *o, int c, const char *v)
{
    emu_model *m = &o->model;
    long f[3];
    const char *rest;
    switch (c) {
    case O_SGPU:
        fields("--slow-gpu", v, 1, f, &rest);
        m->slow_gpu_rank = (int)f[0], m->slow_gpu_us = positive("--slow-gpu", rest, 0, 1e7);
        break;
    case O_SLINK:
        fields("--slow-link", v, 2, f, &rest);
        m->slow_link_from = (int)f[0], m->slow_link_to = (int)f[1];
        m->slow_link_factor = positive("--slow-link", rest, 1, 1e6);
        break;
    case O_SNIC:
        fields("--slow-nic", v, 1, f, &rest);
        m->slow_nic_node = (int)f[0], m->slow_nic_factor = positive("--slow-nic", rest, 1, 1e6);
        break;
    case O_STALL:
        fields("--stall", v, 3, f, &rest);
        m->stall_rank = (int)f[0], m->stall_coll = (int)f[1], m->stall_ch = (int)f[2];
        stall_step(m, rest);
        break;
    default:
        fields("--mismatch", v, 2, f, &rest);
        m->mismatch_rank = (int)f[0], m->mismatch_coll = (int)f[1];
        m->mismatch_what = one_of("--mismatch", rest, (const char *const[]){"count", "dtype", "func", NULL});
        break;
    }
}

static const char *one_of(const char *opt, const char *v, const char *const *allowed)
{
    for (int i = 0; allowed[i]; i++)
        if (strcmp(v, allowed[i]) == 0)
            return allowed[i];
    emu_die("%s: '%s' is not allowed (see --help)", opt, v);
}


static const struct option long_opts[] = {
    {"plugin", 1, 0, O_PLUGIN}, {"api", 1, 0, O_API}, {"mask", 1, 0, O_MASK}, {"nccl-quirk", 1, 0, O_QUIRK},
    {"scenario", 1, 0, O_SCEN}, {"nodes", 1, 0, O_NODES}, {"ranks-per-node", 1, 0, O_RPN},
    {"ranks-as", 1, 0, O_AS}, {"comms", 1, 0, O_COMMS}, {"node-clock", 1, 0, O_NCLOCK}, {"rundir-base", 1, 0, O_RUNDIR},
    {"host-prefix", 1, 0, O_HOSTP}, {"gpu-spread-ns", 1, 0, O_SPREAD},
    {"gpu-drift-ppm", 1, 0, O_GDRIFT}, {"seed", 1, 0, O_SEED}, {"iters", 1, 0, O_ITERS},
    {"ops", 1, 0, O_OPS}, {"channels", 1, 0, O_CH}, {"count", 1, 0, O_COUNT},
    {"dtype", 1, 0, O_DTYPE}, {"func", 1, 0, O_FUNC}, {"also-func", 1, 0, O_ALSO}, {"algo", 1, 0, O_ALGO},
    {"proto", 1, 0, O_PROTO}, {"chunk-size", 1, 0, O_CHUNK}, {"pace-us", 1, 0, O_PACE},
    {"progress", 1, 0, O_PROGRESS},
    {"slow-rank", 1, 0, O_SRANK}, {"slow-us", 1, 0, O_SUS},
    {"hang-rank", 1, 0, O_HRANK}, {"hang-after", 1, 0, O_HAFTER}, {"hang-ms", 1, 0, O_HMS},
    {"kill-rank", 1, 0, O_KRANK}, {"kill-after", 1, 0, O_KAFTER},
    {"kill-delay-ms", 1, 0, O_KDELAY}, {"pxn-probe", 0, 0, O_PROBE},
    {"unsynced-init", 0, 0, O_UNSYNCED},
    {"ce", 0, 0, O_CE}, {"kernel-phases", 0, 0, O_PHASES}, {"net-qps", 1, 0, O_QPS},
    {"time-scale", 1, 0, O_TSCALE}, {"link-gbps", 1, 0, O_LINK}, {"nic-gbps", 1, 0, O_NIC},
    {"link-lat-us", 1, 0, O_LLAT}, {"nic-lat-us", 1, 0, O_NLAT}, {"compute-us", 1, 0, O_COMPUTE},
    {"slow-gpu", 1, 0, O_SGPU}, {"slow-link", 1, 0, O_SLINK}, {"slow-nic", 1, 0, O_SNIC},
    {"stall", 1, 0, O_STALL}, {"mismatch", 1, 0, O_MISMATCH}, {"tp", 1, 0, O_TP}, {"pp", 1, 0, O_PP},
    {"dp", 1, 0, O_DP}, {"microbatches", 1, 0, O_MICRO}, {"jitter-us", 1, 0, O_JITTER},
    {"fault-from", 1, 0, O_FFROM}, {"fault-every", 1, 0, O_FEVERY},
    {"summary", 1, 0, O_SUMMARY}, {"replay", 1, 0, O_REPLAY}, {"speed", 1, 0, O_SPEED},
    {"bench", 0, 0, O_BENCH}, {"threads", 1, 0, O_THREADS}, {"bench-iters", 1, 0, O_BITERS},
    {"reps", 1, 0, O_REPS}, {"_worker", 1, 0, O_WORKER}, {"help", 0, 0, O_HELP},
    {"version", 0, 0, O_VERSION}, {0, 0, 0, 0}};

static const char *const funcs[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce", NULL};
static const char *const algos[] = {"RING", "TREE", NULL};
static const char *const protos[] = {"SIMPLE", "LL", "LL128", NULL};
static const char *const dtypes[] = {"ncclInt8", "ncclUint8", "ncclInt32", "ncclUint32", "ncclInt64",
                                     "ncclUint64", "ncclFloat16", "ncclFloat32", "ncclFloat64",
                                     "ncclBfloat16", NULL};

static void parse_one(emu_opts *o, int c, const char *v)
{
    switch (c) {
    case O_PLUGIN: o->plugin = v; break;
    case O_API: o->api = (int)num("--api", v, 1, EMU_MAX_VERSION); break;
    case O_MASK: o->mask = v; break;
    case O_QUIRK:
        if (!emu_quirk_bit(v))
            emu_die("--nccl-quirk: unknown quirk '%s' (see --help)", v);
        o->quirks |= emu_quirk_bit(v);
        break;
    case O_SCEN:
        if (!emu_scenario_find(v))
            emu_die("--scenario: unknown scenario '%s' (see --help)", v);
        o->scenario = v;
        break;
    case O_NODES: o->nodes = (int)num("--nodes", v, 1, EMU_MAX_NODES); break;
    case O_RPN: o->ranks_per_node = (int)num("--ranks-per-node", v, 1, EMU_MAX_RANKS); break;
    case O_COMMS: o->comms = (int)num("--comms", v, 1, EMU_MAX_COMMS); break;
    case O_AS:
        o->threads = one_of("--ranks-as", v, (const char *const[]){"processes", "threads", NULL})[0] == 't';
        break;
    case O_NCLOCK: node_clock(o, v); break;
    case O_RUNDIR: o->rundir_base = v; break;
    case O_HOSTP: o->host_prefix = v; break;
    case O_SPREAD: o->gpu_spread_ns = num("--gpu-spread-ns", v, 0, 3600000000000L); break;
    case O_GDRIFT: o->gpu_drift_ppm = real("--gpu-drift-ppm", v); break;
    case O_SEED: o->seed = (uint64_t)num("--seed", v, 0, 0x7fffffffffffffffL); break;
    case O_ITERS: o->iters = (int)num("--iters", v, 0, 1000000); break;
    case O_OPS: o->ops = (int)num("--ops", v, 1, 64); break;
    case O_CH: o->channels = (int)num("--channels", v, 1, 64); break;
    case O_COUNT: o->count = (size_t)num("--count", v, 1, 1L << 40); break;
    case O_DTYPE: o->dtype = one_of("--dtype", v, dtypes); break;
    case O_FUNC: o->func = one_of("--func", v, funcs); break;
    case O_ALSO: o->also_func = one_of("--also-func", v, funcs); break;
    case O_ALGO: o->algo = one_of("--algo", v, algos); break;
    case O_PROTO: o->proto = one_of("--proto", v, protos); break;
    case O_CHUNK: o->chunk_size = (int)num("--chunk-size", v, 512, 1 << 26); break;
    case O_PACE: o->pace_us = (int)num("--pace-us", v, 0, 10000000); break;
    case O_PROGRESS: o->progress = v; break;
    case O_SRANK: o->slow_rank = (int)num("--slow-rank", v, 0, EMU_MAX_RANKS - 1); break;
    case O_SUS: o->slow_us = (int)num("--slow-us", v, 0, 10000000); break;
    case O_HRANK: o->hang_rank = (int)num("--hang-rank", v, 0, EMU_MAX_RANKS - 1); break;
    case O_HAFTER: o->hang_after = (int)num("--hang-after", v, 0, 1000000); break;
    case O_HMS: o->hang_ms = (int)num("--hang-ms", v, 0, 600000); break;
    case O_KRANK: o->kill_rank = (int)num("--kill-rank", v, 0, EMU_MAX_RANKS - 1); break;
    case O_KAFTER: o->kill_after = (int)num("--kill-after", v, 0, 1000000); break;
    case O_KDELAY: o->kill_delay_ms = (int)num("--kill-delay-ms", v, 0, 60000); break;
    case O_PROBE: o->pxn_probe = true; break;
    case O_UNSYNCED: o->unsynced_init = true; break;
    case O_CE: o->ce = true; break;
    case O_PHASES: o->kernel_phases = true; break;
    case O_QPS: o->net_qps = (int)num("--net-qps", v, 0, 8); break;
    case O_TSCALE: o->model.time_scale = positive("--time-scale", v, 0, 1000); break;
    case O_LINK: o->model.link_gbps = positive("--link-gbps", v, 0.001, 1e5); break;
    case O_NIC: o->model.nic_gbps = positive("--nic-gbps", v, 0.001, 1e5); break;
    case O_LLAT: o->model.link_lat_us = positive("--link-lat-us", v, 0, 1e6); break;
    case O_NLAT: o->model.nic_lat_us = positive("--nic-lat-us", v, 0, 1e6); break;
    case O_COMPUTE: o->model.compute_us = positive("--compute-us", v, 0, 1e7); break;
    case O_SGPU: case O_SLINK: case O_SNIC: case O_STALL: case O_MISMATCH: fault(o, c, v); break;
    case O_TP: o->tp = (int)num("--tp", v, 1, EMU_MAX_RANKS); break;
    case O_PP: o->pp = (int)num("--pp", v, 1, EMU_MAX_RANKS); break;
    case O_DP: o->dp = (int)num("--dp", v, 1, EMU_MAX_RANKS); break;
    case O_MICRO: o->microbatches = (int)num("--microbatches", v, 1, 4096); break;
    case O_JITTER: o->jitter_us = (int)num("--jitter-us", v, 0, 10000000); break;
    case O_FFROM: o->model.fault_from = (int)num("--fault-from", v, 0, 1000000); break;
    case O_FEVERY: o->model.fault_every = (int)num("--fault-every", v, 1, 1000000); break;
    case O_SUMMARY: o->summary = v; break;
    case O_REPLAY: o->replay = v; break;
    case O_SPEED: o->speed = real("--speed", v); break;
    case O_BENCH: o->bench = true; break;
    case O_THREADS: o->bench_threads = (int)num("--threads", v, 1, 256); break;
    case O_BITERS: o->bench_iters = num("--bench-iters", v, 1, 1L << 40); break;
    case O_REPS: o->bench_reps = (int)num("--reps", v, 1, 1000); break;
    case O_WORKER: o->worker = v; break;
    case O_HELP: usage(stdout); exit(0);
    case O_VERSION: printf("ncclscope-emu %s\n", NSC_VERSION); exit(0);
    default: usage(stderr); exit(2);
    }
}

/* train: dp is what tp x pp leave; tensor-parallel groups stay in a node,
 * as frameworks place them (their AllReduces need NVLink). */
static void train_sizes(emu_opts *o, int nranks)
{
    if (o->kill_rank >= 0)
        emu_die("train: --kill-rank is not modelled (the kill scenario is)");
    if (!o->dp)
        o->dp = nranks / (o->tp * o->pp);
    if (o->tp * o->pp * o->dp != nranks)
        emu_die("train: --tp x --pp x --dp must be the number of ranks (%d)", nranks);
    if (o->ranks_per_node % o->tp)
        emu_die("train: --tp must divide --ranks-per-node (a tensor-parallel group stays in a node)");
}

/* Scenario-implied settings and cross-option checks. */
static void finish_options(emu_opts *o)
{
    int nranks = o->nodes * o->ranks_per_node;
    const char *s = o->scenario;
    if (nranks > EMU_MAX_RANKS)
        emu_die("--nodes x --ranks-per-node: at most %d ranks", EMU_MAX_RANKS);
    if (strcmp(s, "ring") == 0 || strcmp(s, "tree") == 0)
        o->algo = s[0] == 'r' ? "RING" : "TREE";
    if (strcmp(s, "hang") == 0 && o->hang_rank < 0)
        o->hang_rank = nranks - 1;
    if (strcmp(s, "kill") == 0 && o->kill_rank < 0)
        o->kill_rank = nranks - 1;
    if (o->comms > 1 && (strcmp(s, "pxn") == 0 || strcmp(s, "split") == 0 || strcmp(s, "train") == 0 ||
                         o->hang_rank >= 0 || o->kill_rank >= 0 || o->replay || o->bench))
        emu_die("--comms: several communicators per rank work with the coll, multigpu, grouped, "
                "p2p, alltoall, ring, tree and graph scenarios");
    if (strcmp(s, "train") == 0)
        train_sizes(o, nranks);
    else if (o->model.stall_comm)
        emu_die("--stall R:K:CH:STEP:COMM: communicators by name are the train scenario's");
    if (strcmp(s, "alltoall") == 0 && nranks > 32)
        emu_die("alltoall: at most 32 ranks (a send and a receive per rank in one group of at most 64)");
    if (o->hang_rank >= nranks || o->kill_rank >= nranks || o->slow_rank >= nranks)
        emu_die("--hang-rank/--kill-rank/--slow-rank must be below the number of ranks (%d)", nranks);
    const emu_model *m = &o->model;
    if (m->slow_gpu_rank >= nranks || m->stall_rank >= nranks || m->mismatch_rank >= nranks)
        emu_die("--slow-gpu/--stall/--mismatch: the rank must be below the number of ranks (%d)", nranks);
    if (m->slow_link_from >= o->nodes || m->slow_link_to >= o->nodes || m->slow_nic_node >= o->nodes)
        emu_die("--slow-link/--slow-nic: no such node");
    if ((m->slow_gpu_rank >= 0 || m->slow_link_from >= 0 || m->slow_nic_node >= 0 || m->stall_rank >= 0 ||
         m->mismatch_rank >= 0) && !emu_model_on(o))
        emu_die("--slow-gpu/--slow-link/--slow-nic/--stall/--mismatch need the model (--time-scale > 0)");
    if (o->kill_rank >= 0 && (o->threads || emu_scenario_find(s)->one_thread_per_node))
        emu_die("killing a rank needs ranks as processes");
    if (strcmp(s, "pxn") == 0 && (o->threads || o->ranks_per_node < 2 || o->nodes < 2))
        emu_die("pxn needs ranks as processes, --nodes >= 2 and --ranks-per-node >= 2");
    if (o->ce && (o->nodes != 1 || strcmp(o->func, "AllGather") != 0))
        emu_die("--ce: NCCL runs AllGather on the copy engine within one node: use --nodes 1 "
                "--func AllGather");
    if (emu_scenario_find(s)->one_thread_per_node && o->ranks_per_node > 8)
        emu_die("multigpu drives at most 8 GPUs per thread");
    for (int n = o->nodes; n < EMU_MAX_NODES; n++)
        if (o->node_clock[n].offset_ns || o->node_clock[n].drift_ppm || o->node_clock[n].step_ns)
            emu_die("--node-clock: node %d does not exist", n);
    emu_quirks = o->quirks;
    if (o->mask) {
        uint32_t m;
        if (nsc_mask_parse(o->mask, &m))
            emu_die("--mask: cannot parse '%s'", o->mask);
        emu_mask = (int)m;
    }
}

int main(int argc, char **argv)
{
    emu_opts o = {.scenario = "coll", .nodes = 1, .ranks_per_node = 2, .comms = 1, .iters = 3, .ops = 1,
                  .channels = 2, .count = 65536, .func = "AllReduce", .dtype = "ncclFloat32",
                  .algo = "RING", .proto = "SIMPLE", .chunk_size = 131072, .net_qps = 1, .slow_rank = -1, .slow_us = 2000,
                  .tp = 1, .pp = 1, .microbatches = 4, .hang_rank = -1,
                  .hang_after = 1, .hang_ms = 200, .kill_rank = -1, .kill_after = 1, .seed = 1,
                  .gpu_spread_ns = 60000000000L, .rundir_base = "/tmp/ncclscope-emu",
                  .host_prefix = "node", .speed = 1.0, .bench_threads = 1, .bench_reps = 7,
                  .bench_iters = 2000000,
                  .model = {.time_scale = 1, .link_gbps = 100, .nic_gbps = 25, .link_lat_us = 1,
                            .nic_lat_us = 4, .slow_gpu_rank = -1, .slow_link_from = -1, .slow_link_to = -1,
                            .slow_link_factor = 1, .slow_nic_node = -1, .slow_nic_factor = 1,
                            .stall_rank = -1, .mismatch_rank = -1, .mismatch_what = "count",
                            .fault_every = 1}};
    int c;
    while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1)
        parse_one(&o, c == 'h' ? O_HELP : c, optarg);
    if (optind < argc)
        emu_die("unexpected argument '%s' (see --help)", argv[optind]);
    finish_options(&o);
    if (o.worker)
        return emu_worker_main(&o);
    if (o.bench)
        return emu_bench_run(&o);
    if (o.replay)
        return emu_replay_run(&o);
    return emu_cluster_run(&o, argc, argv);
}
