#!/usr/bin/env bash
# Compare the twin's speed of two ticklab builds on a noisy machine: run their benchmarks in
# turn (A, B, A, B, ...) so that both see the same phases of the host, and print the best and
# mean thread-CPU rate per point. Quote the ratio from one such run. The last column is the
# range of B/A over the rounds, each round's B against the A run just before it: how far one
# sitting can be trusted. On some hosts a build against itself moves by 15 % or more
# (docs/model.md, "The ninth round of issue 34"); pass the same binary twice to see that.
#
#   scripts/bench-ab.sh OLD_TICKLAB NEW_TICKLAB [ROUNDS=4] [DURATION=20s]
#
# A_ARGS / B_ARGS add bench flags to one side only, for example B_ARGS=--noise to price the
# OS-noise accounting against a build that predates it.
#
# Both binaries must have `ticklab bench --repeat` (this repository from 2026-11-30 on).
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: $0 OLD_TICKLAB NEW_TICKLAB [ROUNDS] [DURATION]" >&2
    exit 2
fi
a=$1 b=$2 rounds=${3:-4} duration=${4:-20s}
for bin in "$a" "$b"; do
    if ! "$bin" bench --help 2>/dev/null | grep -q -- --repeat; then
        echo "$bin: expected a ticklab binary whose bench has --repeat" >&2
        exit 2
    fi
done
for round in $(seq "$rounds"); do
    for side in A B; do
        bin=$a extra=${A_ARGS:-}
        [ "$side" = B ] && bin=$b extra=${B_ARGS:-}
        # Rows end with: <events> <x real> <wall best> / <wall median> <cpu best> / <cpu median>.
        # shellcheck disable=SC2086 # extra holds zero or more flags
        "$bin" bench --duration "$duration" --repeat 1 $extra |
            awk -v side="$side" -v round="$round" 'NR > 2 { name = $1; for (i = 2; i <= NF - 8; i++) name = name " " $i; print side "\t" name "\t" $(NF - 2) "\t" $(NF - 7) "\t" round }'
    done
done | {
    # M events/s of thread CPU time, best and mean; then the ratio of the bests, and the same
    # in simulated seconds per second (the measure: it differs from the events ratio
    # only when a build takes fewer events for the same run). A point one build lacks shows
    # "-". Then the lowest and highest ratio of one round's B to its A.
    printf "%-24s %22s %22s %9s %9s %13s\n" "point" "A best / mean" "B best / mean" "B/A ev/s" "B/A sim" "B/A by round"
    awk -F'\t' -v rounds="$rounds" '
    { k = $2 "\t" $1; if (!(k in best) || $3 > best[k]) best[k] = $3; sum[k] += $3; n[k]++; ev[k] = $4; names[$2] = 1; rate[k "\t" $5] = $3 }
    END {
        for (p in names) {
            a = p "\tA"; b = p "\tB"
            if (!(a in best) || !(b in best)) {
                printf "%-24s %22s %22s %9s %9s %13s\n", p, (a in best) ? sprintf("%.2f / %.2f", best[a], sum[a] / n[a]) : "-", (b in best) ? sprintf("%.2f / %.2f", best[b], sum[b] / n[b]) : "-", "-", "-", "-"
                continue
            }
            lo = ""; hi = ""
            for (r = 1; r <= rounds; r++) {
                if (!((a "\t" r) in rate) || !((b "\t" r) in rate) || rate[a "\t" r] <= 0) continue
                x = rate[b "\t" r] / rate[a "\t" r]
                if (lo == "" || x < lo) lo = x
                if (hi == "" || x > hi) hi = x
            }
            range = (lo == "") ? "-" : sprintf("%.2f-%.2fx", lo, hi)
            printf "%-24s %10.2f / %-9.2f %10.2f / %-9.2f %8.2fx %8.2fx %13s\n", p, best[a], sum[a] / n[a], best[b], sum[b] / n[b], best[b] / best[a], (best[b] / ev[b]) / (best[a] / ev[a]), range
        }
    }' | sort
}
