#!/usr/bin/env bash
# Compare ticklab's host harnesses with the established peer tools, side by side, on the same
# CPUs and with the same methods:
#
#   metric                      ticklab                                   peer
#   getpid ns/call              syscall:getpid@A:n=10000000               taskset -c A perf bench syscall basic
#                               (raw syscall(SYS_getpid), 10 M calls)     (getppid() 10 M times; usecs/op)
#   wake-up min / median, us    frames:1000@B:loop=0, SCHED_FIFO 50,      cyclictest -m -p 50 -i 1000 -a B -t 1
#                               mlockall, clock_nanosleep ABSTIME,        -D S --policy fifo -N -h 200000 -q
#                               --cpu-dma-latency=0                       (holds cpu_dma_latency at 0)
#   pipe round trip, same CPU   pingpong:pipe@A,A:n=1000000 (processes)   taskset -c A perf bench sched pipe
#   pipe round trip, across     pingpong:pipe@A,B:n=1000000 (processes)   perf bench sched pipe pinned to A,
#                                                                         its forked child re-pinned to B
#   futex round trip            pingpong:futex@A,A and @A,B               (no peer; shown for reference)
#
# perf bench sched pipe's "op" is one round trip (each side writes then reads once per loop),
# 1 M loops by default, processes unless -T; perf 6.1 has no option to place the two sides on
# different CPUs, hence the re-pinning of its child (the first few ms run on CPU A).
# cyclictest's latency is wake time minus the programmed absolute expiry, like ticklab's
# wake-up latency. Without -N it truncates to whole microseconds, which alone biases a 5 us
# minimum by ~10 %; so it runs with -N (nanoseconds) and a 200 000-bucket histogram of 1 ns
# buckets, and its median is read from that histogram counting overflows (> 200 us, which
# "# Total" leaves out) as the largest values. cyclictest holds /dev/cpu_dma_latency at 0
# for its run (PM QoS: no idle state slower to leave than 0 us), so ticklab's wake-up run
# holds it too (--cpu-dma-latency=0) and the wake-up rows compare like with like; this
# matters only under a cpuidle driver (haltpoll in a KVM guest, intel_idle, acpi_idle).
#
# Usage: scripts/compare-peers.sh [--repeats N] [--secs S] [--cpus A,B] [--no-install]
# Bands: getpid within 10 %, everything else within 20 % (ratio = ticklab / peer).
# Exit status: 0 when every metric's median ratio is within its band, 1 otherwise.

set -euo pipefail

repeats=2
secs=10
cpus=""
install=1
while [ $# -gt 0 ]; do
    case "$1" in
        --repeats) repeats="$2"; shift 2 ;;
        --secs) secs="$2"; shift 2 ;;
        --cpus) cpus="$2"; shift 2 ;;
        --no-install) install=0; shift ;;
        -h|--help) sed -n '2,31p' "$0"; exit 0 ;;
        *) echo "compare-peers: unknown argument $1" >&2; exit 2 ;;
    esac
done

repo="$(cd "$(dirname "$0")/.." && pwd)"
target="${CARGO_TARGET_DIR:-$repo/target}"

# --- peers ---------------------------------------------------------------------------------
find_perf() {
    if command -v perf >/dev/null 2>&1 && perf version >/dev/null 2>&1; then
        command -v perf
        return
    fi
    ls /usr/bin/perf_* 2>/dev/null | sort -V | tail -n 1
}
if [ "$install" = 1 ] && { ! command -v cyclictest >/dev/null 2>&1 || [ -z "$(find_perf)" ]; }; then
    echo "# installing rt-tests and linux-perf" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rt-tests linux-perf >/dev/null
fi
perf="$(find_perf)"
command -v cyclictest >/dev/null 2>&1 || { echo "compare-peers: cyclictest not found" >&2; exit 1; }
[ -n "$perf" ] || { echo "compare-peers: perf not found" >&2; exit 1; }

# --- ticklab -------------------------------------------------------------------------------
echo "# building ticklab (release) in $target" >&2
(cd "$repo" && CARGO_TARGET_DIR="$target" cargo build --release -q -p ticklab)
ticklab="$target/release/ticklab"

if [ -z "$cpus" ]; then
    online="$(cat /sys/devices/system/cpu/online)"
    first="${online%%[-,]*}"
    last="${online##*[-,]}"
    cpus="$first,$last"
fi
A="${cpus%,*}"
B="${cpus#*,}"
echo "# CPUs: A=$A B=$B; $repeats repeats; frames/cyclictest ${secs}s; perf: $perf ($("$perf" version))" >&2

