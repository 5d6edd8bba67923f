#!/usr/bin/python3
"""Runs a command under the seccomp part of empalinkd.service's sandbox, without a running systemd.

    deploy/sandbox-probe.py [--unit PATH] [--report] -- COMMAND [ARGS...]

systemd implements three of the unit's settings as seccomp filters, and this reproduces them from the unit
file with libseccomp (Debian package python3-seccomp), as separate filters the way systemd loads them:

- SystemCallFilter= (allow-list with its ~deny-list; groups expanded by `systemd-analyze syscall-filter`), other
  calls failing with SystemCallErrorNumber= (EPERM);
- MemoryDenyWriteExecute=yes: mmap with PROT_WRITE|PROT_EXEC, mprotect/pkey_mprotect adding PROT_EXEC and
  shmat with SHM_EXEC fail with EPERM;
- RestrictAddressFamilies=: socket() with any other family fails with EAFNOSUPPORT.

It does not reproduce the namespaces (ProtectSystem=, PrivateDevices=, …), the user or the capability bounding
set: those need systemd. With --report it prints the filter sizes to stderr before running the command.
The command's exit status is the probe's.
"""
import errno
import os
import subprocess
import sys

import seccomp

PROT_WRITE, PROT_EXEC = 0x2, 0x4
SHM_EXEC = 0o100000
FAMILIES = {"AF_UNIX": 1, "AF_LOCAL": 1, "AF_INET": 2, "AF_INET6": 10, "AF_NETLINK": 16, "AF_PACKET": 17,
            "AF_BLUETOOTH": 31}
AF_MAX = 46


def unit_settings(path):
    settings = {}
    with open(path) as unit:
        for line in unit:
            line = line.strip()
            if line and not line.startswith(("#", ";", "[")):
                key, _, value = line.partition("=")
                settings.setdefault(key, []).append(value)
    return settings


def expand(name, seen=None):
    """The system calls of `name` (a @group, recursively, or a single call)."""
    seen = set() if seen is None else seen
    if not name.startswith("@"):
        return {name}
    if name in seen:
        return set()
    seen.add(name)
    out = subprocess.run(["systemd-analyze", "syscall-filter", name], capture_output=True, text=True, check=True)
    calls = set()
    for line in out.stdout.splitlines()[1:]:
        word = line.strip()
        if word and not word.startswith("#"):
            calls |= expand(word, seen)
    return calls


def syscall_sets(values):
    """(allowed, denied) from the unit's SystemCallFilter= lines, applied in order as systemd does."""
    allowed, denied = set(), set()
    allow_list = None
    for value in values:
        deny = value.startswith("~")
        names = set()
        for word in value.lstrip("~").split():
            names |= expand(word)
        if allow_list is None:
            allow_list = not deny
        if allow_list:
            if deny:
                allowed -= names
            else:
                allowed |= names
        else:
            if deny:
                denied |= names
            else:
                denied -= names
    return (allowed if allow_list else None), denied


def add(flt, action, name, *args):
    try:
        flt.add_rule(action, name, *args)
        return True
    except (RuntimeError, ValueError, OSError):
        return False        # not a system call on this architecture


def main(argv):
    unit = os.path.join(os.path.dirname(os.path.abspath(__file__)), "systemd", "empalinkd.service")
    report = False
    while argv and argv[0] != "--":
        option = argv.pop(0)
        if option == "--unit":
            unit = argv.pop(0)
        elif option == "--report":
            report = True
        else:
            print(f"sandbox-probe: unknown option {option}", file=sys.stderr)
            return 2
    if not argv or argv[0] != "--" or len(argv) < 2:
        print("usage: sandbox-probe.py [--unit PATH] [--report] -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    command = argv[1:]
    settings = unit_settings(unit)
    error_number = getattr(errno, settings.get("SystemCallErrorNumber", ["EPERM"])[-1])
    filters = []

    allowed, denied = syscall_sets(settings.get("SystemCallFilter", []))
    if allowed is not None:
        flt = seccomp.SyscallFilter(defaction=seccomp.ERRNO(error_number))
        count = sum(add(flt, seccomp.ALLOW, name) for name in sorted(allowed))
        filters.append(("SystemCallFilter allow-list", count, flt))
    elif denied:
        flt = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
        count = sum(add(flt, seccomp.ERRNO(error_number), name) for name in sorted(denied))
        filters.append(("SystemCallFilter deny-list", count, flt))

    if settings.get("MemoryDenyWriteExecute", ["no"])[-1] in ("yes", "true", "1", "on"):
        flt = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
        wx = PROT_WRITE | PROT_EXEC
        count = sum([
            add(flt, seccomp.ERRNO(errno.EPERM), "mmap", seccomp.Arg(2, seccomp.MASKED_EQ, wx, wx)),
            add(flt, seccomp.ERRNO(errno.EPERM), "mmap2", seccomp.Arg(2, seccomp.MASKED_EQ, wx, wx)),
            add(flt, seccomp.ERRNO(errno.EPERM), "mprotect", seccomp.Arg(2, seccomp.MASKED_EQ, PROT_EXEC, PROT_EXEC)),
            add(flt, seccomp.ERRNO(errno.EPERM), "pkey_mprotect",
                seccomp.Arg(2, seccomp.MASKED_EQ, PROT_EXEC, PROT_EXEC)),
            add(flt, seccomp.ERRNO(errno.EPERM), "shmat", seccomp.Arg(2, seccomp.MASKED_EQ, SHM_EXEC, SHM_EXEC)),
        ])
        filters.append(("MemoryDenyWriteExecute", count, flt))

    families = settings.get("RestrictAddressFamilies")
    if families:
        words = families[-1].split()
        allowed_families = {FAMILIES[w] for w in words if w in FAMILIES}
        flt = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
        count = sum(add(flt, seccomp.ERRNO(errno.EAFNOSUPPORT), "socket", seccomp.Arg(0, seccomp.EQ, family))
                    for family in range(AF_MAX) if family not in allowed_families)
        count += add(flt, seccomp.ERRNO(errno.EAFNOSUPPORT), "socket", seccomp.Arg(0, seccomp.GE, AF_MAX))
        filters.append(("RestrictAddressFamilies", count, flt))

    # The allow-list goes last: it does not allow seccomp(2) itself, which loading the other filters needs.
    for name, count, flt in filters[1:] + filters[:1] if allowed is not None else filters:
        if report:
            print(f"sandbox-probe: {name}: {count} rules", file=sys.stderr)
        flt.load()
    os.execvp(command[0], command)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
