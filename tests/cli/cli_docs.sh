#!/bin/bash
# cli_docs.sh: the docs say what the binaries do.
#  - every option `ncclscope --help` and `ncclscope help VERB` print is in
#    docs/cli.md's tables, and every option in those tables is in the help;
#  - so is it in the man page (`ncclscope --man`, which groff reads without
#    a warning), and the bash completion (`ncclscope --completion bash`)
#    completes verbs, each verb's options, and files after an option that
#    takes a value;
#  - every API endpoint the collector's router serves is in docs/api*.md, and
#    every endpoint docs/api*.md names is served: the router's names are read
#    from its sources (collector/http.c, the query and analysis tables), and
#    each is asked of a real collector, which must not answer "no such
#    endpoint".
#
#   cli_docs.sh BIN_DIR PLUGIN SOURCE_DIR
set -euo pipefail
bin=$1 src=$3
nodes=1
. "$src/tests/e2e/lib.sh"
fail=0

# Options: the help's "--name" words, the docs' in table rows of docs/cli.md.
{
    "$bin/ncclscope" --help
    for verb in $("$bin/ncclscope" --help | awk '/^verbs:/ { on = 1; next } /^$/ { on = 0 } on { print $1 }'); do
        "$bin/ncclscope" help "$verb"
    done
} | grep -oE -- '(^| )--[a-z][a-z0-9-]*' | tr -d ' ' | sort -u >"$dir/help.flags"
grep -E '^\|' "$src/docs/cli.md" | grep -oE -- '`--[a-z][a-z0-9-]*' | tr -d '`' | sort -u >"$dir/doc.flags"
[ -s "$dir/help.flags" ] && [ -s "$dir/doc.flags" ] || die "no options found"
for f in $(comm -23 "$dir/help.flags" "$dir/doc.flags"); do echo "FAIL: $f is in --help, not in docs/cli.md"; fail=1; done
for f in $(comm -13 "$dir/help.flags" "$dir/doc.flags"); do echo "FAIL: $f is in docs/cli.md, not in --help"; fail=1; done

# The man page and the completion, from the same tables.
"$bin/ncclscope" --man >"$dir/ncclscope.1"
sed 's/\\-/-/g' "$dir/ncclscope.1" | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u >"$dir/man.flags"
for f in $(comm -23 "$dir/help.flags" "$dir/man.flags"); do echo "FAIL: $f is in --help, not in the man page"; fail=1; done
groff -man -ww -z "$dir/ncclscope.1" 2>"$dir/groff.err" && [ ! -s "$dir/groff.err" ] ||
    { echo "FAIL: groff: $(cat "$dir/groff.err")"; fail=1; }
"$bin/ncclscope" --completion bash >"$dir/ncclscope.bash"
complete_words() {  # complete_words WORD...: what completing the last word offers
    bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _ncclscope; echo "${COMPREPLY[*]}"' \
        sh "$dir/ncclscope.bash" "$@"
}
[ "$(complete_words ncclscope col)" = collectives ] || { echo "FAIL: completion of 'col'"; fail=1; }
[ "$(complete_words ncclscope --json collectives --so)" = --sort ] || { echo "FAIL: completion of 'collectives --so'"; fail=1; }
[[ " $(complete_words ncclscope links --) " == *" --comm "* ]] || { echo "FAIL: completion of 'links --'"; fail=1; }
[ -z "$(complete_words ncclscope --db '')" ] || { echo "FAIL: completion after --db offers words, not files"; fail=1; }

# Endpoints: the router's, docs/api*.md's, and what a collector serves.
{
    grep -oE '"/api/v1/[a-z0-9_]+"' "$src/collector/http.c" | sed 's|"/api/v1/||; s|"||'
    sed -n '/static const char \*const queries\[\]/,/;/p' "$src/collector/http.c" | grep -oE '"[a-z0-9_]+"' | tr -d '"'
    sed -n '/} endpoints\[\] = {/,/;/p' "$src/collector/diagapi.c" | grep -oE '\{"[a-z0-9_]+"' | tr -d '{"'
} | sort -u >"$dir/router.routes"
grep -hoE '/api/v1/(\{[a-z0-9_,]+\}|[a-z0-9_]+)' "$src"/docs/api*.md | sed 's|/api/v1/||; s|[{}]||g' | tr ',' '\n' |
    sort -u >"$dir/doc.routes"
[ "$(wc -l <"$dir/router.routes")" -ge 10 ] || die "the router's endpoints were not found: $(cat "$dir/router.routes")"
for r in $(comm -23 "$dir/router.routes" "$dir/doc.routes"); do echo "FAIL: /api/v1/$r is served, not in docs/api*.md"; fail=1; done
start_collector 0
for r in $(cat "$dir/router.routes" "$dir/doc.routes" | sort -u); do
    [ "$r" = live ] && continue  # a stream that does not end: its route is checked by tests/collector
    if curl -s -m 30 "http://127.0.0.1:$http/api/v1/$r" | grep -q '"no such endpoint"'; then
        echo "FAIL: /api/v1/$r is not served (named in $(grep -lw "$r" "$dir/router.routes" "$dir/doc.routes" | xargs -n1 basename))"
        fail=1
    fi
done
curl -s -m 10 "http://127.0.0.1:$http/api/v1/nosuch" | grep -q '"no such endpoint"' || die "an unknown endpoint is not refused"
[ $fail = 0 ] || exit 1
echo "cli_docs.sh: ok"
