#!/usr/bin/env bash
# Another CPU for the same-bits tests (tests/test_same_bits.py): a 64-bit ARM Python with the
# project's dependencies at the versions of .venv, run by qemu's user-mode emulator. ARM is what
# many robots and their users' laptops run (Jetson, Graviton, Apple silicon); its numpy dispatches
# NEON and SVE kernels and its OpenBLAS other cores', none of which an x86 machine runs natively.
#
#   bash tests/cpus/aarch64.sh DEST PYTHON      (make cpus: DEST .cpus/aarch64, PYTHON .venv/bin/python)
#
# As root on Debian: Debian's qemu-user-static and debootstrap (apt-get); Debian's arm64 Python of
# .venv's major.minor version (3.11: bookworm, 3.13: trixie), from this machine's Debian mirror,
# unpacked and never run as a system (no chroot, no second stage): qemu runs its interpreter
# directly, with DEST/root as the prefix of the paths it opens, so no binfmt handler is needed; the
# wheels from the package index for aarch64, at .venv's versions. DEST/.ready last, when all is in.
set -euo pipefail
dest=${1:?DEST}
python=${2:?PYTHON}
root=$dest/root
site=$dest/site
fail() { echo "aarch64.sh: $*" >&2; exit 1; }

version=$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
case $version in
    3.11) release=bookworm ;;
    3.13) release=trixie ;;
    *) fail "no Debian release has .venv's Python $version for arm64 (3.11: bookworm, 3.13: trixie)" ;;
esac

need=()
command -v qemu-aarch64-static >/dev/null || need+=(qemu-user-static)
command -v debootstrap >/dev/null || need+=(debootstrap)
if ((${#need[@]})); then
    command -v apt-get >/dev/null || fail "needs ${need[*]} and no apt-get is here (not Debian)"
    apt-get update -q
    apt-get install -y -q "${need[@]}"
fi

# this machine's Debian mirror: the first http(s) URI of an enabled deb822 stanza for Debian's
# main archive (Signed-By Debian's archive keyring), or of a one-line `deb` entry naming a Debian suite
mirror=$(
    for f in /etc/apt/sources.list.d/*.sources; do [ -f "$f" ] && cat "$f" && echo; done |
    awk 'BEGIN { RS = ""; FS = "\n" }
         /debian-archive-keyring/ && !/Enabled:[ \t]*no/ {
             for (i = 1; i <= NF; i++) if ($i ~ /^URIs:/) {
                 n = split($i, u, /[ \t]+/)
                 for (k = 2; k <= n; k++) if (u[k] ~ /^https?:\/\// && u[k] !~ /security/) { print u[k]; exit }
             }
         }'
)
if [ -z "$mirror" ]; then
    mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
             sed -e 's/\[[^]]*\]//' | awk '$1 == "deb" && $2 ~ /^https?:\/\// && $2 !~ /security/ &&
             $3 ~ /^(bookworm|trixie|stable|testing)/ {print $2; exit}')
fi
[ -n "$mirror" ] || fail "no Debian mirror in this machine's apt sources"

rm -rf "$dest"
mkdir -p "$dest"
# --foreign: download and unpack the base only (its second stage would run ARM programs); the
# packages asked for are downloaded with their dependencies, and unpacked here
debootstrap --foreign --arch=arm64 --variant=minbase --include="python$version,libstdc++6" \
    "$release" "$root" "$mirror" >"$dest/debootstrap.log" 2>&1 ||
    { tail -20 "$dest/debootstrap.log" >&2; fail "debootstrap $release from $mirror failed"; }
for deb in "$root"/var/cache/apt/archives/*.deb; do
    dpkg-deb -x "$deb" "$root"
done
rm -f "$root"/var/cache/apt/archives/*.deb
[ -x "$root/usr/bin/python$version" ] || fail "no python$version in the arm64 $release packages"

# the project's dependencies as .venv has them (the same versions: only the CPU differs)
"$python" -m pip list --format=freeze --exclude-editable | grep -v '^rnea' >"$dest/constraints.txt" || true
deps=$("$python" -m pip show rnea-cli | sed -n 's/^Requires: //p' | tr -d ',')
[ -n "$deps" ] || fail "rnea-cli is not installed in .venv"
"$python" -m pip install --quiet --target "$site" --only-binary=:all: --implementation cp --python-version "$version" \
    --platform manylinux_2_36_aarch64 --platform manylinux_2_28_aarch64 --platform manylinux_2_17_aarch64 \
    --platform manylinux2014_aarch64 -c "$dest/constraints.txt" $deps threadpoolctl

# it runs: an ARM interpreter, importing numpy
QEMU_CPU=cortex-a57 PYTHONPATH="$site" qemu-aarch64-static -L "$root" "$root/usr/bin/python$version" \
    -c 'import platform, numpy; assert platform.machine() == "aarch64", platform.machine()'
ln -s "root/usr/bin/python$version" "$dest/python"  # the interpreter, for the tests
touch "$dest/.ready"
