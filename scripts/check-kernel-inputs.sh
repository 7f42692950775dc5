#!/usr/bin/env bash
# CI's check of the kernel-build inputs (issue 24), without compiling a kernel: every patch
# in kernel-patches/ applies to the linux-source-6.1 package (`patch --dry-run`, then applied
# to a hard-linked copy), and every line of kernel-config/ticklab-guest.config, with the E1
# tick choice (HZ=1000, NO_HZ_FULL), survives `make tinyconfig` + merge + `make olddefconfig`.
# This is `ticklab vm build --check`: the same code path as a build, stopped before `make
# bzImage`. The first run extracts the source (under a minute); later runs reuse it.
#
# Usage: scripts/check-kernel-inputs.sh   (TICKLAB: binary, default target/release/ticklab)
set -euo pipefail
cd "$(dirname "$0")/.."
ticklab=${TICKLAB:-target/release/ticklab}
[ -x "$ticklab" ] || { echo "check-kernel-inputs: $ticklab not built (cargo build --release)" >&2; exit 2; }
patches=()
for p in kernel-patches/*.patch; do patches+=(--patch "$p"); done
start=$(date +%s)
"$ticklab" vm build --source 6.1 --hz 1000 --nohz full \
    --config kernel-config/ticklab-guest.config "${patches[@]}" --check
echo "check-kernel-inputs: $(( $(date +%s) - start )) s"
