/* export.h: timeline records to a Perfetto (.pftrace) or Chrome JSON trace.
 *
 * Owns the mapping from timeline records (docs/api.md, one JSON object per
 * event) to tracks and slices, and the two writers. Records are written as
 * they arrive: memory grows with the number of tracks, never with the number
 * of events.
 *
 * Tracks: one process track per rank; under it one row per lane (event type,
 * plus the channel where the record has one). A lane's slices that overlap
 * go on separate backing tracks of that lane that share a sibling_merge_key
 * with SIBLING_MERGE_BEHAVIOR_BY_SIBLING_MERGE_KEY, so Perfetto shows them on
 * one row; no timestamp is ever moved. A record without an end (still in
 * flight) begins a slice that never ends. A slice ends at the record's
 * complete_ns (Coll and P2p: the real end), else its stop_ns. Every other
 * scalar member of the record (func, seq, algo, proto, datatype, ...) becomes
 * a slice argument (a debug annotation in Perfetto, "args" in Chrome JSON),
 * with bytes (count x datatype size) and graph_captured (the "graph" flag,
 * which graph replays carry from their capture) added. The header record
 * names the process tracks (rank, host, pid, GPU); in Chrome JSON its
 * scalar members (job, communicator, the window with its UTC times, the
 * wall clock) are the trace's "metadata".
 *
 * Two writers of records use it: `ncclscope export` (cli/timeline.c) and the
 * collector's /api/v1/export (collector/diagapi.c), so the web view's
 * download and the CLI's file are the same bytes.
 */
#ifndef NCCLSCOPE_EXPORT_H
#define NCCLSCOPE_EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include "json.h"

typedef enum nsc_export_format { NSC_EXPORT_PERFETTO, NSC_EXPORT_CHROME } nsc_export_format;

typedef struct nsc_export nsc_export;

typedef struct nsc_export_totals {
    uint64_t records;   /* records seen */
    uint64_t slices;    /* written as slices (begin and end) */
    uint64_t open;      /* begun, no end: in flight when queried */
    uint64_t skipped;   /* not events: no rank or start_ns */
    uint64_t tracks;    /* process, lane and backing tracks */
} nsc_export_totals;

/* Returns NULL when out of memory. The writer does not own out. */
nsc_export *nsc_export_new(FILE *out, nsc_export_format fmt);
/* One timeline record. Returns 0 or -1 (write error, out of memory). */
int nsc_export_record(nsc_export *x, const nsc_json *rec);
/* Finish the file (Chrome's closing bracket), fill totals, free x.
 * Returns 0, or -1 if any write failed. */
int nsc_export_finish(nsc_export *x, nsc_export_totals *totals);

/* Perfetto field numbers (protos/perfetto/trace/...), named for the tests. */
enum {
    NSC_PF_TRACE_PACKET = 1,             /* Trace.packet */
    NSC_PF_PACKET_TIMESTAMP = 8,         /* TracePacket.timestamp */
    NSC_PF_PACKET_SEQ_ID = 10,           /* TracePacket.trusted_packet_sequence_id */
    NSC_PF_PACKET_TRACK_EVENT = 11,      /* TracePacket.track_event */
    NSC_PF_PACKET_TRACK_DESCRIPTOR = 60, /* TracePacket.track_descriptor */
    NSC_PF_TD_UUID = 1,
    NSC_PF_TD_NAME = 2,
    NSC_PF_TD_PROCESS = 3,
    NSC_PF_TD_PARENT_UUID = 5,
    NSC_PF_TD_SIBLING_MERGE_BEHAVIOR = 15,
    NSC_PF_TD_SIBLING_MERGE_KEY = 16,
    NSC_PF_MERGE_BY_SIBLING_MERGE_KEY = 3,
    NSC_PF_PD_PID = 1,                   /* ProcessDescriptor */
    NSC_PF_PD_PROCESS_NAME = 6,
    NSC_PF_TE_DEBUG_ANNOTATIONS = 4,     /* TrackEvent */
    NSC_PF_TE_TYPE = 9,
    NSC_PF_TE_TRACK_UUID = 11,
    NSC_PF_TE_NAME = 23,
    NSC_PF_TE_SLICE_BEGIN = 1,
    NSC_PF_TE_SLICE_END = 2,
    NSC_PF_DA_BOOL = 2,                  /* DebugAnnotation */
    NSC_PF_DA_UINT = 3,
    NSC_PF_DA_INT = 4,
    NSC_PF_DA_DOUBLE = 5,
    NSC_PF_DA_STRING = 6,
    NSC_PF_DA_NAME = 10
};

#endif
