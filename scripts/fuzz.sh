#!/bin/sh
# libFuzzer runs of every target in Fuzz/ (see README "Fuzzing"). Needs the driver built by `make fuzz-build`.
#   scripts/fuzz.sh run [SECONDS] [TARGET ...]   fuzz each target SECONDS (default 60); stop at the first finding
#   scripts/fuzz.sh minimize [TARGET ...]        merge what the runs found into the committed corpora (-merge=1)
# Committed corpora (Fuzz/Corpus/<target>/) are only read by runs; new inputs go to .build-fuzz/corpus/<target>/,
# findings (crash-*, timeout-*, oom-*) to .build-fuzz/findings/<target>/, logs to .build-fuzz/logs/.
set -u
cd "$(dirname "$0")/.."
scratch=.build-fuzz
export SWIFT_BACKTRACE=enable=no  # the Swift backtracer trips AddressSanitizer after a finding
driver=$scratch/debug/switchboard-fuzz
[ -x "$driver" ] || { echo "fuzz: $driver is missing; run make fuzz-build" >&2; exit 2; }
command=${1:-run}
[ $# -gt 0 ] && shift
seconds=60
if [ "$command" = run ] && [ $# -gt 0 ]; then seconds=$1; shift; fi
targets=${*:-$("$driver" --list)}
mkdir -p "$scratch/logs"
total_start=$(date +%s)

case $command in
run)
    for target in $targets; do
        mkdir -p "$scratch/corpus/$target" "$scratch/findings/$target"
        log=$scratch/logs/$target.log
        start=$(date +%s)
        printf '== fuzz %-18s %4s s ... ' "$target" "$seconds"
        if ! "$driver" "$target" -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 -max_len=4096 \
                -print_final_stats=1 -artifact_prefix="$scratch/findings/$target/" \
                "$scratch/corpus/$target" "Fuzz/Corpus/$target" >"$log" 2>&1; then
            echo "FINDING"
            tail -n 40 "$log"
            echo "fuzz: $target found a crash or a broken invariant; the input is in $scratch/findings/$target/" >&2
            exit 1
        fi
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
        coverage=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
        echo "ok in $(( $(date +%s) - start )) s: ${runs:-?} inputs, $coverage"
    done
    echo "fuzz: every target clean, $(( $(date +%s) - total_start )) s in all"
    ;;
minimize)
    for target in $targets; do
        corpus=Fuzz/Corpus/$target
        merged=$scratch/merged/$target
        rm -rf "$merged"
        mkdir -p "$merged" "$scratch/corpus/$target"
        "$driver" "$target" -set_cover_merge=1 -use_counters=0 -timeout=25 -rss_limit_mb=2048 "$merged" "$corpus" "$scratch/corpus/$target" \
            >"$scratch/logs/$target.merge.log" 2>&1 || { tail -n 20 "$scratch/logs/$target.merge.log"; exit 1; }
        # Inputs named by hand (seed-*, issue*-*) stay; inputs libFuzzer named (SHA-1 of the content) are replaced by
        # the merge's, except where a named input holds the same bytes.
        find "$corpus" -type f | grep -E '/[0-9a-f]{40}$' | xargs -r rm -f
        named=$(find "$corpus" -type f -exec sha1sum {} + | cut -d' ' -f1)
        for file in "$merged"/*; do
            [ -e "$file" ] || continue
            echo "$named" | grep -qx "$(basename "$file")" || cp "$file" "$corpus/"
        done
        echo "== $target: $(find "$corpus" -type f | wc -l) inputs"
    done
    echo "fuzz: minimized in $(( $(date +%s) - total_start )) s"
    ;;
*)
    echo "usage: scripts/fuzz.sh run [SECONDS] [TARGET ...] | minimize [TARGET ...]" >&2
    exit 2
    ;;
esac
