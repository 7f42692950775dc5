#!/usr/bin/env bash
# E1 on a real nohz_full_aggressive kernel (issue 24): 8 vCPUs, HZ=1000, nohz_full=all, with
# and without the nohz_full_aggressive boot flag, idle and 1, 2, 4, 8 hogs, each a
# `ticklab vm compare --json` file (the kernel's LOC per CPU beside the twin of that guest);
# plus the coarse-clock staleness a spinning reader on CPU 1 sees in each mode. The 4- and
# 8-hog points oversubscribe a 2-core host under TCG (ticks are lost): they run and are
# labelled, not judged. The table is printed by scripts/vm-e1-table.sh.
#
# Hogs are pinned to nohz_full CPUs from CPU 1 up (the 8-hog point covers every CPU): the
# host lab would put an unpinned hog on CPU 0 first, and CPU 0 is the housekeeping CPU that
# `nohz_full=all` leaves out of the list for timekeeping, where a hog keeps the tick running
# in both modes. On the laptop the aggressive mode's 1-4 hog rows stay near its idle row, so
# its hogs ran on nohz_full CPUs.
#
# Usage: scripts/vm-e1.sh [OUTDIR]
# Environment: TICKLAB (default target/release/ticklab), E1_KERNEL (a `vm build` name, key or
# image; default 6.1-hz1000-full+nohz_full_aggressive), E1_CONFIG (its .config when E1_KERNEL
# is an image path), VM_DURATION (default 5s), E1_LOADS (LABEL=WORKLOAD words, default
# "idle=idle hogs1=hogs:1@1 hogs2=hogs:2@1-2 hogs4=hogs:4@1-4 hogs8=hogs:8"), VM_NICE
# (default -10 as root, as scripts/vm-validate.sh), E1_EXTRA (more boot parameters for both
# modes, e.g. "rcu_nocbs=all" for the control run of docs/vm-validation.md).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-$(mktemp -d /tmp/ticklab-vm-e1.XXXXXX)}
mkdir -p "$out"
ticklab=${TICKLAB:-target/release/ticklab}
kernel=${E1_KERNEL:-6.1-hz1000-full+nohz_full_aggressive}
duration=${VM_DURATION:-5s}
loads=${E1_LOADS:-idle=idle hogs1=hogs:1@1 hogs2=hogs:2@1-2 hogs4=hogs:4@1-4 hogs8=hogs:8}
if [ "$(id -u)" = 0 ]; then nice_default=-10; else nice_default=0; fi
nice=${VM_NICE:-$nice_default}
[ -x "$ticklab" ] || { echo "vm-e1: $ticklab not built (cargo build --release)" >&2; exit 2; }
kargs=(--kernel "$kernel")
if [ -n "${E1_CONFIG:-}" ]; then kargs+=(--kernel-config "$E1_CONFIG"); fi
extra=${E1_EXTRA:+ $E1_EXTRA}
declare -A line=([nohz_full]="nohz_full=all$extra" [aggressive]="nohz_full=all nohz_full_aggressive$extra")
for mode in nohz_full aggressive; do
    for lw in $loads; do
        label=${lw%%=*} w=${lw#*=}
        f="$out/$mode-$label.json"
        echo "vm-e1: $mode $label ($w)" >&2
        if nice -n "$nice" "$ticklab" vm compare "${kargs[@]}" --vcpus 8 --accel tcg \
            --cmdline "${line[$mode]}" --workload "$w" --duration "$duration" --json >"$f.tmp"; then
            mv "$f.tmp" "$f"
        else
            echo "vm-e1: $mode $w failed (kept $f.tmp)" >&2
        fi
    done
    f="$out/$mode-staleness.json"
    echo "vm-e1: $mode staleness (reader spinning on CPU 1)" >&2
    if nice -n "$nice" "$ticklab" vm "${kargs[@]}" --vcpus 8 --accel tcg --cmdline "${line[$mode]}" \
        --probe staleness --probe-cpu 1 --duration "$duration" >"$f.tmp"; then
        mv "$f.tmp" "$f"
    else
        echo "vm-e1: $mode staleness failed (kept $f.tmp)" >&2
    fi
done
echo "$out"
