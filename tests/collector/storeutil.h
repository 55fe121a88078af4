/* storeutil.h: temporary store directories and batch builders for store tests
 * and the store benchmark. */
#ifndef NCCLSCOPE_TEST_STOREUTIL_H
#define NCCLSCOPE_TEST_STOREUTIL_H

#include "mix.h"
#include "store.h"

/* A fresh empty directory under /tmp (malloc'd path), and its removal. */
char *nsc_tmp_store_dir(void);
void nsc_tmp_store_remove(char *dir);

nsc_proc nsc_test_proc(const char *job, const char *host, uint32_t pid, int gpu);
nsc_ctx_def nsc_test_ctx(uint16_t index, uint64_t comm, int rank, int nranks);

/* A batch over the mix's current records, with the given identity. */
nsc_store_batch nsc_mix_batch(const nsc_mix *m, const nsc_proc *proc, const nsc_ctx_def *ctxs,
                              size_t nctxs, const nsc_str_def *strs, size_t nstrs);

#endif
