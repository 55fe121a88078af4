/* commlabel.c: communicator labels (see commlabel.h). */
#include "commlabel.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void nsc_comm_label(const nsc_comm_look *all, size_t n, size_t i, char *buf, size_t cap)
{
    const nsc_comm_look *m = &all[i];
    size_t alike = 0, nth = 0;
    for (size_t k = 0; k < n; k++)
        if (strcmp(all[k].name, m->name) == 0 && all[k].nranks == m->nranks && all[k].hosts == m->hosts) {
            alike++;
            nth += all[k].id <= m->id;
        }
    int len = snprintf(buf, cap, "%s%s%" PRId64 " rank%s on %zu host%s", m->name, m->name[0] ? " " : "", m->nranks,
                       m->nranks == 1 ? "" : "s", m->hosts, m->hosts == 1 ? "" : "s");
    if (alike > 1 && len > 0 && (size_t)len < cap)
        snprintf(buf + len, cap - (size_t)len, " #%zu", nth);
}
