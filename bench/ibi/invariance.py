#!/usr/bin/env python3
"""Does the engine depend on things a recording it has never seen would do differently? On every real E4 set:

    invariance.py --bin .build/debug --out .build/bench-ibi [--data ../shared/data]
                  [--eval ../shared/tools/eval_ibi.py] [--score ../shared/tools/score_hr.py]

- Scale: the BVP divided and multiplied by 8 (another sensor gain, a weaker or stronger perfusion on a quiet sensor).
  A power of two scales every product exactly, so the IBI file and the 1 Hz HR must come out byte for byte the same:
  any difference is a constant in BVP units.
- Orientation: the ACC axes with two signs flipped (the band turned round, or mirrored: the other wrist) must give the
  same files too. Rotated (x, y, z) -> (z, x, y) the sums run in another order and round differently; the table gives
  how much of the output that moves (IBIs identical; seconds whose HR is within 1 bpm, or absent in both).
- Sensor noise: white noise added at 3, 10 and 30 times the set's own noise floor (the standard deviation of the BVP
  above 8 Hz, median over 1 s windows: 0.15-0.34 counts on these sets, against pulses of 50-130 counts). A pulse 10
  times weaker on the same sensor is the 10 x row. Beats are scored by eval_ibi.py (coverage and precision at 100 ms,
  lag-corrected) and HR by score_hr.py against Empatica's IBI.csv, as in the main tables.

Prints one Markdown table; writes its files under OUT/invariance/. Noise is seeded (numpy default_rng(1)).
"""
import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np

SCALES = (0.125, 8.0)
ORIENTATIONS = {
    "turned": lambda a: a * np.array([-1, -1, 1]),
    "mirrored": lambda a: a * np.array([-1, 1, -1]),
}
ROTATED = lambda a: a[:, [2, 0, 1]]  # noqa: E731
NOISE = (3, 10, 30)


def read_e4(path):
    with open(path) as f:
        rows = [r.strip() for r in f if r.strip()]
    return rows[:2], np.array([[float(v) for v in r.split(",")] for r in rows[2:]])


def write_e4(path, head, values, fmt):
    with open(path, "w") as f:
        f.write("\n".join(head) + "\n")
        np.savetxt(f, values, fmt=fmt, delimiter=",")


def noise_floor(bvp):
    """Median over 1 s windows of the BVP's standard deviation above 8 Hz (64 Hz samples)."""
    from scipy.signal import butter, filtfilt

    b, a = butter(4, 8 / 32, "high")
    hf = filtfilt(b, a, bvp)
    n = len(hf) // 64
    return float(np.median(hf[: n * 64].reshape(n, 64).std(axis=1)))


def engine(args, bvp, acc, out):
    ibi, hr = f"{out}-ibi.csv", f"{out}-hr.csv"
    subprocess.run([f"{args.bin}/empalinkctl", "ibi", "--bvp", bvp, "--acc", acc, "--out", ibi, "--hr", hr],
                   check=True, stdout=subprocess.DEVNULL)
    return ibi, hr


def same(a, b):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        return fa.read() == fb.read()


def agreement(base_ibi, base_hr, ibi, hr):
    """Share of the base IBI rows found identical, and of the seconds whose HR agrees within 1 bpm (or is absent in
    both)."""
    with open(base_ibi) as f:
        a = set(f.read().splitlines()[1:])
    with open(ibi) as f:
        b = set(f.read().splitlines()[1:])
    same_ibi = len(a & b) / max(len(a), 1)
    x = np.loadtxt(base_hr, skiprows=2, ndmin=1)
    y = np.loadtxt(hr, skiprows=2, ndmin=1)
    n = min(len(x), len(y))
    x, y = x[:n], y[:n]
    agree = ((x == 0) & (y == 0)) | ((x > 0) & (y > 0) & (np.abs(x - y) <= 1))
    return f"{100 * same_ibi:.1f} % / {100 * agree.mean():.1f} %"


