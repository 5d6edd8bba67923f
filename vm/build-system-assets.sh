#!/bin/bash
# Builds the assets of the real-systemd system test (issue 17) into a cache directory, once. It shares what it can
# with the real-BlueZ test (vm/build-assets.sh, run first and concurrently): the kernel, the initramfs and the
# kernel's module tree come from that cache as they are. Only the root file system is its own:
#   rootfs/    debootstrap --variant=minbase bookworm with systemd and systemd-sysv (so systemd can be PID 1),
#              dbus, bluez, btvirt, mosquitto(-clients) and every library and tool the .deb depends on, plus the
#              kernel's module tree (hard links into the BlueZ cache when it is on the same file system)
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

# What the VM runs: systemd as PID 1 and the packages a Pi has where the agent is installed. The package's Depends
# (libdbus-1-3 libmosquitto1 libsystemd0 libssl3 libgcc-s1 systemd init-system-helpers dbus) and its Recommends
# (bluez) are all here, so `apt install ./empalink-edge_*.deb` resolves from the rootfs without a network.
# util-linux (essential) brings nsenter for the sandbox probes; procps pgrep; bluez-test-tools btvirt.
PACKAGES="systemd systemd-sysv dbus bluez bluez-test-tools kmod iproute2 procps mosquitto mosquitto-clients \
libdbus-1-3 libmosquitto1 libsystemd0 libssl3 zlib1g libstdc++6 libgcc-s1 init-system-helpers"

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

# The BlueZ assets: built (or found current) in the background while the rootfs is bootstrapped.
bluez_log="$(dirname "$cache")/bluez-vm-assets.log"
mkdir -p "$(dirname "$cache")"
bash "$here/build-assets.sh" "$bluez_cache" > "$bluez_log.out" 2> "$bluez_log" & bluez_pid=$!
wait_bluez() {
    wait "$bluez_pid" || { tail -20 "$bluez_log" >&2; log "error: building the BlueZ VM assets failed"; exit 1; }
}

if [ -f "$cache/complete" ] && [ "$(cat "$cache/complete")" = "$key" ]; then
    wait_bluez
    log "reusing $cache (key $key)"
    echo "$cache"
    exit 0
fi

log "building into $cache (key $key; mirror $MIRROR)"
rm -rf "$cache"
mkdir -p "$cache"
start=$(date +%s)
include=$(echo $PACKAGES | tr ' ' ',')
debootstrap --variant=minbase --include="$include" "$suite" "$cache/rootfs" "$MIRROR" >"$cache/debootstrap.log" 2>&1 \
    || { tail -20 "$cache/debootstrap.log" >&2; log "error: debootstrap failed (log: $cache/debootstrap.log)"; exit 1; }
log "debootstrap done after $(( $(date +%s) - start )) s"
rm -rf "$cache/rootfs/var/cache/apt/archives"/*.deb "$cache/rootfs/var/lib/apt/lists"/* 2>/dev/null || true
mkdir -p "$cache/rootfs/share"
# A machine id is made at boot (systemd: empty file → transient id); none baked into a shared image.
: > "$cache/rootfs/etc/machine-id"

wait_bluez
[ "$(cat "$bluez_cache/complete" 2>/dev/null)" = "$bluez_key" ] || { log "error: $bluez_cache is not current"; exit 1; }
mkdir -p "$cache/rootfs/lib/modules"
for moddir in "$bluez_cache"/rootfs/lib/modules/*; do
    cp -al "$moddir" "$cache/rootfs/lib/modules/" 2>/dev/null || cp -a "$moddir" "$cache/rootfs/lib/modules/"
done
ln -sfn "$bluez_cache" "$cache/bluez-vm"

echo "$key" > "$cache/complete"
log "assets ready in $(( $(date +%s) - start )) s: $(du -sh "$cache/rootfs" | cut -f1)"
echo "$cache"
