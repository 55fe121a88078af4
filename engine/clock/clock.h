/* clock.h: the per-host clock model (host CLOCK_MONOTONIC -> collector time).
 *
 * Owns the fit of one host's offset and drift against the collector's clock
 * from NTP-style probes. Each probe is judged against the open segment's line
 * offset(h) = a + b*h: one that agrees becomes a point of it, one that
 * disagrees beyond its own uncertainty is held, and step_confirm held probes
 * in a row that agree with each other are a clock step, which starts a new
 * segment. A young segment (spanning less than prior_span_ns) keeps every
 * probe and combines its own drift with its predecessor's; a mature one keeps
 * the minimum round trip probe of each window. Lines are fitted robustly
 * (round-trip filter and weights, then residual rejection); a full segment
 * closes and its successor starts with an overlap of points so the lines
 * join smoothly. Raw timestamps are never changed: the model is applied when
 * reading, and it serializes so the collector can persist it
 * (docs/collector-clock.md, "Clock model").
 *
 * Host time must not go backwards (CLOCK_MONOTONIC); a reboot needs a new
 * model. Not thread-safe: one owner updates it, readers use a deserialized copy
 * or the owner's lock.
 */
#ifndef NCCLSCOPE_CLOCK_H
#define NCCLSCOPE_CLOCK_H

#include <stddef.h>
#include <stdint.h>

enum nsc_clock_err {
    NSC_CLOCK_OK = 0,
    NSC_CLOCK_EINVAL = -1,    /* sample impossible: t4 < t1, t3 < t2 or negative round trip */
    NSC_CLOCK_EORDER = -2,    /* sample older than the last accepted one (host time went back) */
    NSC_CLOCK_ENOMEM = -3,
    NSC_CLOCK_EEMPTY = -4,    /* no point fitted yet */
    NSC_CLOCK_ETRUNC = -5,    /* serialized model: ends early */
    NSC_CLOCK_EMAGIC = -6,    /* serialized model: not a clock model */
    NSC_CLOCK_EVERSION = -7,  /* serialized model: unknown version */
    NSC_CLOCK_EVALUE = -8,    /* serialized model: a field out of range or out of order */
    NSC_CLOCK_ETRAILING = -9  /* serialized model: bytes after the end */
};

const char *nsc_clock_strerror(int err);

/* One probe exchange. t1, t4 on the host's clock; t2, t3 on the collector's. */
typedef struct nsc_clock_sample {
    uint64_t t1;  /* agent sent */
    uint64_t t2;  /* collector received */
    uint64_t t3;  /* collector replied */
    uint64_t t4;  /* agent received the reply */
} nsc_clock_sample;

typedef struct nsc_clock_cfg {
    uint64_t window_ns;      /* a mature segment keeps one point per window (min round trip); 1 s */
    uint64_t step_ns;        /* offset jump beyond the probe's own uncertainty that is a step; 500 us */
    uint64_t prior_span_ns;  /* a segment shorter than this is young (see above); 10 s */
    uint32_t step_confirm;   /* consecutive agreeing probes off the line that confirm a step; 3 */
    uint32_t seg_max_points; /* a segment closes after this many points; 300 */
} nsc_clock_cfg;

/* A filtered probe: the offset ref - host at host time host_ns. */
typedef struct nsc_clock_point {
    uint64_t host_ns;
    int64_t off_ns;
    uint64_t rtt_ns;
} nsc_clock_point;

/* One fitted line. Applies to host times [start_ns, next segment's start_ns). */
typedef struct nsc_clock_seg {
    uint64_t start_ns;
    uint64_t anchor_host;  /* host time of the segment's first point */
    int64_t anchor_off;    /* that point's offset; the line is relative to both */
    double off_ns;         /* fitted offset at anchor_host, minus anchor_off */
    double drift;          /* d(offset)/d(host time), e.g. 1e-4 for 100 ppm */
    double err_ns;         /* error bound inside [first_ns, last_ns] */
    double drift_err;      /* added error per ns of extrapolation outside it */
    uint64_t first_ns, last_ns;  /* host times of the first and last inlier */
    uint32_t npoints;      /* points fitted (inliers and rejected) */
} nsc_clock_seg;

