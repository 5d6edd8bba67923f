#!/bin/bash
# The system test's entry (issue 17), copied to the share as vm-run.sh: the BlueZ test's initramfs (vm/initramfs-init)
# switch_root's into /share/vm-run.sh as PID 1, and this script prepares the overlay (writable tmpfs over the
# read-only rootfs) and exec's systemd, which stays PID 1 for the rest of the run. Nothing of the package is set
# up here: only the test's own driver unit (vm/system-run.sh) and the units a VM without a network or a getty
# has no use for. Any failure powers off at once.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
S=/share
mkdir -p "$S/results" || { echo o > /proc/sysrq-trigger; sleep 5; }
cut -d" " -f1 /proc/uptime > "$S/results/uptime_at_boot_script"

# The driver: runs after the boot settled, logs to the share, powers the VM off when it is done.
cat > /etc/systemd/system/empalink-systest.service <<'UNIT'
[Unit]
Description=EmpaLink Edge system test driver (vm/system-run.sh on the share)
After=multi-user.target

[Service]
Type=simple
ExecStart=/bin/bash /share/system-run.sh
StandardOutput=journal+console
StandardError=journal+console
TimeoutStartSec=infinity

[Install]
WantedBy=multi-user.target
UNIT
mkdir -p /etc/systemd/system/multi-user.target.wants
ln -sf ../empalink-systest.service /etc/systemd/system/multi-user.target.wants/empalink-systest.service

# Nothing logs in on a console here, and nothing updates over a network that does not exist.
# No coldplug either (systemd-udev-trigger): the VM's hardware is qemu's (VGA, IDE, CD-ROM, parallel port, the CPU's
# kvm and cpufreq modaliases), its root is 9p with its modules loaded by the initramfs, and udev loading drivers for
# all of it kept both vCPUs busy for a minute after `is-system-running` said "running" — exactly while the kernel
# set btvirt's controllers up (vm/FINDINGS.md S6). udevd still handles what appears at run time (the hci devices,
# which pull in bluetooth.target). No rfkill state to keep, no pstore, no ext4 to scrub.
for unit in serial-getty@ttyS0.service getty@tty1.service apt-daily.timer apt-daily-upgrade.timer \
        dpkg-db-backup.timer fstrim.timer e2scrub_all.timer e2scrub_reap.service systemd-networkd-wait-online.service \
        systemd-udev-trigger.service systemd-rfkill.service systemd-rfkill.socket systemd-pstore.service; do
    ln -sf /dev/null "/etc/systemd/system/$unit"
done
# Generators: nothing here needs them (no fstab, no GPT, no init scripts without units), and under TCG each one
# costs a second or more at boot and at every `systemctl daemon-reload` (the package's scripts reload 5 times).
mkdir -p /etc/systemd/system-generators
for generator in /lib/systemd/system-generators/*; do
    ln -sf /dev/null "/etc/systemd/system-generators/$(basename "$generator")"
done
# The broker the agent publishes to: the Debian package's mosquitto.service, on loopback, with its persistence
# (on by default in Debian) so that the subscriber's persistent session survives a broker restart.
cat > /etc/mosquitto/conf.d/systest.conf <<'CONF'
listener 1883 127.0.0.1
allow_anonymous true
CONF
echo "empalink-vm" > /etc/hostname

exec /lib/systemd/systemd
