#!/usr/bin/env bash
# E5's bar for the twin's hrtimer core (docs/experiments.md E5): instructions per hrtimer
# start / cancel / expire with 1, 2 and all 8 clock bases active, beside the same number of
# timers in one base, and one timer in the highest base alone. This guest has no hardware
# counters, so callgrind counts instructions (Ir): each point runs the bench binary with
# ROUNDS and 11 × ROUNDS rounds and divides the difference by the extra rounds, which removes
# start-up and set-up. Deterministic: the same build prints the same figures.
#
#   scripts/hrtimer-callgrind.sh [ROUNDS=2000]
#
# Needs valgrind. Builds `examples/hrtimer_ops.rs` of ticklab-twin in release mode.
set -euo pipefail
rounds=${1:-2000}
case $rounds in
'' | *[!0-9]*)
    echo "ROUNDS $rounds: expected a whole number" >&2
    exit 2
    ;;
esac
if ! command -v valgrind >/dev/null; then
    echo "valgrind not found: install it (apt-get install valgrind)" >&2
    exit 2
fi
cd "$(dirname "$0")/.."
cargo build --quiet --release -p ticklab-twin --example hrtimer_ops
bin=target/release/examples/hrtimer_ops
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Total instructions of one run.
ir() {
    valgrind --tool=callgrind --callgrind-out-file="$tmp/out" "$bin" "$@" >/dev/null 2>"$tmp/log"
    awk '/^(summary|totals):/ { print $2; exit }' "$tmp/out"
}
more=$((rounds * 11))
printf "%-7s %-24s %12s\n" "op" "layout" "Ir per op"
for op in start cancel expire; do
    for layout in active:1 active:2 active:8 one:2 one:8 highest; do
        a=$(ir "$op" "$layout" "$rounds")
        b=$(ir "$op" "$layout" "$more")
        case $layout in
        active:1) label="1 active base" ;;
        active:2) label="2 active bases" ;;
        active:8) label="8 active bases" ;;
        one:2) label="2 timers, 1 base" ;;
        one:8) label="8 timers, 1 base" ;;
        highest) label="1 timer, base 7 only" ;;
        esac
        awk -v a="$a" -v b="$b" -v n=$((more - rounds)) -v op="$op" -v l="$label" \
            'BEGIN { printf "%-7s %-24s %12.1f\n", op, l, (b - a) / n }'
    done
done
