#!/usr/bin/env bash
# Validation of the twin against a real kernel under QEMU (issue 12): every boot line below
# on 2 vCPUs with the workloads idle, hogs:1@1, hogs:1@0 and hogs:2, plus the idle rows on
# 4 vCPUs (hogs on 4 vCPUs would oversubscribe a 2-core host under TCG), plus the frame,
# ping-pong, syscall and 3-vCPU points of issue 29 (`workload_points`). Each point is one
# `ticklab vm compare --json` file; `ticklab vm table` renders them (typed, no text scraping)
# between the markers of docs/vm-validation.md, whose hand-written reasons stay as they are.
# A point whose always-runnable vCPUs outnumber this host's online CPUs (on 2 cores: the
# 4-vCPU idle=poll point) is run and shown, but `vm table` marks it "not judged
# (oversubscribed: ...)" and leaves it out of the judged count (crates/vm/src/oversubscription.rs).
#
# Usage: scripts/vm-validate.sh [--quick] [OUTDIR]
#   --quick   four points only (the CI smoke: .ci/run)
#   OUTDIR    where the JSON files go (default: a new temporary directory)
# Environment: TICKLAB (binary, default target/release/ticklab), VM_DURATION (default 5s),
# VM_ARGS (extra flags for every boot, e.g. "--accel tcg"), VM_NICE (default -10 as root, 0
# otherwise): under TCG a vCPU thread that waits for a host core loses guest ticks, so the
# guest runs ahead of a host's background builds (docs/vm-validation.md, "Emulator").
# VM_POINTS (newline-separated "VCPUS|CMDLINE|WORKLOAD" lines) replaces the point list, and
# VM_DOC (default docs/vm-validation.md; empty: leave every doc alone) names the page to
# rewrite: scripts/vm-matrix.sh uses both, with VM_ARGS="--kernel ...", once per kernel.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
if [ "${1:-}" = "--quick" ]; then quick=1; shift; fi
out=${1:-$(mktemp -d /tmp/ticklab-vm-validate.XXXXXX)}
mkdir -p "$out"
ticklab=${TICKLAB:-target/release/ticklab}
duration=${VM_DURATION:-5s}
if [ "$(id -u)" = 0 ]; then nice_default=-10; else nice_default=0; fi
nice=${VM_NICE:-$nice_default}
[ -x "$ticklab" ] || { echo "vm-validate: $ticklab not built (cargo build --release)" >&2; exit 2; }

boot_lines=(
    ""
    "nohz=off"
    "nohz_full=1"
    "nohz_full=0-1"
    "isolcpus=1"
    "isolcpus=nohz,domain,1 nohz_full=1"
    "rcu_nocbs=1"
    "skew_tick=1"
    "skew_tick=1 nohz=off"
    "idle=poll"
    "cpuidle.off=1"
    "highres=off"
    "nohz=off highres=off"
)
workloads=(idle hogs:1@1 hogs:1@0 hogs:2)

# Workloads beyond idle and hogs (issue 29), each on the CPUs its question is about: a frame
# worker alone and beside a hog on a nohz_full CPU (its sleeper is queued on the housekeeping
# CPU), on an isolcpus=nohz,domain CPU (6.1: the timers' housekeeping type is kept) and on a
# plain CPU; a futex ping-pong across CPUs (refused by the twin, with the reason in the
# table); a getpid loop on a nohz_full CPU; 3 vCPUs with two nohz_full CPUs.
frames="frames:60@1:loop=1000"
workload_points=(
    "2|nohz_full=1|$frames"
    "2|nohz_full=1|hogs:1@1+$frames"
    "2|isolcpus=nohz,domain,1|$frames"
    "2|isolcpus=nohz,domain,1|hogs:1@1+$frames"
    "2||$frames"
    "2||hogs:1@1+$frames"
    "2||pingpong:futex@0,1"
    "2|nohz_full=1|syscall:getpid@1"
    "3|nohz_full=1-2|idle"
    "3|nohz_full=1-2|hogs:1@1"
    "3|nohz_full=1-2|frames:60@2:loop=1000"
)

