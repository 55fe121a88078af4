/* check_util.h: what the end-to-end checkers share: the emulator's summary
 * read into a JSON tree and its emitted totals, and a read-only store opened
 * on one job. */
#ifndef NCCLSCOPE_E2E_CHECK_UTIL_H
#define NCCLSCOPE_E2E_CHECK_UTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "event.h"
#include "json.h"
#include "store.h"

/* Parse the JSON file at path; who prefixes the error message. 0 or -1. */
int e2e_load_json(const char *who, const char *path, nsc_json_doc *doc);

/* The unsigned number obj.name, 0 when absent. */
uint64_t e2e_count(const nsc_json *obj, const char *name);
/* Did process pid die of a signal (the summary's "processes")? */
bool e2e_pid_killed(const nsc_json *emu, uint64_t pid);
/* The calls whose events rank r's plugin delivers, by type: a process that
 * ran to its finalize delivers every event it started (those never stopped
 * flagged NSC_EVF_OPEN), a killed one only those it stopped. */
const nsc_json *e2e_rank_delivered(const nsc_json *emu, const nsc_json *r);
/* Events the emulator's profiled ranks delivered, by type (their own, as
 * e2e_rank_delivered says, and the PXN events they stopped for others). */
void e2e_emitted_by_type(const nsc_json *emu, uint64_t out[NSC_T_COUNT]);

typedef struct e2e_store {
    nsc_store *st;
    nsc_store_reader *rd;
    uint32_t job;
} e2e_store;

/* Open dir read-only and begin a read of job. 0, or -1 with a message. */
int e2e_store_open(const char *who, const char *dir, const char *job, e2e_store *s);
void e2e_store_close(e2e_store *s);

#endif
