#!/usr/bin/env bash
# A ticklab specialised to one run by profile-guided optimisation (README, "Speed"): the same
# sources and the same outputs, byte for byte, compiled with the branch and call counts of a
# training run.
#
#   scripts/pgo-build.sh OUT -- experiment e2 -D 30s            # train on E2, write OUT
#   scripts/pgo-build.sh OUT -- sim --scenario my.toml -D 10s   # train on your sweep's scenario
#   scripts/pgo-build.sh                                        # default training, target/pgo/ticklab
#
# The gain belongs to what the training ran (docs/model.md, "The fourth round of issue 34"):
# trained on `experiment e2 -D 30s`, `experiment e2` ran 1.12x faster; E2 left out of the
# training, 0.97x. So train on a short run of the scenario a long sweep will repeat. The
# default training is E1, E3, E4, OS noise on a guest and on a Xeon, a 64-rank BSP job, the
# aggressive proposal and the trace exporter.
#
# 1. an instrumented build (`-Cprofile-generate`, release profile) in target/pgo-gen;
# 2. the training run(s) with it;
# 3. `llvm-profdata merge` (rustup's `llvm-tools` component, added here if missing; it must
#    match rustc's LLVM) and the optimised build (`-Cprofile-use`) in target/pgo-use, copied
#    to OUT;
# 4. the optimised binary's outputs against the plain release build's
#    (`scripts/outputs-cmp.sh`): the profile moves code, never a number.
#
# PGO_QUICK=1 trains on two simulated seconds of E1 and skips step 4 (the CI smoke).
# `scripts/pgo-build.sh --profdata` only finds (or adds) llvm-profdata and prints its path.
# Exits 2 on bad arguments or a missing tool, 1 when the outputs differ.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# llvm-profdata of rustc's own LLVM (rustup's llvm-tools, added if missing); exits 2 without it.
find_profdata() {
    local sysroot host profdata
    sysroot=$(rustc --print sysroot)
    host=$(rustc -vV | sed -n 's/^host: //p')
    profdata="$sysroot/lib/rustlib/$host/bin/llvm-profdata"
    if [ ! -x "$profdata" ] && command -v rustup >/dev/null; then
        echo "pgo-build: adding rustup's llvm-tools (for llvm-profdata)" >&2
        rustup component add llvm-tools >&2 || true
    fi
    if [ ! -x "$profdata" ]; then
        echo "pgo-build: $profdata not found: 'rustup component add llvm-tools' installs the" \
            "llvm-profdata of rustc's LLVM ($(rustc -vV | sed -n 's/^LLVM version: //p'))" >&2
        exit 2
    fi
    echo "$profdata"
}
if [ "${1:-}" = --profdata ]; then
    find_profdata
    exit 0
fi

out=target/pgo/ticklab
if [ $# -gt 0 ] && [ "$1" != -- ]; then
    out=$1
    shift
fi
train=()
if [ $# -gt 0 ]; then
    if [ "$1" != -- ] || [ $# -lt 2 ]; then
        echo "usage: $0 [OUT] [-- TICKLAB_ARGS...]" >&2
        exit 2
    fi
    shift
    train=("$@")
fi

profdata=$(find_profdata)

data=$root/target/pgo-data
rm -rf "$data"
mkdir -p "$data"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "pgo-build: 1/4 instrumented build (target/pgo-gen)" >&2
RUSTFLAGS="-Cprofile-generate=$data" CARGO_TARGET_DIR=target/pgo-gen \
    cargo build --release --bin ticklab --quiet
gen=target/pgo-gen/release/ticklab

echo "pgo-build: 2/4 training" >&2
if [ ${#train[@]} -gt 0 ]; then
    "$gen" -q "${train[@]}" >/dev/null
elif [ "${PGO_QUICK:-0}" = 1 ]; then
    "$gen" -q experiment e1 -D 2s >/dev/null
else
    "$gen" -q experiment e1 >/dev/null
    "$gen" -q experiment e3 >/dev/null
    "$gen" -q experiment e4 >/dev/null
    "$gen" -q sim --machine kvm-guest-2 --hz 250 --workload hogs:1@1 --noise \
        --cmdline nohz_full=1 -D 60s >/dev/null
    "$gen" -q sim --machine xeon-e5-2650v3-2s --hz 1000 --workload hogs:8 --noise \
        --cmdline "nohz_full=2-39" -D 20s >/dev/null
    "$gen" -q sim --scenario experiments/bsp-64.toml -D 10s >/dev/null
    "$gen" -q sim --machine xps13-7390 --hz 1000 --cmdline "nohz_full=all nohz_full_aggressive" \
        --workload hogs:2 -D 60s >/dev/null
    "$gen" -q sim --machine xps13-7390 --workload hogs:2 -D 1s --trace "$tmp/trace.json" \
        >/dev/null 2>&1
fi

echo "pgo-build: 3/4 merge and optimised build (target/pgo-use)" >&2
"$profdata" merge -o "$data/merged.profdata" "$data"/*.profraw
RUSTFLAGS="-Cprofile-use=$data/merged.profdata" CARGO_TARGET_DIR=target/pgo-use \
    cargo build --release --bin ticklab --quiet
mkdir -p "$(dirname "$out")"
cp target/pgo-use/release/ticklab "$out"

if [ "${PGO_QUICK:-0}" = 1 ]; then
    echo "pgo-build: 4/4 output check skipped (PGO_QUICK=1)" >&2
else
    echo "pgo-build: 4/4 outputs against the plain release build" >&2
    cargo build --release --bin ticklab --quiet
    scripts/outputs-cmp.sh target/release/ticklab "$out" "$tmp/outputs" 2>/dev/null
fi
echo "pgo-build: wrote $out; time it against the plain build with" \
    "scripts/bench-ab.sh or /usr/bin/time on your run" >&2
