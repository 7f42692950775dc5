#!/usr/bin/env bash
# The twin's outputs that a speed change must leave byte-identical: write them for two ticklab
# builds and `cmp` each pair. E1-E4 (E2 one minute), every experiments/*.toml for two
# simulated seconds (the 1024- and 4096-CPU ones shorter), the default run, the OS-noise,
# frame-histogram, aggressive and guest runs, and a trace export.
#
#   scripts/outputs-cmp.sh OLD_TICKLAB NEW_TICKLAB DIR
#
# Writes DIR/old and DIR/new. With KEEP_OLD=1 an existing DIR/old is reused (the reference
# build does not change between checks). With FULL=1 the full E2 hour is compared as well
# (about two minutes of two cores per build). Exits 1 when any pair differs.
set -uo pipefail
if [ $# -ne 3 ]; then
    echo "usage: $0 OLD_TICKLAB NEW_TICKLAB DIR" >&2
    exit 2
fi
old=$1 new=$2 dir=$3
root=$(cd "$(dirname "$0")/.." && pwd)

# outputs BIN OUT: every output of the list, one file each.
outputs() {
    local bin=$1 out=$2 f n d
    mkdir -p "$out"
    cd "$root" || exit 2
    "$bin" -q experiment e1 --json >"$out/e1.json"
    "$bin" -q experiment e1 -D 10s >"$out/e1-10s.txt"
    "$bin" -q experiment e2 -D 60s --json >"$out/e2-60s.json"
    "$bin" -q experiment e2 -D 10s >"$out/e2-10s.txt"
    "$bin" -q experiment e3 --json >"$out/e3.json"
    "$bin" -q experiment e4 --json >"$out/e4.json"
    for f in experiments/*.toml; do
        n=$(basename "$f" .toml)
        case $n in
        scale-4096) d=100ms ;;
        bsp-4096) d=500ms ;;
        bsp-1024) d=1s ;;
        *) d=2s ;;
        esac
        "$bin" -q sim --scenario "$f" -D "$d" --json --yes >"$out/sim-$n.json"
    done
    "$bin" -q sim --json >"$out/sim-default.json"
    "$bin" -q sim >"$out/sim-default.txt"
    "$bin" -q sim --machine kvm-guest-2 --hz 250 --workload hogs:1@1 --noise \
        --cmdline nohz_full=1 -D 5s --json >"$out/sim-noise-guest.json"
    "$bin" -q sim --machine xeon-e5-2650v3-2s --hz 1000 --workload hogs:8 --noise \
        --cmdline "nohz_full=2-39" -D 3s --json >"$out/sim-noise-xeon.json"
    "$bin" -q sim --machine kvm-guest-2 --hz 250 --workload frames:1000@1:loop=50000 -D 5s \
        --histogram --json >"$out/sim-frames.json"
    "$bin" -q sim --machine xps13-7390 --hz 1000 --cmdline "nohz_full=all nohz_full_aggressive" \
        --workload hogs:2 -D 5s --json >"$out/sim-aggr.json"
    "$bin" -q sim --machine arm64-128-4n --hz 250 --workload hogs:16 -D 2s --json >"$out/sim-arm64.json"
    "$bin" -q sim --machine server-2012-64 --kernel-version 3.0 --hz 1000 --workload hogs:8 \
        -D 2s --json >"$out/sim-server-3.0.json"
    "$bin" -q sim --machine xps13-7390 --workload hogs:2 -D 200ms --trace "$out/trace.json" >/dev/null
    if [ "${FULL:-0}" = 1 ]; then
        "$bin" -q experiment e2 --json >"$out/e2-hour.json"
    fi
}

if [ "${KEEP_OLD:-0}" = 1 ] && [ -d "$dir/old" ]; then
    echo "outputs-cmp: reusing $dir/old"
else
    rm -rf "$dir/old"
    outputs "$old" "$dir/old"
fi
rm -rf "$dir/new"
outputs "$new" "$dir/new"
status=0 same=0
for f in "$dir"/old/*; do
    n=$(basename "$f")
    if cmp "$f" "$dir/new/$n"; then
        same=$((same + 1))
    else
        status=1
    fi
done
echo "outputs-cmp: $same of $(ls "$dir/old" | wc -l) outputs identical"
exit $status
