#!/usr/bin/env bash
# The bsp amplification table of docs/noise.md ("Results", the tick alone), with the wall time
# of every point: the study's scenarios (experiments/bsp-{64,1024,4096}.toml) with their
# background sources removed, at HZ 100 / 250 / 1000, aligned ticks and skew_tick=1, each a
# separate `ticklab sim` run on one core, two at a time.
#
# Usage: scripts/bsp-study.sh [DURATION=2s] [SIZES="64 1024 4096"]
# Environment: TICKLAB (default target/release/ticklab).
# Prints one Markdown row per (N, HZ): excess µs / late % and wall seconds for each tick mode.
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-2s}
sizes=${2:-64 1024 4096}
ticklab=${TICKLAB:-target/release/ticklab}
[ -x "$ticklab" ] || { echo "bsp-study: $ticklab not built (cargo build --release)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "bsp-study: needs python3 (to read the JSON reports)" >&2; exit 2; }
tmp=$(mktemp -d /tmp/ticklab-bsp-study.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# One point: the scenario without background sources, at HZ $2 with boot line $3; writes the
# report and the wall seconds.
point() {
    local n=$1 hz=$2 line=$3 out=$4
    local f="$tmp/bsp-$n.toml"
    # `background = []` at the top, every [[background]] table dropped.
    [ -f "$f" ] || awk 'NR == 1 { print "background = []" }
        /^\[\[background\]\]/ { skip = 1; next }
        /^\[/ { skip = 0 }
        !skip { print }' "experiments/bsp-$n.toml" >"$f"
    local t0 t1
    t0=$(date +%s.%N)
    "$ticklab" sim --scenario "$f" --hz "$hz" --cmdline "$line" -D "$duration" --json >"$out.json"
    t1=$(date +%s.%N)
    python3 -c "print(f'{$t1 - $t0:.2f}')" >"$out.wall"
}

jobs=()
for n in $sizes; do
    for hz in 100 250 1000; do
        for mode in aligned skew; do
            line=""
            [ "$mode" = skew ] && line="skew_tick=1"
            point "$n" "$hz" "$line" "$tmp/$n-$hz-$mode" &
            jobs+=($!)
            if [ ${#jobs[@]} -ge 2 ]; then
                wait "${jobs[0]}"
                jobs=("${jobs[@]:1}")
            fi
        done
    done
done
wait

echo "| N ranks | HZ | aligned ticks: excess µs / late % | wall s | \`skew_tick=1\`: excess µs / late % | wall s |"
echo "|---:|---:|---|---:|---|---:|"
for n in $sizes; do
    for hz in 100 250 1000; do
        python3 - "$tmp" "$n" "$hz" <<'EOF'
import json, sys
tmp, n, hz = sys.argv[1:]
cells = []
for mode in ("aligned", "skew"):
    base = f"{tmp}/{n}-{hz}-{mode}"
    r = json.load(open(base + ".json"))
    b = next(w for w in r["workloads"] if w["kind"] == "bsp")
    late = 100.0 * b["late_iterations"] / max(b["iterations"], 1)
    wall = open(base + ".wall").read().strip()
    cells.append(f"{b['excess_mean_ns'] / 1000:.3f} / {late:.1f} | {wall}")
    ranks = b["ranks"]
print(f"| {ranks} | {hz} | " + " | ".join(cells) + " |")
EOF
    done
done
