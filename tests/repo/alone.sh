#!/bin/bash
# alone.sh SRC_DIR: the repository stands alone.
#  1. No tracked file points outside it: no ../shared, no shared/data, no
#     mention of the design notes the project started from (DESIGN.md,
#     nccl-profiler-abi.md), whose facts live in docs/ now.
#  2. Every relative link of every Markdown file names a file or folder in it.
#  3. CMake configures without Criterion and msgpack-c (hidden from pkg-config):
#     it says the tests are off, and the programs and the plugin are still
#     targets, none of them linking either library.
set -euo pipefail
src=$(cd "$1" && pwd)
self=tests/repo/alone.sh
fail=0
bad() { echo "alone.sh: $*" >&2; fail=1; }

cd "$src"
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
    files=$(git -C "$src" ls-files)
else
    files=$(find . -type f -not -path './build*' -not -path './.git/*' | sed 's|^\./||')
fi

# 1. references outside the repository
hits=$(echo "$files" | grep -vx "$self" | grep -v '^tests/data/.*\.jsonl$' |
       xargs -d '\n' grep -nI -E '\.\./shared|(^|[^a-z_])shared/data|DESIGN\.md|nccl-profiler-abi\.md' 2>/dev/null || true)
[ -z "$hits" ] || bad "references outside the repository:"$'\n'"$hits"

# 2. relative Markdown links resolve inside the repository
md=$(echo "$files" | grep '\.md$' || true)
out=$(python3 - "$src" $md <<'PY'
import os, re, sys
root = sys.argv[1]
for f in sys.argv[2:]:
    text = open(os.path.join(root, f), encoding="utf-8").read()
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = os.path.normpath(os.path.join(root, os.path.dirname(f), target.split("#")[0]))
        if not path.startswith(root + os.sep) or not os.path.exists(path):
            print(f"{f}: link {target} is not a file of the repository")
PY
)
[ -z "$out" ] || bad "$out"

# 3. configure with the test-only libraries hidden from pkg-config
tmp=$(mktemp -d /tmp/nsc-alone-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/pc"
for d in $(pkg-config --variable pc_path pkg-config | tr ':' ' '); do
    for pc in "$d"/*.pc; do
        case $(basename "$pc") in criterion.pc | msgpack*.pc) continue ;; esac
        [ -e "$pc" ] && [ ! -e "$tmp/pc/$(basename "$pc")" ] && ln -s "$pc" "$tmp/pc/"
    done
done
if ! PKG_CONFIG_LIBDIR=$tmp/pc PKG_CONFIG_PATH= cmake -S "$src" -B "$tmp/build" >"$tmp/configure.log" 2>&1; then
    cat "$tmp/configure.log" >&2
    bad "configure without Criterion and msgpack-c failed"
else
    grep -q 'tests not built' "$tmp/configure.log" || bad "configure did not say the tests are off"
    targets=$(cmake --build "$tmp/build" --target help)
    for t in ncclscope-collector ncclscope-agent ncclscope ncclscope-emu nccl-profiler-ncclscope; do
        echo "$targets" | grep -q "\.\.\. $t\$" || bad "no target $t without the test libraries"
    done
    echo "$targets" | grep -q '\.\.\. test_' && bad "a test target without the test libraries"
    linked=$(grep -rlE 'criterion|msgpack' "$tmp/build" --include=link.txt --include=flags.make || true)
    [ -z "$linked" ] || bad "built with a test library: $linked"
fi
[ $fail = 0 ] && echo "alone.sh: the repository stands alone"
exit $fail
