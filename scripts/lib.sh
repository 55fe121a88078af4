# lib.sh: what the suite runners scripts/test.sh and scripts/aarch64.sh share;
# sourced, not run.

# ctest_report DIR LABEL RC: the summary of DIR/ctest.log, a `ctest -V` run that
# exited RC: the fuzzers' synthesis lines, the failing lines and the log's path
# when RC is not 0, and the pass count prefixed by LABEL. Returns RC.
ctest_report() {
  local dir=$1 label=$2 rc=$3
  grep -E "Synthesis:" "$dir/ctest.log" || true
  if [ "$rc" -ne 0 ]; then
    grep -E "^[0-9]+: .*(FAIL|fail|Assertion|ERROR|error)" "$dir/ctest.log" | head -60 || true
    echo "full log: $dir/ctest.log"
  fi
  grep -E "tests passed|tests failed" "$dir/ctest.log" | sed "s/^/$label: /"
  return "$rc"
}
