#!/bin/bash
# Builds the assets of the real-systemd system test (issue 17) into a cache directory, once. It shares what it can
# with the real-BlueZ test (vm/build-assets.sh, run first): the kernel, the initramfs and the kernel's module tree come
# from that cache as they are, and the root file system starts as a copy of that cache's rootfs:
#   rootfs/    the BlueZ test's rootfs (debootstrap --variant=minbase bookworm with bluez, btvirt, dbus, mosquitto
#              and the modules) plus systemd and systemd-sysv (so systemd can be PID 1) and the rest of what the .deb
#              depends on, installed with apt in a chroot from the same mirror: ~20 s instead of a second ~85 s
#              debootstrap
#   bluez-vm   the BlueZ cache directory whose kernel/vmlinuz and initramfs.cpio.gz the VM boots
# The BlueZ initramfs hands over to /share/vm-run.sh; for this test that is vm/system-boot.sh, which exec's systemd.
# Keyed on a hash of this script, the package list, the mirror and the BlueZ cache's key.
#
# Usage: vm/build-system-assets.sh [--key] [CACHE_DIR [BLUEZ_CACHE_DIR]]
#        (defaults: <repo>/.cache/system-vm, <repo>/.cache/bluez-vm)
# Prints the cache directory on stdout (last line); progress on stderr. --key prints the cache key and exits.
set -euo pipefail

print_key=0
if [ "${1:-}" = --key ]; then print_key=1; shift; fi
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
cache="${1:-${SYSTEM_VM_CACHE:-$repo/.cache/system-vm}}"
bluez_cache="${2:-${BLUEZ_VM_CACHE:-$repo/.cache/bluez-vm}}"
suite=bookworm

# What the VM adds to the BlueZ rootfs: systemd as PID 1 and what the package's Depends names beyond that rootfs
# (libdbus-1-3 libmosquitto1 libsystemd0 libssl3 libgcc-s1 dbus are there; bluez, its Recommends, too), so
# `apt install ./empalink-edge_*.deb` resolves from the rootfs without a network. procps brings pgrep; util-linux
# (essential) nsenter for the sandbox probes.
PACKAGES="systemd systemd-sysv init-system-helpers procps"

log() { echo "system-assets: $*" >&2; }

# The Debian mirror the host's apt uses (as vm/build-assets.sh finds it).
mirror() {
    local uri
    uri=$(awk '/^URIs:/ {print $2}' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v -- '-security' | head -1)
    if [ -z "$uri" ]; then
        uri=$(awk '$1 == "deb" && $0 !~ /security/ {for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) {print $i; exit}}' \
            /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | head -1)
    fi
    echo "${uri:-http://deb.debian.org/debian}"
}

MIRROR=$(mirror)
bluez_key=$(bash "$here/build-assets.sh" --key "$bluez_cache")
key=$( { cat "$here/build-system-assets.sh"; echo "$PACKAGES|$MIRROR|$suite|$bluez_key"; } | sha256sum | cut -c1-16)
if [ $print_key = 1 ]; then echo "$key"; exit 0; fi

if [ -f "$cache/complete" ] && [ "$(cat "$cache/complete")" = "$key" ] \
        && [ "$(cat "$bluez_cache/complete" 2>/dev/null)" = "$bluez_key" ]; then
    log "reusing $cache (key $key)"
    echo "$cache"
    exit 0
fi

start=$(date +%s)
bash "$here/build-assets.sh" "$bluez_cache" > /dev/null \
    || { log "error: building the BlueZ VM assets failed"; exit 1; }
[ "$(cat "$bluez_cache/complete" 2>/dev/null)" = "$bluez_key" ] || { log "error: $bluez_cache is not current"; exit 1; }
if [ -f "$cache/complete" ] && [ "$(cat "$cache/complete")" = "$key" ]; then
    log "reusing $cache (key $key)"
    echo "$cache"
    exit 0
fi

log "building into $cache (key $key; mirror $MIRROR; from $bluez_cache/rootfs)"
rm -rf "$cache"
mkdir -p "$cache"
root="$cache/rootfs"
cp -a "$bluez_cache/rootfs" "$root"
cleanup() { umount "$root/proc" 2>/dev/null || true; rm -f "$root/usr/sbin/policy-rc.d"; }
trap cleanup EXIT
mount -t proc proc "$root/proc"
# No service starts in the chroot; apt fetches as root (no _apt sandbox user needed on the host's network).
printf '#!/bin/sh\nexit 101\n' > "$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
echo "deb $MIRROR $suite main" > "$root/etc/apt/sources.list"
apt_chroot() {
    chroot "$root" env DEBIAN_FRONTEND=noninteractive LC_ALL=C apt-get -o APT::Sandbox::User=root -q "$@"
}
{ apt_chroot update && apt_chroot install -y --no-install-recommends $PACKAGES; } > "$cache/apt.log" 2>&1 \
    || { tail -20 "$cache/apt.log" >&2; log "error: apt-get in the chroot failed (log: $cache/apt.log)"; exit 1; }
apt_chroot clean > /dev/null 2>&1 || true
cleanup
trap - EXIT
rm -rf "$root/var/lib/apt/lists"/* 2>/dev/null || true
# A machine id is made at boot (systemd: empty file → transient id); none baked into a shared image.
: > "$root/etc/machine-id"
ln -sfn "$bluez_cache" "$cache/bluez-vm"

echo "$key" > "$cache/complete"
log "assets ready in $(( $(date +%s) - start )) s: $(du -sh "$root" | cut -f1)"
echo "$cache"
