#!/usr/bin/env bash
# The E1 table from scripts/vm-e1.sh's output directory: per load and mode the kernel's total
# LOC/s (and per CPU), the twin of that guest, the published laptop figure, the twin/kernel
# error, and the aggressive/nohz_full ratios; then the coarse-clock staleness. Reads the typed
# JSON (`vm compare --json`, `host staleness --json`) with jq.
#
# Usage: scripts/vm-e1-table.sh OUTDIR
set -euo pipefail
dir=${1:?usage: scripts/vm-e1-table.sh OUTDIR}
command -v jq >/dev/null || { echo "vm-e1-table: needs jq (apt-get install jq)" >&2; exit 2; }
declare -A pub=(
    [nohz_full-idle]=1036.679 [aggressive-idle]=98.685
    [nohz_full-hogs1]=1047.522 [aggressive-hogs1]=106.296
    [nohz_full-hogs2]=1046.203 [aggressive-hogs2]=127.587
    [nohz_full-hogs4]=1048.590 [aggressive-hogs4]=146.586
    [nohz_full-hogs8]=1074.867 [aggressive-hogs8]=1062.277
)
total() { jq '[.comparison.cpus[].kernel_loc_per_s] | add' "$1"; }
twin() { jq '[.comparison.cpus[].twin_loc_per_s] | add' "$1"; }
percpu() { jq -r '[.comparison.cpus[] | (.kernel_loc_per_s | floor | tostring) + "/" + (.twin_loc_per_s | floor | tostring)] | join(" ")' "$1"; }
wait_ms() { jq -r 'if .comparison.host_wait then (.comparison.host_wait.run_delay_s * 1000 / .comparison.host_wait.wall_s | floor | tostring) else "-" end' "$1"; }
# A judged point passes when the twin's total is within 15 % of the kernel's, a ratio when the
# twin's aggressive/nohz_full ratio is within 20 % of the kernel's (issue 24).
verdict() { if [ "$(echo "$1 <= $2 && $1 >= -$2" | bc -l)" = 1 ]; then echo ok; else echo MISS; fi; }
echo "| load | mode | kernel LOC/s | twin LOC/s | twin/kernel | published | per CPU kernel/twin | QEMU wait ms/s | judged | verdict (±15 %) |"
echo "|---|---|---:|---:|---:|---:|---|---:|---|---|"
for w in idle hogs1 hogs2 hogs4 hogs8; do
    for mode in nohz_full aggressive; do
        f="$dir/$mode-$w.json"
        [ -s "$f" ] || { echo "| $w | $mode | not run | | | ${pub[$mode-$w]} | | | |"; continue; }
        k=$(total "$f"); t=$(twin "$f")
        err=$(echo "($t - $k) * 100 / $k" | bc -l)
        judged=yes v=$(verdict "$err" 15)
        case $w in hogs4|hogs8) judged="no (oversubscribed under TCG)" v=-;; esac
        printf '| %s | %s | %.1f | %.1f | %+.1f %% | %s | %s | %s | %s | %s |\n' "$w" "$mode" "$k" "$t" \
            "$err" "${pub[$mode-$w]}" "$(percpu "$f")" "$(wait_ms "$f")" "$judged" "$v"
    done
done
echo
echo "| load | kernel aggressive/nohz_full | twin aggressive/nohz_full | twin ratio / kernel ratio | published | verdict (±20 %) |"
echo "|---|---:|---:|---:|---:|---|"
for w in idle hogs1 hogs2 hogs4 hogs8; do
    a="$dir/aggressive-$w.json"; n="$dir/nohz_full-$w.json"
    [ -s "$a" ] && [ -s "$n" ] || continue
    kr=$(echo "$(total "$a") / $(total "$n")" | bc -l); tr=$(echo "$(twin "$a") / $(twin "$n")" | bc -l)
    pr=$(echo "${pub[aggressive-$w]} / ${pub[nohz_full-$w]}" | bc -l)
    rr=$(echo "$tr / $kr" | bc -l)
    v=$(verdict "$(echo "($rr - 1) * 100" | bc -l)" 20)
    case $w in hogs4|hogs8) v="- (not judged)";; esac
    printf '| %s | %.3f | %.3f | %.2f | %.3f | %s |\n' "$w" "$kr" "$tr" "$rr" "$pr" "$v"
done
echo
# The probe's guest runs the spinning reader alone (no host-run coordinator waking CPU 0 ten
# times a second); the twin figures are those of the 1-hog point, which has the coordinator.
echo "| mode | kernel (reader alone on CPU 1): mean lag ms | max lag ms | coarse updates/s | longest step ms | twin (1 hog + coordinator): mean coarse staleness ms | longest jiffies gap ms |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for mode in nohz_full aggressive; do
    s="$dir/$mode-staleness.json"; h="$dir/$mode-hogs1.json"
    [ -s "$s" ] || continue
    read -r mean max upd step < <(jq -r '[.mean_lag_ns/1e6, .max_lag_ns/1e6, .coarse_updates/(.duration_ns/1e9), .max_coarse_step_ns/1e6] | @tsv' "$s")
    if [ -s "$h" ]; then
        read -r tmean tgap < <(jq -r 'if .twin.timekeeping then [.twin.timekeeping.mean_coarse_staleness_ns/1e6, .twin.timekeeping.max_jiffies_gap_ns/1e6] else ["-","-"] end | @tsv' "$h")
    else tmean=-; tgap=-; fi
    [ "$tmean" = - ] || tmean=$(printf '%.3f' "$tmean")
    [ "$tgap" = - ] || tgap=$(printf '%.3f' "$tgap")
    printf '| %s | %.3f | %.3f | %.1f | %.3f | %s | %s |\n' "$mode" "$mean" "$max" "$upd" "$step" "$tmean" "$tgap"
done
