#!/usr/bin/env bash
# A ticklab sweep as a Slurm job array: one array task per shard, then one merge job that
# waits for all of them (afterok) and writes what the unsharded sweep would have written.
#
# Submit from a login node (the binary and the output directory on a shared filesystem):
#
#   TICKLAB=$PWD/target/release/ticklab SHARDS=4 examples/slurm/sweep-array.sh
#
# The script plays three parts, chosen by its environment:
#   * run by hand: submits the array (--array=0-(SHARDS-1)) and the dependent merge job;
#   * inside the array: task $SLURM_ARRAY_TASK_ID of $SHARDS runs `ticklab sweep --shard I/N`;
#   * with MODE=merge (the dependent job): `ticklab merge` of every shard's JSON lines.
#
# Settings (environment; defaults in brackets):
#   TICKLAB      the ticklab binary [ticklab on PATH]
#   SWEEP_FILE   the grid [examples/sweeps/e1-grid.toml beside this script]
#   SWEEP_BASE   flags of the base scenario [--kernel-version 6.3 -D 30s --warmup 2s: E1's]
#   SHARDS       array tasks [4]
#   OUT_DIR      where shards and the merged result go [$PWD/sweep-out]
#   FORMAT       csv or jsonl for the merged result [csv]
set -euo pipefail

here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
: "${TICKLAB:=ticklab}"
: "${SWEEP_FILE:=$here/../sweeps/e1-grid.toml}"
: "${SWEEP_BASE:=--kernel-version 6.3 -D 30s --warmup 2s}"
: "${SHARDS:=4}"
: "${OUT_DIR:=$PWD/sweep-out}"
: "${FORMAT:=csv}"

if [ -n "${SLURM_ARRAY_TASK_ID:-}" ]; then
    # One shard. Task ids run 0..SHARDS-1 (--array=0-N below), the index base of --shard.
    mkdir -p "$OUT_DIR"
    # shellcheck disable=SC2086 # SWEEP_BASE is a list of flags
    "$TICKLAB" sweep $SWEEP_BASE --file "$SWEEP_FILE" -q \
        --threads "${SLURM_CPUS_PER_TASK:-1}" \
        --shard "$SLURM_ARRAY_TASK_ID/$SHARDS" \
        -o "$OUT_DIR/shard-$SLURM_ARRAY_TASK_ID.jsonl"
    echo "shard $SLURM_ARRAY_TASK_ID/$SHARDS: $(wc -l < "$OUT_DIR/shard-$SLURM_ARRAY_TASK_ID.jsonl") rows"
elif [ "${MODE:-}" = merge ]; then
    shards=()
    for ((i = 0; i < SHARDS; i++)); do shards+=("$OUT_DIR/shard-$i.jsonl"); done
    "$TICKLAB" merge "${shards[@]}" --format "$FORMAT" -o "$OUT_DIR/sweep.$FORMAT"
    "$TICKLAB" merge "${shards[@]}" --summary --format "$FORMAT" -o "$OUT_DIR/summary.$FORMAT"
    echo "merged $SHARDS shards into $OUT_DIR/sweep.$FORMAT and $OUT_DIR/summary.$FORMAT"
else
    script=$(readlink -f "${BASH_SOURCE[0]}")
    export TICKLAB SWEEP_FILE SWEEP_BASE SHARDS OUT_DIR FORMAT
    TICKLAB=$(command -v "$TICKLAB")
    SWEEP_FILE=$(readlink -f "$SWEEP_FILE")
    mkdir -p "$OUT_DIR"
    array=$(sbatch --parsable --job-name=ticklab-sweep --array="0-$((SHARDS - 1))" \
        --cpus-per-task=1 --export=ALL --output="$OUT_DIR/shard-%a.log" "$script")
    merge=$(sbatch --parsable --job-name=ticklab-merge --dependency="afterok:${array%%;*}" \
        --export=ALL,MODE=merge --output="$OUT_DIR/merge.log" "$script")
    echo "submitted array job ${array%%;*} ($SHARDS shards) and merge job ${merge%%;*}"
    echo "${array%%;*} ${merge%%;*}" > "$OUT_DIR/jobs"
fi
