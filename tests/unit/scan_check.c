/* scan_check.c: nsc_batch_scan against nsc_batch_decode (see scan_check.h). */
#include "scan_check.h"

#include <stdlib.h>
#include <string.h>

#define SAME(a, b, n) ((n) == 0 || memcmp((a), (b), (n) * sizeof *(a)) == 0)

static int kept(const nsc_scan *s, const nsc_event *ev)
{
    return (s->keep_types >> ev->type & 1) || (ev->flags & s->keep_flags);
}

/* The record number of each decoded event, from a walk over msg. */
static const char *event_records(const void *msg, size_t len, uint32_t *at, size_t n)
{
    nsc_splice sp;
    size_t k = 0;
    if (nsc_splice_begin(&sp, msg, len) != NSC_WIRE_OK)
        return "the splicer cannot read an accepted batch";
    for (uint32_t r = 0;; r++) {
        int tag = nsc_splice_tag(&sp);
        if (tag < 0)
            return k == n ? NULL : "the splicer saw another number of events";
        if (tag < NSC_T_COUNT && k < n)
            at[k++] = r;
        if (nsc_splice_copy(&sp, NULL) != NSC_WIRE_OK)
            return "the splicer cannot step over a record of an accepted batch";
    }
}

static const char *compare_events(const void *msg, size_t len, const nsc_batch *d, const nsc_scan *s)
{
    uint32_t *at = calloc(d->nevents ? d->nevents : 1, sizeof *at);
    if (!at)
        return "out of memory in the check";
    const char *why = event_records(msg, len, at, d->nevents);
    size_t k = 0;
    for (size_t i = 0; !why && i < d->nevents; i++) {
        if (!kept(s, &d->events[i]))
            continue;
        if (k == s->b.nevents)
            why = "the scan left out an event it should keep";
        else if (memcmp(&s->b.events[k], &d->events[i], sizeof d->events[i]) != 0)
            why = "a kept event differs from its decoded form";
        else if (s->event_at[k++] != at[i])
            why = "a kept event has the wrong record number";
    }
    if (!why && k != s->b.nevents)
        why = "the scan kept an event it should not";
    free(at);
    return why;
}

static const char *compare(const void *msg, size_t len, const nsc_batch *d, const nsc_scan *s)
{
    const nsc_batch *b = &s->b;
    if (memcmp(&b->hdr, &d->hdr, sizeof d->hdr) != 0)
        return "the headers differ";
    if (s->nevents != d->nevents || s->nstates != d->nstates || s->ncompletions != d->ncompletions)
        return "the record counts differ";
    if (b->nstrs != d->nstrs || !SAME(b->strs, d->strs, d->nstrs))
        return "the strings differ";
    if (b->nctxs != d->nctxs || !SAME(b->ctxs, d->ctxs, d->nctxs))
        return "the contexts differ";
    if (b->has_counters != d->has_counters || memcmp(&b->counters, &d->counters, sizeof d->counters) != 0)
        return "the counters differ";
    size_t nstates = s->keep_states ? d->nstates : 0, ncompletions = s->keep_states ? d->ncompletions : 0;
    if (b->nstates != nstates || !SAME(b->states, d->states, nstates))
        return "the kept states differ";
    if (b->ncompletions != ncompletions || !SAME(b->completions, d->completions, ncompletions))
        return "the kept completions differ";
    return compare_events(msg, len, d, s);
}

const char *scan_check(const void *msg, size_t len, uint32_t keep_types, uint8_t keep_flags, nsc_scan *s)
{
    nsc_batch d;
    s->keep_types = keep_types;
    s->keep_flags = keep_flags;
    int want = nsc_batch_decode(msg, len, NULL, &d);
    int got = nsc_batch_scan(msg, len, NULL, s);
    const char *why = NULL;
    if (got != want)
        why = "the scan and the decoder return different codes";
    else if (got != NSC_WIRE_OK && (s->b.nevents || s->b.nstrs || s->b.nctxs || s->nevents))
        why = "a rejected scan holds records";
    else if (got == NSC_WIRE_OK)
        why = compare(msg, len, &d, s);
    nsc_batch_release(&d);
    return why;
}
