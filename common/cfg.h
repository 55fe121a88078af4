/* cfg.h: the programs' configuration loader (agent, collector).
 *
 * Owns how a program's option table is filled from its four sources, in
 * priority order: flags (--some-key VALUE) > NCCLSCOPE_* environment > config
 * file ("key = value" lines, '#' comments; --config FILE or the program's
 * config environment variable) > defaults; and how values are parsed, with
 * one-line errors naming the source (flag, variable, FILE:LINE) and the key:
 *   text      copied; too long for its field is an error
 *   number    decimal, no sign, no suffix
 *   size      a number in the key's unit (KiB for *_kb, MiB for *_mb), or
 *             with a unit: K/KiB, M/MiB, G/GiB, T/TiB (a whole number of the
 *             key's unit)
 *   duration  a number in the key's unit (ms for *_ms, s for *_s), or with a
 *             unit: ms, s, m, h, d (a whole number of the key's unit)
 * Each program keeps its table, its range checks and its derived defaults.
 */
#ifndef NCCLSCOPE_CFG_H
#define NCCLSCOPE_CFG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum nsc_opt_kind { NSC_OPT_TEXT, NSC_OPT_U64, NSC_OPT_SIZE, NSC_OPT_DURATION } nsc_opt_kind;

typedef struct nsc_opt {
    const char *key;    /* config file key; the flag is --key with '_' as '-' */
    const char *env;
    nsc_opt_kind kind;
    size_t off, size;   /* field offset; TEXT: its buffer size */
    uint64_t unit;      /* SIZE: bytes of the key's unit; DURATION: its ms */
    const char *def;
    const char *help;
} nsc_opt;

/* Table rows for a configuration struct T. */
#define NSC_OPT_TXT(T, k, env, f, def, help) \
    {k, env, NSC_OPT_TEXT, offsetof(T, f), sizeof(((T *)0)->f), 0, def, help}
#define NSC_OPT_NUM(T, k, env, f, def, help) {k, env, NSC_OPT_U64, offsetof(T, f), 0, 0, def, help}
#define NSC_OPT_KB(T, k, env, f, def, help) {k, env, NSC_OPT_SIZE, offsetof(T, f), 0, 1ull << 10, def, help}
#define NSC_OPT_MB(T, k, env, f, def, help) {k, env, NSC_OPT_SIZE, offsetof(T, f), 0, 1ull << 20, def, help}
#define NSC_OPT_MS(T, k, env, f, def, help) {k, env, NSC_OPT_DURATION, offsetof(T, f), 0, 1, def, help}
#define NSC_OPT_S(T, k, env, f, def, help) {k, env, NSC_OPT_DURATION, offsetof(T, f), 0, 1000, def, help}

typedef struct nsc_cfg_spec {
    const char *prog;        /* message prefix: "ncclscope-agent" */
    const char *about;       /* usage text before the option list */
    const char *more_help;   /* lines after it (other flags), or NULL */
    const char *config_env;  /* variable naming the config file, or NULL */
    const nsc_opt *opts;
    size_t nopts;
} nsc_cfg_spec;

/* Fill the struct cfg (zeroed by the caller) from all sources. Returns 0, 1 when
 * --help or --version was printed to stdout, or -1 after printing the problem to err. */
int nsc_cfg_load(const nsc_cfg_spec *spec, void *cfg, int argc, char **argv, FILE *err);
void nsc_cfg_usage(const nsc_cfg_spec *spec, FILE *out);
/* Parse val as option o into its field of cfg; src names the source in the
 * error. 0 or -1. */
int nsc_cfg_set(const nsc_cfg_spec *spec, void *cfg, const nsc_opt *o, const char *val,
                const char *src, FILE *err);

#endif
