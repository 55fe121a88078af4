/* test_hold.c: the shipper's held states (plugin/hold.c) against a plain
 * list: states of interleaved events walked in order per event, the oldest
 * first out, an event's states dropped together, the ring full. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "internal.h"

#define CAP 64
#define IDS 48

/* Event ids: random, so that probe runs form and deletions move them
 * (consecutive ids would take consecutive entries, never colliding). */
static uint64_t pool[IDS];

/* The model: held states in arrival order (ts is unique). */
static nsc_state_rec model[100000];
static size_t nmodel;

static void model_remove(size_t i)
{
    memmove(&model[i], &model[i + 1], (nmodel - i - 1) * sizeof *model);
    nmodel--;
}

/* Every id's walk gives its states in arrival order, and the oldest is the
 * model's first. */
static void check(void)
{
    uint64_t held_ns;
    const nsc_state_rec *o = nsc_hold_oldest(&held_ns);
    cr_assert_eq(o != NULL, nmodel > 0);
    if (o)
        cr_assert_eq(o->ts_ns, model[0].ts_ns);
    for (int k = 0; k < IDS; k++) {
        uint64_t id = pool[k];
        size_t m = 0;
        for (uint64_t it = nsc_hold_first(nsc_hold_find(id)); it;) {
            const nsc_state_rec *st = nsc_hold_at(it, &it);
            while (m < nmodel && model[m].id != st->id)
                m++;
            cr_assert_lt(m, nmodel, "id %llx: a state the model does not hold", (unsigned long long)id);
            cr_assert_eq(st->ts_ns, model[m].ts_ns);
            m++;
        }
        while (m < nmodel && model[m].id != id)
            m++;
        cr_assert_eq(m, nmodel, "id %llx: the walk missed a state", (unsigned long long)id);
    }
}

Test(hold, interleaved_events_walk_in_order_and_leave_together)
{
    cr_assert_eq(nsc_hold_init(CAP), 0);
    uint64_t ids[5] = {7, 9, 7, 11, 9}, it;
    for (int i = 0; i < 5; i++)
        nsc_hold_put(&(nsc_state_rec){.id = ids[i], .ts_ns = (uint64_t)i}, 100);
    const nsc_state_rec *a = nsc_hold_at(nsc_hold_first(nsc_hold_find(7)), &it);
    cr_assert_eq(a->ts_ns, 0);
    cr_assert_eq(nsc_hold_at(it, &it)->ts_ns, 2);
    cr_assert_eq(it, 0);
    nsc_hold_drop(nsc_hold_find(7));
    cr_assert_eq(nsc_hold_find(7), 0);
    uint64_t held_ns;
    cr_assert_eq(nsc_hold_oldest(&held_ns)->ts_ns, 1);
    cr_assert_eq(held_ns, 100);
    nsc_hold_pop(9);
    cr_assert_eq(nsc_hold_at(nsc_hold_first(nsc_hold_find(9)), &it)->ts_ns, 4);
    cr_assert_eq(nsc_hold_oldest(&held_ns)->ts_ns, 3);
    nsc_hold_reset();
    cr_assert_null(nsc_hold_oldest(&held_ns));
    cr_assert_eq(nsc_hold_find(9), 0);
    nsc_hold_release();
}

/* Random puts (the oldest out first when full), drops and pops of the
 * oldest over few ids, so that probe runs collide and deletions move them. */
Test(hold, random_operations_match_a_list)
{
    cr_assert_eq(nsc_hold_init(CAP), 0);
    srand(30);
    for (int k = 0; k < IDS; k++)
        pool[k] = ((uint64_t)rand() << 32 | (uint64_t)rand()) + 1;
    uint64_t ts = 0;
    for (int op = 0; op < 20000; op++) {
        int what = rand() % 10;
        if (what < 6) {
            if (nsc_hold_full()) {
                nsc_hold_pop(model[0].id);
                model_remove(0);
            }
            nsc_state_rec st = {.id = pool[rand() % IDS], .ts_ns = ++ts};
            nsc_hold_put(&st, ts);
            model[nmodel++] = st;
        } else if (what < 9 && nmodel) {
            uint64_t id = model[(size_t)rand() % nmodel].id;
            nsc_hold_drop(nsc_hold_find(id));
            for (size_t i = nmodel; i-- > 0;)
                if (model[i].id == id)
                    model_remove(i);
        } else if (nmodel) {
            nsc_hold_pop(model[0].id);
            model_remove(0);
        }
        cr_assert_leq(nmodel, CAP);
        check();
    }
    nsc_hold_release();
}

Test(hold, capacity_is_a_power_of_two)
{
    cr_assert_eq(nsc_hold_init(CAP + 1), -1);
    cr_assert_eq(nsc_hold_init(0), -1);
    cr_assert_eq(nsc_hold_init(CAP), 0);
    nsc_hold_release();
}
