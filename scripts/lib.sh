# lib.sh: what the suite runners scripts/test.sh and scripts/aarch64.sh share;
# sourced, not run.

# ctest_report DIR LABEL RC: the summary of DIR/ctest.log, a `ctest -V` run that
# exited RC: the fuzzers' synthesis lines, the failing lines and the log's path
# when RC is not 0, the pass count prefixed by LABEL, then each failed test's tail.
# Returns RC.
ctest_report() {
  local dir=$1 label=$2 rc=$3
  grep -E "Synthesis:" "$dir/ctest.log" || true
  if [ "$rc" -ne 0 ]; then
    grep -E "^[0-9]+: .*(FAIL|fail|Assertion|ERROR|error)" "$dir/ctest.log" | head -60 || true
    echo "full log: $dir/ctest.log"
  fi
  grep -E "tests passed|tests failed" "$dir/ctest.log" | sed "s/^/$label: /"
  [ "$rc" -eq 0 ] || ctest_failed_tails "$dir/ctest.log" "$label"
  return "$rc"
}

# ctest_failed_tails LOG LABEL: each failed test's name, its scripts' and
# checkers' own messages and the last lines it printed, last in the report so
# that a shortened CI log still names them.
ctest_failed_tails() {
  local log=$1 label=$2 num
  for num in $(sed -n '/The following tests FAILED:/,$p' "$log" |
               sed -nE 's/^[[:space:]]+([0-9]+) - .*/\1/p'); do
    echo "$label: failed test $num: $(grep -E "Test +#$num:" "$log" | head -1 | sed -E 's/ +/ /g')"
    grep -E "^$num: ([^ ]+\.(sh|py)( \([^)]*\))?|nsc-[a-z-]+): |^$num: .*(\[FAIL\]|Assertion)" "$log" |
        head -10 | sed "s/^/$label:   /"
    grep -E "^$num: " "$log" | tail -8 | sed "s/^/$label:   /"
  done
}
