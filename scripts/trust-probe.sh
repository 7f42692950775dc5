#!/usr/bin/env bash
# The reproducers of issue 25 ("Trust, second pass"), re-run on a built binary: one line per
# case with its exit code and the first line of its stderr, plus the numbers the issue asks
# for (RSS and time, byte-identical resumed sweeps). Run as root from the repository:
#
#   cargo build --release && scripts/trust-probe.sh [path/to/ticklab]
#
# The root cases (the restore record, two concurrent --set runs) are skipped without root.
# Nothing is left behind: the temporary directory is removed, /run/ticklab's record is only
# forged inside this script and removed again, and the haltpoll parameter is checked to be
# back at its value.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-target/release/ticklab}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# line NAME CMD...: runs CMD, prints "NAME: exit N: first stderr line".
line() {
    local name=$1
    shift
    "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    printf '%-44s exit %3s  %s\n' "$name" "$rc" "$(head -n 1 "$tmp/err" | cut -c1-150)"
}

# A small sweep: 2 HZ x 3 loads x 3 seeds = 18 runs of 300 ms on the 2-CPU guest.
grid=(--machine kvm-guest-2 --warmup 10ms --set hz=250 --set hz=1000 --set workload=hogs:0..2 -q)
sweep=("$bin" sweep "${grid[@]}" --duration 1s --seeds 3)
# The same grid, quick: 2 seeds of 20 ms.
quick=("$bin" sweep "${grid[@]}" --duration 20ms --seeds 2)

echo "== 1. writes as root"
line "sim --trace /dev/full" "$bin" sim -D 20ms -q --trace /dev/full
echo "   ls -l /dev/full: $(ls -l /dev/full)"
"${quick[@]}" -o "$tmp/rows.jsonl" 2>/dev/null
line "plot sweep -o /dev/full" "$bin" plot "$tmp/rows.jsonl" --metric irq_per_s -o /dev/full
line "report --html /dev/full" "$bin" report "$tmp/rows.jsonl" --html /dev/full
line "merge -o /dev/full" "$bin" merge "$tmp/rows.jsonl" -o /dev/full
line "sweep -o /dev/full" "${quick[@]}" -o /dev/full
echo "   ls -l /dev/full: $(ls -l /dev/full)"
line "sim --trace DIR (a directory)" "$bin" sim -D 20ms -q --trace "$tmp"
line "merge -o DIR" "$bin" merge "$tmp/rows.jsonl" -o "$tmp"
(cd "$tmp" && line "sim --trace - (stdout)" "$bin" sim -D 20ms -q --trace - --json)
echo "   --trace - wrote $(wc -c <"$tmp/out") bytes to stdout; a file named '-': $([ -e "$tmp/-" ] && echo yes || echo no)"

if [ "$(id -u)" = 0 ] && [ -w /sys/module/haltpoll/parameters/guest_halt_poll_ns ]; then
    param=/sys/module/haltpoll/parameters/guest_halt_poll_ns
    before=$(cat $param)
    mkdir -p /run/ticklab
    echo victim >"$tmp/victim"
    printf '%s\tHACKED\n' "$tmp/victim" >/run/ticklab/params-restore
    line "forged restore record (other path)" "$bin" host run --workload idle -D 100ms -q
    echo "   victim file now: $(cat "$tmp/victim")"
    printf '\xff\xfe\n' >/run/ticklab/params-restore
    line "non-UTF-8 restore record" "$bin" host run --workload idle -D 100ms -q
    rm -f /run/ticklab/params-restore
    "$bin" host run --workload idle -D 3s -q --set haltpoll.guest_halt_poll_ns=7 >/dev/null 2>"$tmp/first.err" &
    first=$!
    for _ in $(seq 100); do [ "$(cat $param)" = 7 ] && break; sleep 0.05; done
    line "second concurrent host run --set" "$bin" host run --workload idle -D 100ms -q --set haltpoll.guest_halt_poll_ns=9
    echo "   during the first run: guest_halt_poll_ns = $(cat $param)"
    wait $first
    echo "   first run: exit $?; after it: guest_halt_poll_ns = $(cat $param) (was $before)"
else
    echo "   (not root or no haltpoll parameters: restore-record and concurrent --set cases skipped)"
fi

echo "== 2. bounded input memory"
for cmd in "merge /dev/zero" "plot /dev/zero --metric irq_per_s" "report /dev/zero --html /dev/null" "sweep --file /dev/zero -q"; do
    # shellcheck disable=SC2086
    /usr/bin/time -v "$bin" $cmd >/dev/null 2>"$tmp/time"
    rc=$?
    printf '%-44s exit %3s  %s\n' "$cmd" "$rc" "$(head -n 1 "$tmp/time" | cut -c1-110)"
    echo "   max RSS $(awk -F': ' '/Maximum resident/ {print $2}' "$tmp/time") KiB, wall $(awk -F': ' '/Elapsed/ {print $2}' "$tmp/time")"
done
yes | "$bin" merge - >/dev/null 2>"$tmp/err"
printf '%-44s exit %3s  %s\n' "yes | merge -" "${PIPESTATUS[1]}" "$(head -n 1 "$tmp/err")"
/usr/bin/time -v "$bin" sim --machine server-2012-64 --workload frames:100@0-63:loop=10 -D 10ms \
    --histogram=10000000 >/dev/null 2>"$tmp/time"
