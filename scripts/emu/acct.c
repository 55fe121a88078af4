/* acct.c: the record of what the emulator emitted, kept in a file mapped
 * MAP_SHARED. A worker process writes its slots as it goes; the launcher reads
 * them after the worker exits, so even a rank killed with SIGKILL reports
 * exactly the calls it made before it died.
 *
 * Layout: a header {nslots, coll_cap, sample_cap}, then nslots slots, each an
 * emu_acct followed by coll_cap collective records and sample_cap GPU samples.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "emu.h"

typedef struct acct_header {
    uint32_t nslots, coll_cap, sample_cap, pad;
} acct_header;

static size_t slot_size(uint32_t coll_cap, uint32_t sample_cap)
{
    return sizeof(emu_acct) + coll_cap * sizeof(emu_coll_rec) + sample_cap * sizeof(emu_sample);
}

int emu_acct_create(const char *path, uint32_t nslots, uint32_t coll_cap, uint32_t sample_cap)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    acct_header h = {nslots, coll_cap, sample_cap, 0};
    size_t size = sizeof h + nslots * slot_size(coll_cap, sample_cap);
    int rc = ftruncate(fd, (off_t)size) == 0 && pwrite(fd, &h, sizeof h, 0) == sizeof h ? 0 : -1;
    close(fd);
    return rc;
}

int emu_acct_map(const char *path, emu_acct_file *f)
{
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    acct_header h;
    int rc = -1;
    if (fstat(fd, &st) == 0 && pread(fd, &h, sizeof h, 0) == sizeof h &&
        (size_t)st.st_size == sizeof h + h.nslots * slot_size(h.coll_cap, h.sample_cap)) {
        void *base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (base != MAP_FAILED) {
            *f = (emu_acct_file){base, (size_t)st.st_size, h.nslots, h.coll_cap, h.sample_cap};
            rc = 0;
        }
    }
    close(fd);
    return rc;
}

void emu_acct_unmap(emu_acct_file *f)
{
    if (f->base)
        munmap(f->base, f->size);
    f->base = NULL;
}

emu_acct *emu_acct_slot(const emu_acct_file *f, uint32_t i)
{
    return (emu_acct *)((char *)f->base + sizeof(acct_header) +
                        i * slot_size(f->coll_cap, f->sample_cap));
}

emu_coll_rec *emu_acct_colls(const emu_acct_file *f, emu_acct *a)
{
    (void)f;
    return (emu_coll_rec *)(a + 1);
}

emu_sample *emu_acct_samples(const emu_acct_file *f, emu_acct *a)
{
    return (emu_sample *)(emu_acct_colls(f, a) + f->coll_cap);
}

/* Remember up to four distinct threads that called the plugin for this rank. */
void emu_acct_note_tid(emu_acct *a)
{
    uint32_t tid = emu_gettid();
    for (uint32_t i = 0; i < a->ntids; i++)
        if (a->tids[i] == tid)
            return;
    if (a->ntids < 4)
        a->tids[a->ntids++] = tid;
}

/* Once, when the summary reads a slot: the share is zeroed as it is added. */
void emu_acct_fold(emu_acct *a)
{
    for (int k = 0; k < 3; k++)
        for (int t = 0; t < NSC_T_COUNT; t++)
            a->calls[k][t] += a->proxy_calls[k][t];
    for (int s = 0; s < NSC_S_COUNT; s++)
        a->states[s] += a->proxy_states[s];
    a->open_states += a->proxy_open_states;
    memset(a->proxy_calls, 0, sizeof a->proxy_calls);
    memset(a->proxy_states, 0, sizeof a->proxy_states);
    a->proxy_open_states = 0;
}
