/* args.h: the command line of ncclscope.
 *
 * Owns the split of argv into a verb, global options and the verb's own
 * options. Options may come before or after the verb (`ncclscope --json comms`
 * and `ncclscope comms --json` mean the same), as `--name VALUE` or
 * `--name=VALUE`; `--` ends options. Every option a verb accepts is declared
 * in a table (the same table prints --help), so an unknown or misspelled
 * option is a usage error, never silently ignored.
 */
#ifndef NCCLSCOPE_CLI_ARGS_H
#define NCCLSCOPE_CLI_ARGS_H

#include <stddef.h>
#include <stdio.h>

#define NSC_CLI_MAX_OPTS 48
#define NSC_CLI_MAX_POS 8

typedef struct nsc_cli_opt {
    const char *name;    /* without the leading dashes */
    const char *arg;     /* NULL: a switch; else the value's name for --help */
    const char *help;
} nsc_cli_opt;

/* What was given: each option at most once (the last one wins). */
typedef struct nsc_cli_args {
    const char *verb;
    const char *names[NSC_CLI_MAX_OPTS];
    const char *values[NSC_CLI_MAX_OPTS];  /* "" for a switch */
    size_t nopts;
    const char *pos[NSC_CLI_MAX_POS];      /* positional arguments after the verb */
    size_t npos;
} nsc_cli_args;

/* Parse argv[1..]. find_verb_opts returns the option table of a verb (NULL
 * terminated by a NULL name) or NULL for an unknown verb. Returns 0, or -1
 * with a one-line reason in err. */
typedef const nsc_cli_opt *(*nsc_cli_verb_opts_fn)(const char *verb);
int nsc_cli_parse(int argc, char **argv, const nsc_cli_opt *global, nsc_cli_verb_opts_fn verb_opts,
                  nsc_cli_args *out, char *err, size_t errcap);

/* The value of an option, or NULL if absent. */
const char *nsc_cli_get(const nsc_cli_args *a, const char *name);
int nsc_cli_has(const nsc_cli_args *a, const char *name);

/* Print an option table as help lines. */
void nsc_cli_print_opts(FILE *f, const nsc_cli_opt *opts);

#endif
