#!/usr/bin/env bash
# Builds the tests under one sanitizer in a build folder of its own and runs the given test groups the way
# `make test` does (then the network suites and the store's executor suites, each alone). Every sanitizer report
# goes to a file under <folder>/reports; the run fails on any report or any failed test, and says how long the
# build and the tests took.
#
#   scripts/sanitize.sh address|thread GROUP...    (`make sanitize` runs both over `make test`'s groups)
#
# ThreadSanitizer builds with -DSWITCHBOARD_TSAN, which makes `Locked` an NSLock that TSan understands (see
# Sources/SwitchboardCore/Locked.swift); scripts/tsan-suppressions.txt lists what is left out, and why.
set -uo pipefail
swift=${SWIFT:-swift}
sanitizer=$1
shift
case "$sanitizer" in
  address) scratch=.build-asan; flags=(--sanitize=address) ;;
  thread) scratch=.build-tsan; flags=(--sanitize=thread -Xswiftc -DSWITCHBOARD_TSAN) ;;
  *) echo "usage: $0 address|thread GROUP..." >&2; exit 2 ;;
esac
reports="$PWD/$scratch/reports"
rm -rf "$reports"
mkdir -p "$reports"

started=$(date +%s)
echo "== [$sanitizer] swift build --build-tests --scratch-path $scratch ${flags[*]}"
"$swift" build --build-tests --scratch-path "$scratch" "${flags[@]}" || exit 1
built=$(date +%s)

# A report is written to reports/<sanitizer>.<pid> (the test process or any `switchboard` it starts) and the
# process goes on, so one run shows every report.
export ASAN_OPTIONS="log_path=$reports/asan:${SANITIZE_ASAN_OPTIONS:-detect_leaks=0}"
export TSAN_OPTIONS="log_path=$reports/tsan:suppressions=$PWD/scripts/tsan-suppressions.txt${SANITIZE_TSAN_OPTIONS:+:$SANITIZE_TSAN_OPTIONS}"
# Sanitized code runs 5-20 times slower: the tests' time bounds (TestTime) stretch by this factor.
export SWITCHBOARD_TEST_TIME_SCALE=${SWITCHBOARD_TEST_TIME_SCALE:-6}
failed=0
run() {
  echo "== [$sanitizer] swift test $*"
  # A test process still running after this long is a hang: scripts/watchdog.sh prints its stacks and stops it.
  scripts/watchdog.sh "${SANITIZE_WATCHDOG_SECONDS:-2700}" \
    "$swift" test --skip-build --scratch-path "$scratch" "${flags[@]}" "$@" || failed=1
}
for group in "$@"; do run --filter "$group" --skip 'NetworkSuites|StoreExecutorTests'; done
SWITCHBOARD_ISOLATED=1 run --filter NetworkSuites
run --filter StoreExecutorTests
finished=$(date +%s)

count=$(find "$reports" -type f | wc -l)
if [ "$count" -gt 0 ]; then
  for report in "$reports"/*; do
    echo "== [$sanitizer] report $report"
    head -n 80 "$report"
  done
  echo "== [$sanitizer] $count process(es) wrote sanitizer reports (in $scratch/reports)"
  failed=1
fi
echo "== [$sanitizer] build $((built - started)) s, tests $((finished - built)) s; $([ $failed -eq 0 ] && echo clean || echo FAILED)"
exit $failed