# --- one measurement each ------------------------------------------------------------------
# Each prints one number (or fails).
tl_getpid() {
    "$ticklab" host run --workload "syscall:getpid@$A:n=10000000" --duration 5m |
        awk '/^syscall getpid/ { for (i = 1; i <= NF; i++) if ($i == "ns/call") print $(i-1) }'
}
perf_getppid() {
    taskset -c "$A" "$perf" bench syscall basic 2>/dev/null |
        awk '/usecs\/op/ { print $1 * 1000 }'
}
tl_wakeup() { # prints "min median"
    "$ticklab" host run --workload "frames:1000@$B:loop=0" --duration "${secs}s" --fifo-priority 50 \
        --cpu-dma-latency=0 |
        awk '/^wakeup / { for (i = 1; i <= NF; i++) { if ($i == "min") m = $(i+1); if ($i == "p50") p = $(i+1) } print m, p }'
}
cyclic_wakeup() { # prints "min median" in us
    cyclictest -m -p 50 -i 1000 -a "$B" -t 1 -D "$secs" --policy fifo -N -h 200000 -q 2>/dev/null |
        awk '
            /^# Total:/ { total = $3 + 0 }
            /^# Histogram Overflows:/ { over = $4 + 0 }
            /^# Min Latencies:/ { min = $4 + 0 }
            /^[0-9]+ [0-9]+$/ { if ($2 + 0 > 0) { lat[n] = $1 + 0; cnt[n] = $2 + 0; n++ } }
            END {
                half = int((total + over + 1) / 2); c = 0; med = -1
                for (i = 0; i < n; i++) { c += cnt[i]; if (c >= half) { med = lat[i]; break } }
                if (med < 0) med = 200000
                print min / 1000, med / 1000
            }'
}
tl_pingpong() { # $1 method, $2 cpu a, $3 cpu b -> ns per round trip
    "$ticklab" host run --workload "pingpong:$1@$2,$3:n=1000000" --duration 5m |
        awk '/^pingpong / { for (i = 1; i <= NF; i++) if ($i == "ns/round") print $(i-1) }'
}
perf_pipe_same() {
    taskset -c "$A" "$perf" bench sched pipe 2>/dev/null | awk '/usecs\/op/ { print $1 * 1000 }'
}
perf_pipe_across() {
    local out pid child i
    out="$(mktemp)"
    taskset -c "$A" "$perf" bench sched pipe >"$out" 2>/dev/null &
    pid=$!
    child=""
    for i in $(seq 1 500); do
        child="$(pgrep -P "$pid" | head -n 1 || true)"
        [ -n "$child" ] && break
        sleep 0.01
    done
    [ -n "$child" ] && taskset -pc "$B" "$child" >/dev/null
    wait "$pid"
    awk '/usecs\/op/ { print $1 * 1000 }' "$out"
    rm -f "$out"
}

# --- table ---------------------------------------------------------------------------------
rows="$(mktemp)"
trap 'rm -f "$rows"' EXIT
row() { # run metric ticklab peer band
    awk -v run="$1" -v m="$2" -v t="$3" -v p="$4" -v band="$5" 'BEGIN {
        if (p == "-" || p + 0 == 0) { printf "%-3s %-28s %12.1f %12s %7s %6s %s\n", run, m, t, "-", "-", "-", "info"; exit }
        r = t / p; ok = (r >= 1 - band && r <= 1 + band) ? "PASS" : "FAIL"
        printf "%-3s %-28s %12.1f %12.1f %7.3f %5d%% %s\n", run, m, t, p, r, band * 100, ok
    }' | tee -a "$rows"
}

printf "%-3s %-28s %12s %12s %7s %6s %s\n" run metric ticklab peer ratio band result
for run in $(seq 1 "$repeats"); do
    row "$run" "getpid ns/call (CPU $A)" "$(tl_getpid)" "$(perf_getppid)" 0.10
    read -r tmin tmed <<<"$(tl_wakeup)"
    read -r cmin cmed <<<"$(cyclic_wakeup)"
    row "$run" "wakeup min us (CPU $B)" "$tmin" "$cmin" 0.20
    row "$run" "wakeup median us (CPU $B)" "$tmed" "$cmed" 0.20
    row "$run" "pipe rt ns ($A,$A)" "$(tl_pingpong pipe "$A" "$A")" "$(perf_pipe_same)" 0.20
    row "$run" "pipe rt ns ($A,$B)" "$(tl_pingpong pipe "$A" "$B")" "$(perf_pipe_across)" 0.20
    row "$run" "futex rt ns ($A,$A)" "$(tl_pingpong futex "$A" "$A")" - 0
    row "$run" "futex rt ns ($A,$B)" "$(tl_pingpong futex "$A" "$B")" - 0
done

# Median ratio per metric across repeats decides.
echo
echo "median over $repeats repeats:"
awk '
    $NF == "PASS" || $NF == "FAIL" {
        m = $2; for (i = 3; i <= NF - 5; i++) m = m " " $i
        t[m] = t[m] " " $(NF-4); p[m] = p[m] " " $(NF-3); r[m] = r[m] " " $(NF-2); b[m] = $(NF-1)
        if (!(m in seen)) { seen[m] = 1; order[n++] = m }
    }
    $NF == "info" {
        m = $2; for (i = 3; i <= NF - 5; i++) m = m " " $i
        t[m] = t[m] " " $(NF-4); b[m] = "-"
        if (!(m in seen)) { seen[m] = 1; order[n++] = m }
    }
    function median(s,   a, k, i, j, x) {
        k = split(s, a, " ")
        for (i = 2; i <= k; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > x + 0; j--) a[j+1] = a[j]; a[j+1] = x }
        return (k % 2) ? a[(k+1)/2] : (a[k/2] + a[k/2+1]) / 2
    }
    END {
        fail = 0
        printf "%-28s %12s %12s %7s %6s %s\n", "metric", "ticklab", "peer", "ratio", "band", "result"
        for (i = 0; i < n; i++) {
            m = order[i]
            if (b[m] == "-") { printf "%-28s %12.1f %12s %7s %6s %s\n", m, median(t[m]), "-", "-", "-", "info"; continue }
            rr = median(r[m]); band = b[m] + 0; ok = (rr >= 1 - band / 100 && rr <= 1 + band / 100) ? "PASS" : "FAIL"
            if (ok == "FAIL") fail = 1
            printf "%-28s %12.1f %12.1f %7.3f %5d%% %s\n", m, median(t[m]), median(p[m]), rr, band, ok
        }
        exit fail
    }' "$rows"
