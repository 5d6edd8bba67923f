#!/bin/bash
# Builds the assets of the real-BlueZ VM test (issue #10) into a cache directory, once:
#   kernel/vmlinuz        Debian's linux-image-amd64 kernel (apt-get download + dpkg -x, never installed)
#   rootfs/               debootstrap --variant=minbase bookworm with bluez, btvirt, dbus, mosquitto and the
#                         shared libraries our binaries need, plus that kernel's module tree (depmod'ed)
#   initramfs.cpio.gz     static busybox + the 9p/virtio/overlay modules: mounts rootfs read-only over
#                         virtio-9p under a tmpfs overlay, mounts the inputs/results share, runs its script
# The cache is keyed on a hash of every input (this script, the init, the package list, the mirror and the
# kernel package version): a matching key with a complete marker means the assets are reused as they are.
#
# Usage: vm/build-assets.sh [--key] [CACHE_DIR]      (default: <repo>/.cache/bluez-vm)
# Prints the cache directory on stdout (last line); progress on stderr. --key prints the cache key and exits.
set -euo pipefail

print_key=0
if [ "${1:-}" = --key ]; then print_key=1; shift; fi
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
cache="${1:-${BLUEZ_VM_CACHE:-$repo/.cache/bluez-vm}}"
suite=bookworm

# What the VM runs. Our binaries link libdbus, libmosquitto, libsystemd, libcrypto and zlib dynamically (the Swift
# runtime is linked statically); bluez-test-tools carries btvirt; mosquitto-clients the subscriber; iproute2 brings
# up the loopback; libglib2.0-bin's gdbus makes the a{sv} calls of the misuse probes.
PACKAGES="bluez bluez-test-tools dbus kmod iproute2 libglib2.0-bin mosquitto mosquitto-clients \
libdbus-1-3 libmosquitto1 libsystemd0 libssl3 zlib1g libstdc++6 libgcc-s1"

log() { echo "vm-assets: $*" >&2; }

# The Debian mirror the host's apt uses (deb822 .sources first, then one-line sources.list).
mirror() {
    local uri
    uri=$(awk '/^URIs:/ {print $2}' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v -- '-security' | head -1)
    if [ -z "$uri" ]; then
        uri=$(awk '$1 == "deb" && $0 !~ /security/ {for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) {print $i; exit}}' \
            /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | head -1)
    fi
    echo "${uri:-http://deb.debian.org/debian}"
}

# The concrete kernel package behind the linux-image-amd64 meta package, from the host's apt lists.
kernel_package() {
    apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}'
}

MIRROR=$(mirror)
KPKG=$(kernel_package)
if [ -z "$KPKG" ]; then
    log "apt lists know no linux-image-amd64; running apt-get update"
    apt-get update -qq >&2
    KPKG=$(kernel_package)
fi
[ -n "$KPKG" ] || { log "error: cannot resolve linux-image-amd64 to a kernel package"; exit 1; }
KVER=${KPKG#linux-image-}

key=$( { cat "$here/build-assets.sh" "$here/initramfs-init"; echo "$PACKAGES|$MIRROR|$KPKG|$suite"; } \
    | sha256sum | cut -c1-16)
if [ $print_key = 1 ]; then echo "$key"; exit 0; fi
if [ -f "$cache/complete" ] && [ "$(cat "$cache/complete")" = "$key" ]; then
    log "reusing $cache (key $key)"
    echo "$cache"
    exit 0
fi

log "building into $cache (key $key; mirror $MIRROR; kernel $KPKG)"
rm -rf "$cache"
mkdir -p "$cache/kernel" "$cache/deb"
start=$(date +%s)

# Kernel: downloaded, unpacked into the rootfs later (modules) and the cache (vmlinuz).
(cd "$cache/deb" && apt-get download -q -o APT::Sandbox::User=root "$KPKG" >&2)
kdeb=$(ls "$cache"/deb/linux-image-*.deb)

# Rootfs.
include=$(echo $PACKAGES | tr ' ' ',')
debootstrap --variant=minbase --include="$include" "$suite" "$cache/rootfs" "$MIRROR" >"$cache/debootstrap.log" 2>&1 \
    || { tail -20 "$cache/debootstrap.log" >&2; log "error: debootstrap failed (log: $cache/debootstrap.log)"; exit 1; }
log "debootstrap done after $(( $(date +%s) - start )) s"
dpkg -x "$kdeb" "$cache/kernel/pkg"
cp "$cache/kernel/pkg/boot/vmlinuz-$KVER" "$cache/kernel/vmlinuz"
mkdir -p "$cache/rootfs/lib/modules"
mv "$cache/kernel/pkg/lib/modules/$KVER" "$cache/rootfs/lib/modules/"
rm -rf "$cache/kernel/pkg" "$cache/deb"
chroot "$cache/rootfs" /sbin/depmod "$KVER"
# Mount points the VM's script uses; the rootfs is read-only in the VM (the overlay makes it writable).
mkdir -p "$cache/rootfs/share"
rm -rf "$cache/rootfs/var/cache/apt/archives"/*.deb "$cache/rootfs/var/lib/apt/lists"/* 2>/dev/null || true

# Initramfs: busybox and the modules needed to reach the rootfs, in load order (dependencies first).
ird="$cache/initramfs"
mkdir -p "$ird"/{bin,dev,proc,sys,lower,rw,newroot,modules}
cp /bin/busybox "$ird/bin/busybox"
for applet in sh mount umount mkdir insmod switch_root cat echo sleep ls poweroff; do
    ln -sf busybox "$ird/bin/$applet"
done
moddir="$cache/rootfs/lib/modules/$KVER"
# modules.dep: "kernel/x/a.ko: kernel/y/b.ko kernel/z/c.ko" — b and c must be loaded before a.
order=$(/usr/bin/python3 - "$moddir" virtio_pci 9pnet_virtio 9p overlay <<'PY'
import sys, os
moddir, wanted = sys.argv[1], sys.argv[2:]
deps = {}
for line in open(os.path.join(moddir, "modules.dep")):
    path, _, rest = line.partition(":")
    deps[path] = rest.split()
by_name = {os.path.basename(p).split(".ko")[0].replace("-", "_"): p for p in deps}
builtin = {os.path.basename(l.strip()).split(".ko")[0].replace("-", "_")
           for l in open(os.path.join(moddir, "modules.builtin"))}
order = []
def visit(path):
    for dep in reversed(deps[path]):
        visit(dep)
    if path not in order:
        order.append(path)
for name in wanted:
    if name in by_name:
        visit(by_name[name])
    elif name not in builtin:
        sys.exit(f"module {name} neither built in nor in modules.dep")
print("\n".join(order))
PY
)
: > "$ird/modules/order"
for rel in $order; do
    base=$(basename "$rel")
    case "$base" in
        *.ko.xz) xz -dc "$moddir/$rel" > "$ird/modules/${base%.xz}"; base=${base%.xz} ;;
        *.ko.zst) zstd -qdc "$moddir/$rel" > "$ird/modules/${base%.zst}"; base=${base%.zst} ;;
        *) cp "$moddir/$rel" "$ird/modules/$base" ;;
    esac
    echo "$base" >> "$ird/modules/order"
done
cp "$here/initramfs-init" "$ird/init"
chmod 755 "$ird/init"
(cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1 > "$cache/initramfs.cpio.gz")
rm -rf "$ird"

echo "$key" > "$cache/complete"
log "assets ready in $(( $(date +%s) - start )) s: $(du -sh "$cache" | cut -f1)"
echo "$cache"
