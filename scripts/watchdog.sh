#!/usr/bin/env bash
# Runs a command with a deadline; a command still running at the deadline is a hang, not a slow run: every thread
# of every process under it is printed with gdb (when it is installed), then the whole tree is killed and the
# script fails. `make test` wraps each test process in it so a hang ends with the stacks that explain it instead
# of a CI run that times out saying nothing.
#
#   scripts/watchdog.sh SECONDS command [arguments...]
set -u
if [ $# -lt 2 ]; then
    echo "usage: $0 SECONDS command [arguments...]" >&2
    exit 2
fi
limit=$1
shift

"$@" &
child=$!

descendants() {
    local pid
    for pid in $(pgrep -P "$1" 2>/dev/null); do
        echo "$pid"
        descendants "$pid"
    done
}

waited=0
while kill -0 "$child" 2>/dev/null; do
    if [ "$waited" -ge "$limit" ]; then
        echo "watchdog: '$*' still running after ${limit} s; the stacks of its processes follow" >&2
        tree="$child $(descendants "$child")"
        for pid in $tree; do
            echo "---- process $pid: $(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | cut -c1-200)" >&2
            if command -v gdb >/dev/null 2>&1; then
                timeout 120 gdb -p "$pid" -batch -nx -ex 'set pagination off' -ex 'thread apply all bt 30' \
                    2>/dev/null | grep -E '^(Thread|#)' | cut -c1-240 >&2
            fi
        done
        for pid in $tree; do kill -KILL "$pid" 2>/dev/null; done
        wait "$child" 2>/dev/null
        echo "watchdog: killed '$*' after ${limit} s" >&2
        exit 124
    fi
    sleep 5
    waited=$((waited + 5))
done
wait "$child"
