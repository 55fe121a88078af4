/* rconset.c: since when and how often a process is late of its own, from
 * the timeline of records that the follow across communicators builds
 * (rcfw.h): the onset of a run of its late collectives, or of a beat of
 * them, moved back over a loaded machine's pauses, and the beat counted
 * from there as a communicator's analysis counts it (rclate.c). */
#include <stdint.h>

#include "figures.h"
#include "rcfw.h"
#include "rcint.h"

/* A run's first collective, moved back to the earliest of the process's
 * collectives in that communicator just before it whose own time was as far
 * beyond the others' (the lateness threshold): late of its own, but
 * behind a rank later still (at a job's start, a process that started
 * late). Up to RC_FOLLOW_WEAK in a row without are passed over: the others'
 * own times are noisy at a job's start too. */
static int64_t run_start(const nsc_rc_follow *w, int64_t k)
{
    int64_t on = k;
    int weak = 0;
    for (int64_t i = k - 1; i >= 0 && w->r[i].who == w->r[k].who && weak <= RC_FOLLOW_WEAK; i--) {
        if (w->r[i].comm != w->r[k].comm || w->r[i].p2p)
            continue;
        weak = w->r[i].excess < NSC_FIG_LATE_MIN_NS ? weak + 1 : 0;
        on = weak ? on : i;
    }
    return on;
}

/* A process's onset in a communicator: its first collective there late of
 * its own by its whole timeline (the communicator's own analysis may have
 * split the first ones wrongly: another communicator's work in its gaps)
 * that begins a run: the next
 * two such each within RC_LATE_MAX_EVERY of its collectives there of the
 * one before (a loaded machine's pauses make lone ones, and pairs), moved
 * back by run_start. The first of them all if none begins a run, -1 if
 * there is none. */
int64_t nsc_rc_onset_rec(const nsc_rc_follow *w, uint32_t who, uint32_t comm)
{
    int64_t first = -1, run[2] = {-1, -1};
    uint64_t nth = 0, at[2] = {0, 0};
    for (size_t i = 0; i < w->n; i++) {
        const fw_rec *x = &w->r[i];
        if (x->who != who || x->comm != comm || x->p2p)
            continue;
        nth++;
        if (!x->own_late)
            continue;
        if (run[0] >= 0 && nth - at[1] <= RC_LATE_MAX_EVERY && at[1] - at[0] <= RC_LATE_MAX_EVERY)
            return run_start(w, run[0]);
        first = first < 0 ? (int64_t)i : first;
        run[0] = run[1], at[0] = at[1];
        run[1] = (int64_t)i, at[1] = nth;
    }
    return first;
}

/* The process's record of collective seq in communicator comm, -1 none. */
int64_t nsc_rc_coll_rec(const nsc_rc_follow *w, uint32_t who, uint32_t comm, uint64_t seq)
{
    for (size_t i = 0; i < w->n; i++)
        if (w->r[i].who == who && w->r[i].comm == comm && !w->r[i].p2p && w->r[i].seq == seq)
            return (int64_t)i;
    return -1;
}

/* A late rank's onset on a beat of `every` collectives (its communicator's
 * analysis found it on the beat from record k on: a loaded machine's pauses
 * between may begin a run of the timeline's before it), or of `every`
 * Send/Recv when record k is one (rcbeats.c), moved back from record k by
 * whole beats while its own time there was as far beyond the others' (late
 * of its own, but behind a rank later still), passing over one beat
 * without: at a training job's step starts a loaded machine pauses other
 * ranks longer now and then, and stamps the end a host waited for before
 * its Recv milliseconds late (its gap there reads 0). The process's first
 * record, whose own time has no earlier end to be measured from, does not
 * part the run (at a job's start a rank that started later still hides
 * the fault's first). */
int64_t nsc_rc_beat_start(const nsc_rc_follow *w, int64_t k, uint64_t every)
{
    int64_t on = k;
    uint64_t nth = 0;
    int weak = 0;
    for (int64_t i = k - 1; k >= 0 && i >= 0 && w->r[i].who == w->r[k].who && weak <= 1; i--) {
        if (w->r[i].comm != w->r[k].comm || !w->r[i].p2p != !w->r[k].p2p || ++nth % every)
            continue;
        weak = w->r[i].excess < NSC_FIG_LATE_MIN_NS && !w->r[i].first ? weak + 1 : 0;
        on = weak ? on : i;
    }
    return on;
}

/* How often the process is late of its own in the communicator of record
 * k from k on, counted as a communicator's analysis counts it (rclate.c). */
uint64_t nsc_rc_every_from(const nsc_rc_follow *w, int64_t k)
{
    rc_rank_late x = {0};
    for (size_t i = (size_t)k; i < w->n && w->r[i].who == w->r[k].who; i++) {
        if (w->r[i].comm != w->r[k].comm || w->r[i].p2p)
            continue;
        if (w->r[i].own_late)
            nsc_rc_late_mark(&x, w->r[i].seq, w->r[i].api);
        x.seen++;
    }
    return nsc_rc_late_every(&x);
}