def scores(args, d, bvp, ibi, hr, tag):
    j = f"{tag}-eval.json"
    subprocess.run([sys.executable, args.eval, "--bvp", bvp, "--ref", f"{d}/IBI.csv", "--detections", ibi, "--acc",
                    f"{d}/ACC.csv", "--tol", "0.1", "--json", j], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    r = json.load(open(j))
    det = next(iter(r["detectors"].values())) if "detectors" in r else next(iter(r.values()))
    m = det["matching"]["lagcorr@100ms"]
    s = json.loads(subprocess.run([sys.executable, args.score, hr, f"{d}/IBI.csv"], check=True, capture_output=True,
                                  text=True).stdout)
    return f"{m['coverage']:.3f} / {m['precision_cov']:.3f}", f"{s['availability']:.3f} / {s['mae_bpm']:.2f}"


def one(args, name, d):
    out = os.path.join(args.out, "invariance", name)
    os.makedirs(out, exist_ok=True)
    bvp_head, bvp = read_e4(f"{d}/BVP.csv")
    acc_head, acc = read_e4(f"{d}/ACC.csv")
    bvp = bvp[:, 0]
    base_ibi, base_hr = engine(args, f"{d}/BVP.csv", f"{d}/ACC.csv", f"{out}/base")
    row = {"set": name}
    row["base"] = scores(args, d, f"{d}/BVP.csv", base_ibi, base_hr, f"{out}/base")
    changed = []
    for scale in SCALES:
        p = f"{out}/bvp-x{scale}.csv"
        write_e4(p, bvp_head, bvp * scale, "%.6f")
        ibi, hr = engine(args, p, f"{d}/ACC.csv", f"{out}/x{scale}")
        if not (same(ibi, base_ibi) and same(hr, base_hr)):
            changed.append(f"x{scale}")
    for label, transform in ORIENTATIONS.items():
        p = f"{out}/acc-{label}.csv"
        write_e4(p, acc_head, transform(acc), "%d")
        ibi, hr = engine(args, f"{d}/BVP.csv", p, f"{out}/{label}")
        if not (same(ibi, base_ibi) and same(hr, base_hr)):
            changed.append(label)
    row["same"] = "identical" if not changed else "differ: " + ", ".join(changed)
    p = f"{out}/acc-rotated.csv"
    write_e4(p, acc_head, ROTATED(acc), "%d")
    ibi, hr = engine(args, f"{d}/BVP.csv", p, f"{out}/rotated")
    row["rotated"] = agreement(base_ibi, base_hr, ibi, hr)
    floor = noise_floor(bvp)
    row["floor"] = floor
    rng = np.random.default_rng(1)
    white = rng.standard_normal(len(bvp))
    for k in NOISE:
        p = f"{out}/bvp-noise{k}.csv"
        write_e4(p, bvp_head, bvp + k * floor * white, "%.4f")
        ibi, hr = engine(args, p, f"{d}/ACC.csv", f"{out}/noise{k}")
        row[f"noise{k}"] = scores(args, d, p, ibi, hr, f"{out}/noise{k}")
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=".build/debug")
    ap.add_argument("--out", default=".build/bench-ibi")
    ap.add_argument("--data", default="../shared/data")
    ap.add_argument("--eval", default="../shared/tools/eval_ibi.py")
    ap.add_argument("--score", default="../shared/tools/score_hr.py")
    args = ap.parse_args()
    sets = [("e4-msr2023", f"{args.data}/e4-msr2023")]
    root = f"{args.data}/e4-stresspredict"
    if os.path.isdir(root):
        sets += [(s, f"{root}/{s}") for s in sorted(os.listdir(root)) if os.path.isfile(f"{root}/{s}/IBI.csv")]
    with ThreadPoolExecutor(2) as pool:
        rows = list(pool.map(lambda s: one(args, *s), sets))
    print("| set | BVP / 8, x 8; ACC turned, mirrored | ACC rotated: IBIs / HR seconds the same | noise floor "
          "(counts) | beats: coverage / "
          "precision, as recorded | + 3 x floor | + 10 x | + 30 x | HR: availability / MAE, as recorded | + 3 x floor "
          "| + 10 x | + 30 x |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        beats = [r["base"][0]] + [r[f"noise{k}"][0] for k in NOISE]
        hr = [r["base"][1]] + [r[f"noise{k}"][1] for k in NOISE]
        print(f"| {r['set']} | {r['same']} | {r['rotated']} | {r['floor']:.2f} | " + " | ".join(beats) + " | " + " | ".join(hr) + " |")


if __name__ == "__main__":
    main()
