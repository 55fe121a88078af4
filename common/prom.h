/* prom.h: the Prometheus text exposition lines the agent and the collector
 * write on /metrics: a family's HELP and TYPE, a one-sample family, and label
 * values. Arguments always in the order name, type, help.
 *
 * Label values often come from a peer (an agent id, a host name, a job id),
 * so they are always written through nsc_prom_escape or nsc_prom_label: a
 * value can then neither end its label nor start a line of its own, and it
 * is valid UTF-8, which the format requires of every label value. */
#ifndef NSC_PROM_H
#define NSC_PROM_H

#include <stddef.h>
#include <stdint.h>

struct evbuffer;

/* "# HELP name help" and "# TYPE name type", each on its line. */
void nsc_prom_head(struct evbuffer *b, const char *name, const char *type, const char *help);

/* The head and one unlabelled sample "name v". */
void nsc_prom_u64(struct evbuffer *b, const char *name, const char *type, const char *help, uint64_t v);

/* v as a label value (without the quotes) into out, NUL-terminated; its
 * length. Backslash, quote and newline are escaped; other control bytes and
 * bytes that are not valid UTF-8 become '?'. A value that does not fit is cut
 * at a character boundary. room >= 1. */
size_t nsc_prom_escape(char *out, size_t room, const char *v);

/* The same appended to b, whatever its length. */
void nsc_prom_label(struct evbuffer *b, const char *v);

#endif
