#!/usr/bin/env bash
# Installs what ticklab's labs need beyond the Rust toolchain (Debian/Ubuntu, as root):
# QEMU and a distribution kernel with its /boot/config-* for `ticklab vm` (issue 12),
# busybox-static for the guest's shell; promtool (package prometheus) for the metrics test
# and chromium-headless-shell for the HTML report test (issue 16); Debian's PREEMPT_RT kernel
# (linux-image-rt-amd64, with the osnoise tracer) and rtla for `vm --probe noise`'s peer
# (issue 26); rt-tests (cyclictest) beside `host run --histogram` and scripts/hist-compare.py
# (issue 32); the kernel source and build tools for `ticklab vm build` (issue 24). Safe to run
# again.
set -euo pipefail
if [ "$(id -u)" != 0 ]; then
    echo "setup.sh: run as root (apt-get)" >&2
    exit 2
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends qemu-system-x86 linux-image-amd64 busybox-static
apt-get install -y --no-install-recommends linux-image-rt-amd64 rtla
apt-get install -y --no-install-recommends rt-tests
apt-get install -y --no-install-recommends prometheus chromium-headless-shell
# `ticklab vm build` (issue 24): Debian's 6.1 kernel source and what compiling it needs
# (`vm build` installs other linux-source-* packages itself when asked for them).
apt-get install -y --no-install-recommends linux-source-6.1 gcc make bc flex bison \
    libelf-dev libssl-dev patch xz-utils perl
ls /boot/vmlinuz-* /boot/config-* /bin/busybox
rtla --help 2>&1 | head -1 || true
cyclictest --help 2>&1 | head -1 || true
qemu-system-x86_64 --version | head -1
promtool --version | head -1
chromium-headless-shell --version
ls /usr/src/linux-source-6.1.tar.xz
