/* test_emu_util.h: helpers for the emulator's tests: run ncclscope-emu, read
 * its summary and the record plugin's JSON lines. */
#ifndef NCCLSCOPE_TEST_EMU_UTIL_H
#define NCCLSCOPE_TEST_EMU_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "json.h"

typedef struct jlines {
    nsc_json_doc *docs;
    size_t n;
} jlines;

/* A fresh temporary folder for one test; returns its path (static buffer). */
const char *tmpdir_new(void);
/* Run the emulator with the record plugin writing to DIR/rec-<pid>.jsonl and
 * the summary in DIR/summary.json; extra_env is prepended to the command. */
int run_emu(const char *dir, const char *extra_env, const char *args);
/* Every JSON line of every DIR/rec-*.jsonl file (or one file). */
void jlines_read_dir(const char *dir, jlines *out);
void jlines_read_file(const char *path, jlines *out);
void jlines_free(jlines *l);
/* The parsed summary (caller frees). */
nsc_json_doc summary_read(const char *dir);
uint64_t jnum(const nsc_json *obj, const char *key); /* 0 if missing */
uint64_t jhex(const nsc_json *obj, const char *key); /* "0x..." or "(nil)" */
const char *jstr(const nsc_json *obj, const char *key);
/* counts[kind][type] from a summary "calls" object member. */
uint64_t summary_count(const nsc_json *calls, const char *kind, const char *type);

#endif
