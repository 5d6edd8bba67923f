#!/usr/bin/env bash
# Builds the empalink-edge Debian package with dpkg-deb from an existing release build.
#   deploy/build-deb.sh BIN_DIR OUT_DIR
# BIN_DIR holds empalinkd and empalinkctl (`make deb` builds them with the Swift runtime linked statically).
# Prints the path of the .deb on its last line. Every file is owned by root:root in the archive.
# EMPALINK_DEB_VERSION overrides the package version (default: what `empalinkd --version` prints); the system test
# (Tests/system) packages the same build once more with a higher version to check an upgrade.
set -euo pipefail

bin_dir=${1:?usage: build-deb.sh BIN_DIR OUT_DIR}
out_dir=${2:?usage: build-deb.sh BIN_DIR OUT_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
deploy=$root/deploy
package=empalink-edge

for program in empalinkd empalinkctl; do
    [ -x "$bin_dir/$program" ] || { echo "build-deb: $bin_dir/$program is missing (run make deb)" >&2; exit 1; }
done

# The package promises Debian libraries only: refuse binaries linked against the Swift runtime's shared objects.
for program in empalinkd empalinkctl; do
    if readelf -d "$bin_dir/$program" | grep -q 'NEEDED.*libswift'; then
        echo "build-deb: $bin_dir/$program links the Swift runtime dynamically; build with --static-swift-stdlib" >&2
        exit 1
    fi
done

version=${EMPALINK_DEB_VERSION:-$("$bin_dir/empalinkd" --version | awk '{print $2}')}
[[ $version =~ ^[0-9][A-Za-z0-9.+~-]*$ ]] || { echo "build-deb: bad version '$version'" >&2; exit 1; }
arch=$(dpkg --print-architecture)

mkdir -p "$out_dir"
out_dir=$(cd "$out_dir" && pwd)
stage=$out_dir/stage
rm -rf "$stage"
mkdir -p "$stage/DEBIAN"
umask 022

# install MODE SRC DEST (DEST relative to the package root)
put() {
    install -D -m "$1" "$2" "$stage/$3"
}

# Programs: stripped (debug symbols stay in the build tree); the $ORIGIN RUNPATH SwiftPM adds is useless once
# the Swift runtime is linked statically, and lintian rejects it.
for program in empalinkd empalinkctl; do
    put 0755 "$bin_dir/$program" "usr/bin/$program"
    strip --strip-unneeded --remove-section=.comment --remove-section=.note "$stage/usr/bin/$program"
    chrpath -d "$stage/usr/bin/$program" >/dev/null
done

# systemd unit, user, D-Bus policy. Debian 12 keeps packaged units in /lib/systemd/system.
put 0644 "$deploy/systemd/empalinkd.service" lib/systemd/system/empalinkd.service
put 0644 "$deploy/sysusers.d/empalink-edge.conf" usr/lib/sysusers.d/empalink-edge.conf
put 0644 "$deploy/tmpfiles.d/empalink-edge.conf" usr/lib/tmpfiles.d/empalink-edge.conf
put 0644 "$deploy/dbus/empalink-edge.conf" usr/share/dbus-1/system.d/empalink-edge.conf

# Configuration (a conffile: dpkg keeps the administrator's edits across upgrades).
put 0644 "$root/Config/empalinkd.toml" etc/empalink/empalinkd.toml

# Manual pages and documentation.
put 0644 "$deploy/man/empalinkd.8" usr/share/man/man8/empalinkd.8
put 0644 "$deploy/man/empalinkctl.1" usr/share/man/man1/empalinkctl.1
gzip -9n "$stage/usr/share/man/man8/empalinkd.8" "$stage/usr/share/man/man1/empalinkctl.1"
doc=usr/share/doc/$package
put 0644 "$deploy/debian/copyright" "$doc/copyright"
put 0644 "$root/README.md" "$doc/README.md"
for page in operations architecture mqtt security configuration protocol-e4 ibi mqtt-client; do
    [ -f "$root/Docs/$page.md" ] && put 0644 "$root/Docs/$page.md" "$doc/$page.md"
done
date=$(date -R -d "@${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || date +%s)}")
sed -e "s/@VERSION@/$version/" -e "s/@DATE@/$date/" "$deploy/debian/changelog" | gzip -9n > "$stage/$doc/changelog.gz"
chmod 0644 "$stage/$doc/changelog.gz"
put 0644 "$deploy/debian/lintian-overrides" "usr/share/lintian/overrides/$package"

# Control area.
for script in postinst prerm postrm; do
    install -m 0755 "$deploy/debian/$script" "$stage/DEBIAN/$script"
done
install -m 0644 "$deploy/debian/conffiles" "$stage/DEBIAN/conffiles"
# dpkg-shlibdeps wants a debian/control beside it; the Depends line comes from the binaries' NEEDED entries.
shl=$out_dir/shlibdeps
rm -rf "$shl" && mkdir -p "$shl/debian"
printf 'Source: %s\n\nPackage: %s\nArchitecture: any\n' "$package" "$package" > "$shl/debian/control"
shlibs=$(cd "$shl" && dpkg-shlibdeps -O "$stage/usr/bin/empalinkd" "$stage/usr/bin/empalinkctl" 2>/dev/null \
    | sed -n 's/^shlibs:Depends=//p')
[ -n "$shlibs" ] || { echo "build-deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
rm -rf "$shl"
installed_size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@SHLIBS@/$shlibs/" \
    -e "s/@INSTALLED_SIZE@/$installed_size/" "$deploy/debian/control.in" > "$stage/DEBIAN/control"
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) \
    > "$stage/DEBIAN/md5sums"
chmod 0644 "$stage/DEBIAN/control" "$stage/DEBIAN/md5sums"

deb=$out_dir/${package}_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
rm -rf "$stage"
echo "$deb"
