#!/usr/bin/env python3
"""No contact at rest: what the engine makes of a PPG that carries sensor noise only (issue 18, a known gap).

    nocontact.py --bin .build/release [--seeds 1-8] [--seconds 300] [--outdir DIR]

Per seed: 300 s of uniform noise (±1, the E4's BVP units) at 64 Hz, the accelerometer still (8, -4, 62 counts:
a wristband lying on a table or worn without skin contact). Runs `empalinkctl ibi --hr --hr-detail` on it and
prints, per seed, the IBIs emitted, the seconds of HR published (and how many from beats) and the largest
confidence. A detector that needs a pulse should emit nothing here.
"""
import argparse
import csv
import os
import subprocess
import tempfile

import numpy as np

START = 1_700_000_000.0


def seeds(text):
    out = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b or a) + 1))
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--seeds", default="1-8")
    p.add_argument("--seconds", type=int, default=300)
    p.add_argument("--outdir")
    a = p.parse_args()
    outdir = a.outdir or tempfile.mkdtemp(prefix="nocontact-")
    print("| seed | IBIs emitted | HR seconds published | from beats | largest confidence |")
    print("|---|---|---|---|---|")
    for seed in seeds(a.seeds):
        d = f"{outdir}/s{seed}"
        os.makedirs(d, exist_ok=True)
        noise = np.random.default_rng(seed).uniform(-1, 1, 64 * a.seconds)
        with open(f"{d}/BVP.csv", "w") as f:
            f.write(f"{START:.2f}\n64.000000\n" + "".join(f"{v:.2f}\n" for v in noise))
        with open(f"{d}/ACC.csv", "w") as f:
            f.write(f"{START:.6f}, {START:.6f}, {START:.6f}\n32.000000, 32.000000, 32.000000\n")
            f.write("8,-4,62\n" * (32 * a.seconds))
        subprocess.run([f"{a.bin}/empalinkctl", "ibi", "--bvp", f"{d}/BVP.csv", "--acc", f"{d}/ACC.csv",
                        "--out", f"{d}/ibi.csv", "--hr", f"{d}/hr.csv", "--hr-detail", f"{d}/hr-detail.csv"],
                       check=True, stdout=subprocess.DEVNULL)
        with open(f"{d}/ibi.csv") as f:
            ibis = max(0, sum(1 for _ in f) - 1)
        with open(f"{d}/hr-detail.csv") as f:
            rows = list(csv.DictReader(f))
        beats = sum(1 for r in rows if r["source"] == "beats")
        top = max((float(r["confidence"]) for r in rows), default=0.0)
        print(f"| {seed} | {ibis} | {len(rows)} | {beats} | {top:.2f} |")


if __name__ == "__main__":
    main()
