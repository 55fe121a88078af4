/* clocks.h: the host clock models the collector fits.
 *
 * Owns one nsc_clock_model per host (max_hosts of them at most), fed with the agents' completed probe
 * samples, loaded from the LMDB store at start and written back to the
 * collector's store periodically. The writer thread updates; the HTTP thread reads offsets for
 * /metrics; the owner's mutex (nsc_collector.clock_mu) guards both.
 */
#ifndef NCCLSCOPE_COLLECTOR_CLOCKS_H
#define NCCLSCOPE_COLLECTOR_CLOCKS_H

#include <event2/buffer.h>

#include "a2c.h"
#include "store.h"

typedef struct nsc_clocks nsc_clocks;

/* At most max_hosts hosts, and max_per_agent of them made by one agent's
 * samples (one agent cannot take every slot): a sample of another host is
 * refused; a store holding more loads only the first max_hosts. */
nsc_clocks *nsc_clocks_new(size_t max_hosts, size_t max_per_agent);
void nsc_clocks_free(nsc_clocks *c);
/* Load every stored model (replacing none that exists: call once, at start). */
int nsc_clocks_load(nsc_clocks *c, nsc_store *st);
/* Take a copy of host's stored model (arg: the nsc_clocks), unless the host
 * has one: what nsc_clocks_load does per model, for other stores' loaders.
 * 0 or NSC_STORE_ENOMEM. */
int nsc_clocks_adopt(void *clocks, const char *host, const nsc_clock_model *m);
/* Add a completed sample to its host's model; a nsc_clock_err on refusal,
 * NSC_CLOCKS_EFULL for a new host beyond max_hosts, NSC_CLOCKS_EAGENT beyond
 * the agent's max_per_agent. */
#define NSC_CLOCKS_EFULL (-100)
#define NSC_CLOCKS_EAGENT (-101)
int nsc_clocks_add(nsc_clocks *c, const nsc_a2c_probe *s);
/* Hand the models changed since the last call to put (the LMDB store's open
 * transaction, or the ClickHouse rows), adding how many to *n; a model
 * stays changed when put fails. */
typedef int (*nsc_clocks_put_fn)(void *arg, const char *host, const nsc_clock_model *m);
int nsc_clocks_put_dirty(nsc_clocks *c, nsc_clocks_put_fn put, void *arg, uint64_t *n);
/* host's offset (collector - host, modulo 2^64) near collector time ref_ns,
 * and its bound: what turns a window on the collector's clock into one on
 * the host's. -1 when the host has no model yet. */
int nsc_clocks_offset(nsc_clocks *c, const char *host, uint64_t ref_ns, uint64_t *off_ns, uint64_t *err_ns);
/* Prometheus gauges: offset (ns, collector - host) and error bound per host. */
void nsc_clocks_render(const nsc_clocks *c, struct evbuffer *out);

#endif
