/* pxn.h: re-attachment of PXN events to the process that originated them.
 *
 * A foreign event (NSC_EVF_FOREIGN) was started by a proxy thread of one
 * process for another process of the same node. A foreign ProxyOp names its
 * origin by (origin_pid, origin_parent), where origin_parent is the
 * originator's Coll/P2p id (the plugin's handle); a foreign child (ProxyStep,
 * NetPlugin) names its foreign parent by its own process's id. Handle values
 * are reused, so a parent is found by id AND time: the candidate of that id,
 * in that process, with the latest start not after the foreign event's start
 * and at most window_ns before it.
 *
 * A resolved event moves to its originator: new id (top bit set, agent-wide
 * counter), the originator's context and rank, parent = the originating event
 * (or the moved foreign parent), FOREIGN kept, origin_pid = the proxy's pid.
 * An alias (proxy pid, proxy id) -> (origin pid, new id) goes with it. Events
 * whose origin has not arrived yet wait up to hold_ns; then they are emitted
 * unchanged in the proxy's section with NSC_EVF_UNRESOLVED. Nothing is dropped.
 *
 * Processes are named by the registry's unique keys; memory is bounded by
 * recent_cap (candidates and moved events, oldest forgotten) and pending_cap
 * (an event that finds the queue full is emitted unresolved at once).
 *
 * The held events outlive the agent process (held.c keeps them in the
 * spool): each has an id, and the resolver tells what changed since the
 * last save: the events held and not saved yet, the saved ones gone
 * (resolved or given up: emitted into the batch that save stores).
 */
#ifndef NCCLSCOPE_AGENT_PXN_H
#define NCCLSCOPE_AGENT_PXN_H

#include <stddef.h>
#include <stdint.h>

#include "a2c.h"
#include "event.h"

#define NSC_PXN_NEW_ID_BIT (1ull << 63)

typedef struct nsc_pxn_cfg {
    uint64_t window_ns, hold_ns;
    uint32_t recent_cap, pending_cap;
} nsc_pxn_cfg;

typedef struct nsc_pxn_sink {
    void *arg;
    /* Key of the live process origin_pid on the proxy's host, 0 if unknown. */
    uint64_t (*origin)(void *arg, uint64_t proxy_key, uint32_t origin_pid);
    /* Deliver ev to section_key's section; alias is NULL when unresolved. */
    void (*emit)(void *arg, uint64_t section_key, const nsc_event *ev, const nsc_a2c_alias *alias);
} nsc_pxn_sink;

typedef struct nsc_pxn_stats {
    uint64_t resolved, unresolved, pending, overflow, expired;
    uint64_t restored;  /* held again after a predecessor saved them */
} nsc_pxn_stats;

typedef struct nsc_pxn nsc_pxn;

nsc_pxn *nsc_pxn_new(const nsc_pxn_cfg *cfg, const nsc_pxn_sink *sink);
void nsc_pxn_free(nsc_pxn *x);
/* Remember a Coll or P2p of process key as a possible origin (others ignored). */
void nsc_pxn_note(nsc_pxn *x, uint64_t key, const nsc_event *ev);
/* A foreign event from process proxy_key (pid proxy_pid): resolved now, or held. */
void nsc_pxn_submit(nsc_pxn *x, uint64_t proxy_key, uint32_t proxy_pid, const nsc_event *ev,
                    uint64_t now_ns);
/* Retry held events; emit unresolved those held longer than hold_ns. */
void nsc_pxn_tick(nsc_pxn *x, uint64_t now_ns);
/* Retry once more, then emit everything still held as unresolved (shutdown). */
void nsc_pxn_drain(nsc_pxn *x);
void nsc_pxn_stats_get(const nsc_pxn *x, nsc_pxn_stats *st);

/* Hold again an event a previous agent process saved as hid (resolved now,
 * queued as saved, or given up when the queue is full). Returns 0, or -1
 * when nsc_pxn_gone is full: save, then call again. */
int nsc_pxn_restore(nsc_pxn *x, uint64_t hid, uint64_t proxy_key, uint32_t proxy_pid, const nsc_event *ev,
                    uint64_t now_ns);
typedef void nsc_pxn_held_fn(void *arg, uint64_t hid, uint64_t proxy_key, const nsc_event *ev);
/* Call fn for every held event not saved yet. */
void nsc_pxn_unsaved(const nsc_pxn *x, nsc_pxn_held_fn *fn, void *arg);
/* The ids of saved events no longer held (at most pending_cap). */
const uint64_t *nsc_pxn_gone(const nsc_pxn *x, size_t *n);
/* What nsc_pxn_unsaved and nsc_pxn_gone listed is now in the spool. */
void nsc_pxn_saved(nsc_pxn *x);
/* The last new id given to a re-attached event (0: none), saved with the
 * held events; a successor goes on from it, so no id is given twice. */
uint64_t nsc_pxn_last_id(const nsc_pxn *x);
void nsc_pxn_set_last_id(nsc_pxn *x, uint64_t id);
/* What the resolver remembers, for a successor: the candidates (key: the
 * process, ev: the Coll/P2p's id, start, rank, context) and the moved events
 * (key: the proxy process, ev: the proxy's id, start, and the rank and
 * context given; origin_pid and new_id where it went; both 0 for a
 * candidate). Each entry of either table has a sequence number, from 0.
 * Call fn for each entry still remembered put at or after from; returns the
 * sequence of the next entry. A successor puts them back with nsc_pxn_note
 * and nsc_pxn_moved. */
typedef void nsc_pxn_entry_fn(void *arg, uint64_t key, const nsc_event *ev, uint32_t origin_pid, uint64_t new_id);
uint64_t nsc_pxn_candidates(const nsc_pxn *x, uint64_t from, nsc_pxn_entry_fn *fn, void *arg);
uint64_t nsc_pxn_moved_since(const nsc_pxn *x, uint64_t from, nsc_pxn_entry_fn *fn, void *arg);
/* A moved event a predecessor re-attached: its children re-attach the same
 * way (the origin is looked up by origin_pid when one is met). */
void nsc_pxn_moved(nsc_pxn *x, uint64_t proxy_key, const nsc_event *ev, uint32_t origin_pid, uint64_t new_id);

#endif
