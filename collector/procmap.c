/* procmap.c: the processes the writer has seen, by (agent, pid) (see procmap.h). */
#include "procmap.h"

#include <stdlib.h>
#include <string.h>

#include "fnv.h"

typedef struct slot {
    char agent[64];  /* "" empty */
    nsc_proc proc;
} slot;

struct nsc_procmap {
    slot s[NSC_PROCMAP_SLOTS];
};

static slot *slot_of(const nsc_procmap *m, const char *agent, uint32_t pid)
{
    uint64_t h = nsc_fnv1a(nsc_fnv1a(NSC_FNV1A_BASIS, agent, strnlen(agent, 64)), &pid, sizeof pid);
    return (slot *)&m->s[h % NSC_PROCMAP_SLOTS];
}

nsc_procmap *nsc_procmap_new(void)
{
    return calloc(1, sizeof(nsc_procmap));
}

void nsc_procmap_free(nsc_procmap *m)
{
    free(m);
}

void nsc_procmap_put(nsc_procmap *m, const char *agent, const nsc_proc *p)
{
    slot *s = slot_of(m, agent, p->pid);
    strncpy(s->agent, agent, sizeof s->agent - 1);
    s->agent[sizeof s->agent - 1] = 0;
    s->proc = *p;
}

int nsc_procmap_get(const nsc_procmap *m, const char *agent, uint32_t pid, nsc_proc *out)
{
    const slot *s = slot_of(m, agent, pid);
    if (!s->agent[0] || s->proc.pid != pid || strncmp(s->agent, agent, sizeof s->agent - 1) != 0)
        return -1;
    *out = s->proc;
    return 0;
}