points=()  # "vcpus|cmdline|workload"
if [ "$quick" = 1 ]; then
    points=("2||idle" "2|nohz_full=1|hogs:1@1" "2|nohz=off|idle" "2|nohz_full=1|$frames")
else
    # The workload points first: they are the newest questions.
    points+=("${workload_points[@]}")
    for line in "${boot_lines[@]}"; do
        for w in "${workloads[@]}"; do points+=("2|$line|$w"); done
    done
    for line in "${boot_lines[@]}"; do
        # nohz_full=0-1 names CPUs of a 2-CPU guest; on 4 vCPUs the same lines stand.
        points+=("4|$line|idle")
    done
fi

if [ -n "${VM_POINTS:-}" ]; then
    mapfile -t points <<<"$VM_POINTS"
fi

# Where KVM cannot run the guest, every boot would first wait 30 s for a KVM boot that never
# starts before falling back to TCG: after the first fallback, the rest go to TCG directly.
accel=()
# boot_points DIR: one `vm compare` per point into DIR/NNN.json; the files that came out are
# in `files` afterwards.
boot_points() {
    local dir=$1 n=0 p vcpus line w f
    mkdir -p "$dir"
    files=()
    for p in "${points[@]}"; do
        IFS='|' read -r vcpus line w <<<"$p"
        n=$((n + 1))
        f=$(printf '%s/%03d.json' "$dir" "$n")
        echo "[$n/${#points[@]}] vcpus=$vcpus cmdline=\"$line\" workload=$w" >&2
        # shellcheck disable=SC2086
        if nice -n "$nice" "$ticklab" vm compare --vcpus "$vcpus" --cmdline "$line" --workload "$w" \
            --duration "$duration" --json "${accel[@]}" ${VM_ARGS:-} >"$f.tmp"; then
            mv "$f.tmp" "$f"
            files+=("$f")
            if [ ${#accel[@]} = 0 ] && [[ " ${VM_ARGS:-} " != *" --accel "* ]] && python3 -c \
                'import json, sys; sys.exit(json.load(open(sys.argv[1]))["comparison"].get("kvm_fallback") is None)' \
                "$f"; then
                echo "vm-validate: KVM did not run the guest; the other points boot under TCG" >&2
                accel=(--accel tcg)
            fi
        else
            echo "vm-validate: point $n failed (kept $f.tmp)" >&2
        fi
    done
}

boot_points "$out"
table=$("$ticklab" vm table "${files[@]}")
echo "$table"
if [ "$quick" = 1 ]; then
    # The smoke fails when a judged CPU misses its band, in two boots of its points running.
    # One boot may miss by chance: the idle guest's CPU 0 (the coordinator's) spreads from boot
    # to boot across its band's edge (docs/vm-validation.md, "The CI smoke"), so a miss boots
    # all four points once more, prints that table too, and only a second miss fails.
    "$ticklab" vm table --check "${files[@]}" >/dev/null && exit 0
    echo "vm-validate: a judged CPU missed its band; booting the ${#points[@]} points once more" >&2
    boot_points "$out/again"
    "$ticklab" vm table "${files[@]}"
    exec "$ticklab" vm table --check "${files[@]}" >/dev/null
fi

doc=${VM_DOC-docs/vm-validation.md}
[ -n "$doc" ] || exit 0
kernel=$("$ticklab" vm table --header "${files[0]}")
{
    awk '/<!-- vm-validate: begin -->/ { print; exit } { print }' "$doc"
    echo
    echo "Generated by \`scripts/vm-validate.sh\` on $(date -u '+%Y-%m-%d %H:%M UTC'): $kernel."
    echo
    echo "$table"
    echo
    awk 'f { print } /<!-- vm-validate: end -->/ { f = 1; print }' "$doc"
} >"$doc.new"
mv "$doc.new" "$doc"
echo "vm-validate: wrote $doc (JSON in $out)" >&2
