/* args.c: the command line of ncclscope (see args.h). */
#include "args.h"

#include <string.h>

static const nsc_cli_opt *lookup(const nsc_cli_opt *table, const char *name, size_t len)
{
    for (const nsc_cli_opt *o = table; o && o->name; o++)
        if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
            return o;
    return NULL;
}

static int set_opt(nsc_cli_args *out, const char *name, const char *value)
{
    for (size_t i = 0; i < out->nopts; i++)
        if (strcmp(out->names[i], name) == 0) {
            out->values[i] = value;
            return 0;
        }
    if (out->nopts == NSC_CLI_MAX_OPTS)
        return -1;
    out->names[out->nopts] = name;
    out->values[out->nopts++] = value;
    return 0;
}

/* One "--name[=value]" at argv[*i]; takes the next argument as the value
 * when the option wants one and none was attached. */
static int take_option(int argc, char **argv, int *i, const nsc_cli_opt *global,
                       const nsc_cli_opt *verb, nsc_cli_args *out, char *err, size_t errcap)
{
    const char *arg = argv[*i] + 2;
    const char *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    const nsc_cli_opt *o = lookup(verb, arg, len);
    if (!o)
        o = lookup(global, arg, len);
    if (!o) {
        snprintf(err, errcap, "unknown option --%.*s%s%s", (int)len, arg,
                 out->verb ? " for " : "", out->verb ? out->verb : "");
        return -1;
    }
    const char *value = "";
    if (o->arg) {
        if (eq)
            value = eq + 1;
        else if (*i + 1 < argc)
            value = argv[++*i];
        else {
            snprintf(err, errcap, "option --%s needs a value (%s)", o->name, o->arg);
            return -1;
        }
    } else if (eq) {
        snprintf(err, errcap, "option --%s takes no value", o->name);
        return -1;
    }
    if (set_opt(out, o->name, value) != 0) {
        snprintf(err, errcap, "too many options");
        return -1;
    }
    return 0;
}

int nsc_cli_parse(int argc, char **argv, const nsc_cli_opt *global, nsc_cli_verb_opts_fn verb_opts,
                  nsc_cli_args *out, char *err, size_t errcap)
{
    memset(out, 0, sizeof *out);
    const nsc_cli_opt *verb = NULL;
    int only_positional = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!only_positional && strcmp(a, "--") == 0) {
            only_positional = 1;
        } else if (!only_positional && strncmp(a, "--", 2) == 0) {
            if (take_option(argc, argv, &i, global, verb, out, err, errcap) != 0)
                return -1;
        } else if (!only_positional && a[0] == '-' && a[1] == 'h' && a[2] == 0) {
            set_opt(out, "help", "");
        } else if (!only_positional && a[0] == '-' && a[1] == 'o' && a[2] == 0 && verb &&
                   lookup(verb, "output", 6)) {
            if (i + 1 == argc) {
                snprintf(err, errcap, "option -o needs a value (FILE)");
                return -1;
            }
            set_opt(out, "output", argv[++i]);
        } else if (!only_positional && a[0] == '-' && a[1]) {
            snprintf(err, errcap, "unknown option %s", a);
            return -1;
        } else if (!out->verb) {
            out->verb = a;
            verb = verb_opts(a);
            if (!verb) {
                snprintf(err, errcap, "unknown command '%s' (see ncclscope --help)", a);
                return -1;
            }
        } else if (out->npos < NSC_CLI_MAX_POS) {
            out->pos[out->npos++] = a;
        } else {
            snprintf(err, errcap, "too many arguments");
            return -1;
        }
    }
    return 0;
}

const char *nsc_cli_get(const nsc_cli_args *a, const char *name)
{
    for (size_t i = 0; i < a->nopts; i++)
        if (strcmp(a->names[i], name) == 0)
            return a->values[i];
    return NULL;
}

int nsc_cli_has(const nsc_cli_args *a, const char *name) { return nsc_cli_get(a, name) != NULL; }

void nsc_cli_print_opts(FILE *f, const nsc_cli_opt *opts)
{
    for (const nsc_cli_opt *o = opts; o && o->name; o++) {
        char left[64];
        snprintf(left, sizeof left, "--%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        fprintf(f, "  %-26s %s\n", left, o->help);
    }
}