rc=$?
printf '%-44s exit %3s  %s\n' "--histogram=10000000 on 64 CPUs" "$rc" "$(head -n 1 "$tmp/time" | cut -c1-150)"
echo "   max RSS $(awk -F': ' '/Maximum resident/ {print $2}' "$tmp/time") KiB"
/usr/bin/time -v "$bin" sim --machine server-2012-64 --workload frames:100@0-63:loop=10 -D 10ms -q \
    --histogram=262144 >/dev/null 2>"$tmp/time"
rc=$?
printf '%-44s exit %3s\n' "--histogram=262144 on 64 CPUs (the cap)" "$rc"
echo "   max RSS $(awk -F': ' '/Maximum resident/ {print $2}' "$tmp/time") KiB"

echo "== 4. sweeps keep finished work"
"${sweep[@]}" -j 2 -o "$tmp/whole.jsonl"
echo "   uninterrupted sweep: $(wc -l <"$tmp/whole.jsonl") rows"
for sig in INT TERM KILL; do
    out=$tmp/$sig.jsonl
    "${sweep[@]}" -j 1 -o "$out" >/dev/null 2>"$tmp/err" &
    pid=$!
    # Signal as soon as the first finished row is in the journal.
    until [ -s "$out.journal" ]; do sleep 0.01; done
    kill -"$sig" $pid
    wait $pid
    rc=$?
    printf '%-44s exit %3s  %s\n' "SIG$sig during sweep -o" "$rc" "$(head -n 1 "$tmp/err" | cut -c1-150)"
    echo "   journal: $(wc -l <"$out.journal") finished rows kept"
    line "  same sweep again without --resume" "${sweep[@]}" -o "$out"
    line "  --resume after SIG$sig" "${sweep[@]}" -j 2 --resume -o "$out"
    if cmp -s "$out" "$tmp/whole.jsonl"; then
        echo "   cmp resumed vs uninterrupted: identical ($(wc -c <"$out") bytes)"
    else
        echo "   cmp resumed vs uninterrupted: DIFFERENT"
    fi
done
sed '4s/"seed":2/"seed":99/' "$tmp/rows.jsonl" >"$tmp/edited.jsonl"
line "merge with a hand-edited seed" "$bin" merge "$tmp/edited.jsonl"

echo "== 5. exit codes"
line "sweep -o /dev/full (full disk)" "${quick[@]}" -o /dev/full
line "host calibrate --out DIR" "$bin" host calibrate -D 1s --out "$tmp"
for cmd in "sweep" "merge" "host inspect" "host irqs -D 100ms" "host why -D 100ms" "man" "completions bash" "json-schema report"; do
    case $cmd in
        sweep) args=("${quick[@]:1}") ;;
        merge) args=(merge "$tmp/rows.jsonl") ;;
        *) read -r -a args <<<"$cmd" ;;
    esac
    # The reader goes away first: a closed stdout.
    "$bin" "${args[@]}" 2>"$tmp/err" | true
    printf '%-44s exit %3s  %s\n' "$cmd | (closed)" "${PIPESTATUS[0]}" "$(head -n 1 "$tmp/err")"
done
line "vm --memory 0" "$bin" vm --memory 0
echo "not a kernel" >"$tmp/vmlinuz-6.1.0-fake"
printf '# Linux/x86 6.1.0 Kernel Configuration\nCONFIG_HZ=250\n' >"$tmp/config-6.1.0-fake"
line "vm --kernel (not a bzImage)" "$bin" vm --kernel "$tmp/vmlinuz-6.1.0-fake"
python3 -c "import sys; b=bytearray(4096); b[0x202:0x206]=b'HdrS'; open(sys.argv[1],'wb').write(b)" "$tmp/bzImage"
echo "hello, not a config" >"$tmp/notconfig"
line "vm --kernel-config (not a config)" "$bin" vm --kernel "$tmp/bzImage" --kernel-config "$tmp/notconfig"
line "vm --kernel-config /dev/zero" "$bin" vm --kernel "$tmp/bzImage" --kernel-config /dev/zero

echo "== 6. smaller holes"
line "frames:1e-12" "$bin" sim --workload frames:1e-12@1:loop=10 -D 10ms -q
line "--seed 2^64-1 --seeds 3" "$bin" sweep --seed 18446744073709551615 --seeds 3 -D 10ms -q
line "--trace-window outside the run" "$bin" sim -D 20ms -q --trace /dev/null --trace-window 10s..
line "host irqs -D 1ms" "$bin" host irqs -D 1ms
line "host why --cpus=N" "$bin" host why --cpus=N -D 100ms --no-trace --json
echo "   CPUs reported: $(grep -o '"cpu": *[0-9]*' "$tmp/out" | sort -u | tr '\n' ' ') (online: $(cat /sys/devices/system/cpu/online))"
printf 'machine = "kvm-guest-2"\n[kernel]\nversion = "+6.1"\nhz = 250\nnohz = "full"\n' >"$tmp/v1.toml"
line "kernel.version = +6.1" "$bin" sim --scenario "$tmp/v1.toml" -D 10ms -q
printf 'machine = "kvm-guest-2"\n[kernel]\nversion = "999999.999999"\nhz = 250\nnohz = "full"\n' >"$tmp/v2.toml"
line "kernel.version = 999999.999999" "$bin" sim --scenario "$tmp/v2.toml" -D 10ms -q
line "--warmup 0s" "$bin" sim --warmup 0s -D 10ms -q
