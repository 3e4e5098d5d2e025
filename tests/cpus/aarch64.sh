#!/usr/bin/env bash
# Another CPU for the same-bits tests (tests/test_same_bits.py): a 64-bit ARM Python with the
# project's dependencies at the versions of .venv, run by qemu's user-mode emulator. ARM is what
# many robots and their users' laptops run (Jetson, Graviton, Apple silicon); its numpy dispatches
# NEON and SVE kernels and its OpenBLAS other cores', none of which an x86 machine runs natively.
#
#   bash tests/cpus/aarch64.sh DEST PIP      (make does this: DEST .cpus/aarch64, PIP .venv/bin/pip)
#
# Debian's qemu-user-static and debootstrap (apt-get, as root); the system's Python from Debian's
# arm64 packages, unpacked and never run as a system (no chroot, no binfmt): qemu runs its
# interpreter directly, with DEST/root as the prefix of every path the ARM program opens; the
# wheels from the package index for aarch64, at .venv's versions. DEST/.ready last, when all is in.
set -euo pipefail
dest=${1:?DEST}
pip=${2:?PIP}
root=$dest/root
site=$dest/site

need=()
command -v qemu-aarch64-static >/dev/null || need+=(qemu-user-static)
command -v debootstrap >/dev/null || need+=(debootstrap)
if ((${#need[@]})); then
    apt-get update -q
    apt-get install -y -q "${need[@]}"
fi

# the mirror and release this machine's apt already uses (deb822 sources, or a one-line list)
mirror=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null |
         grep -v security | head -n 1 || true)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
release=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$mirror" ] && [ -n "$release" ] || { echo "aarch64.sh: no Debian mirror or release in this machine's apt set-up" >&2; exit 1; }

rm -rf "$dest"
mkdir -p "$dest"
# --foreign: download and unpack the base only (its second stage would run ARM programs); the
# packages asked for are downloaded with their dependencies, and unpacked here
debootstrap --foreign --arch=arm64 --variant=minbase --include=python3.11-minimal,libpython3.11-stdlib,libstdc++6 \
    "$release" "$root" "$mirror" >"$dest/debootstrap.log" 2>&1 ||
    { tail -20 "$dest/debootstrap.log" >&2; exit 1; }
for deb in "$root"/var/cache/apt/archives/*.deb; do
    dpkg-deb -x "$deb" "$root"
done
rm -f "$root"/var/cache/apt/archives/*.deb

# the project's dependencies as .venv has them (the same versions: only the CPU differs)
"$pip" freeze --exclude-editable | grep -v '^rnea' >"$dest/constraints.txt"
deps=$("$pip" show rnea-cli | sed -n 's/^Requires: //p' | tr -d ',')
"$pip" install --quiet --target "$site" --only-binary=:all: --implementation cp --python-version 3.11 \
    --platform manylinux_2_36_aarch64 --platform manylinux_2_28_aarch64 --platform manylinux_2_17_aarch64 \
    --platform manylinux2014_aarch64 -c "$dest/constraints.txt" $deps threadpoolctl

# it runs: an ARM interpreter, importing numpy
QEMU_CPU=cortex-a57 PYTHONPATH="$site" qemu-aarch64-static -L "$root" "$root/usr/bin/python3.11" \
    -c 'import platform, numpy; assert platform.machine() == "aarch64", platform.machine()'
touch "$dest/.ready"