typedef struct nsc_clock_model {
    nsc_clock_cfg cfg;
    nsc_clock_seg *segs;     /* ordered by start_ns, strictly increasing */
    size_t nsegs, segs_cap;
    nsc_clock_point *pts;    /* points of the last (open) segment */
    size_t npts;
    nsc_clock_point *pending;/* probes that disagree with the open segment: a step? */
    size_t npending;
    double *work;            /* fit scratch, seg_max_points long */
    uint64_t last_t1;        /* newest accepted sample */
} nsc_clock_model;

void nsc_clock_cfg_default(nsc_clock_cfg *cfg);
/* cfg NULL: defaults. Returns 0 or NSC_CLOCK_EINVAL (zero fields) / ENOMEM. */
int nsc_clock_init(nsc_clock_model *m, const nsc_clock_cfg *cfg);
void nsc_clock_free(nsc_clock_model *m);

/* Add one probe. Returns 0, NSC_CLOCK_EINVAL, EORDER or ENOMEM. */
int nsc_clock_add(nsc_clock_model *m, const nsc_clock_sample *s);
/* Close the current window now: a mature segment keeps only its best probe. */
int nsc_clock_flush(nsc_clock_model *m);

/* Map a host time to the collector's time base. err_ns (may be NULL) gets an
 * error bound estimate: in the open segment's span its probes' bound for the
 * 100 ms window of host time holding host_ns, elsewhere the segment's worst
 * (grown with the distance outside its span). Returns 0 or NSC_CLOCK_EEMPTY. */
int nsc_clock_host_to_ref(const nsc_clock_model *m, uint64_t host_ns, uint64_t *ref_ns,
                          uint64_t *err_ns);
/* How far the inverse below may miss: a window's start on a host's clock is
 * taken this much earlier. */
#define NSC_CLOCK_INVERT_SLACK_NS UINT64_C(10000000)
/* The host time that fwd (a host-to-reference mapping such as the model's,
 * with arg) maps to about ref_ns: two steps of its offset, which changes
 * slowly; 0 when ref_ns lies before the offset. */
uint64_t nsc_clock_invert(uint64_t (*fwd)(const void *arg, uint64_t host_ns), const void *arg, uint64_t ref_ns);
/* m's host_to_ref as such a mapping (a host time it cannot map stays). */
uint64_t nsc_clock_model_fwd(const void *m, uint64_t host_ns);
/* The segment that applies to host_ns (the last whose start <= host_ns, else
 * the first); -1 if the model is empty. */
long nsc_clock_segment_for(const nsc_clock_model *m, uint64_t host_ns);

/* Serialization: exact size, then write; read into an uninitialized model. */
size_t nsc_clock_serialized_size(const nsc_clock_model *m);
void nsc_clock_serialize(const nsc_clock_model *m, uint8_t *buf);
int nsc_clock_deserialize(nsc_clock_model *m, const void *buf, size_t len);

/* The conversion of a range of host times (a block's), resolved once. When
 * exact, every host time in [h0, h1] converts to host + add with the bound
 * err_ns: what nsc_clock_host_to_ref returns for it, bit for bit. */
typedef struct nsc_clock_span {
    uint64_t h0, h1;
    uint64_t add;     /* ref_ns - host_ns, modulo 2^64 */
    uint64_t err_ns;
    int exact;        /* 0: convert each time with nsc_clock_host_to_ref */
} nsc_clock_span;

void nsc_clock_span_of(const nsc_clock_model *m, uint64_t h0, uint64_t h1, nsc_clock_span *sp);

#endif
