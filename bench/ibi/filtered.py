#!/usr/bin/env python3
"""The artefact-reduced BVP (empalinkctl ibi --filtered) against the unfiltered one.

    filtered.py --bin .build/debug --out .build/bench-ibi [--data ../shared/data]

Walking/running sets (walk.py, exact truth): power at the cadence and its 2nd/3rd harmonic (+-0.05 Hz) before and
after, in dB, and at the true heart rate (the pulse must stay). E4 sets: the beats our engine detects on the raw
and on the filtered BVP -- how many, and how many sit at the same sample; restricted to still time (the engine's
own 1 s ACC index < 0.02 g, i.e. no movement at all) they must be the same beats.
"""
import argparse
import os
import subprocess

import numpy as np


def load(path):
    return np.loadtxt(path, skiprows=2)


def band_power(x, fs, f, half=0.05):
    spec = np.abs(np.fft.rfft((x - x.mean()) * np.hanning(len(x)))) ** 2
    freqs = np.fft.rfftfreq(len(x), 1 / fs)
    return spec[(freqs >= f - half) & (freqs <= f + half)].sum()


def beats(binary, bvp, acc, out):
    args = [f"{binary}/empalinkctl", "ibi", "--bvp", bvp, "--out", "/dev/null", "--beats", out]
    if acc:
        args += ["--acc", acc]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    d = np.genfromtxt(out, delimiter=",", skip_header=1, ndmin=2, usecols=(0,))
    return d[:, 0] if d.size else np.array([])


def still_mask(acc_path, times):
    with open(acc_path) as f:
        f.readline()
        fs = float(f.readline().split(",")[0])
    a = np.loadtxt(acc_path, delimiter=",", skiprows=2, ndmin=2) / 64.0
    n = int(fs)
    index = np.zeros(len(a))
    for i in range(n, len(a)):
        index[i] = np.sqrt(a[i - n:i].var(axis=0).sum())
    k = np.clip((times * fs).astype(int), 0, len(a) - 1)
    return index[k] < 0.02


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--data", default="../shared/data")
    a = p.parse_args()
    root = f"{a.out}/hr"
    print("| walking/running set | cadence Hz | cadence 1st / 2nd / 3rd harmonic, dB change | pulse at true HR, dB |")
    print("|---|---|---|---|")
    import walk  # same directory (bench/ibi)
    for name, (dur, rest, eps, pulse) in walk.SCENARIOS.items():
        d = f"{root}/walk/{name}"
        if not os.path.exists(f"{d}/BVP.csv"):
            continue
        f_out = f"{root}/{name}/filtered.csv"
        subprocess.run([f"{a.bin}/empalinkctl", "ibi", "--bvp", f"{d}/BVP.csv", "--acc", f"{d}/ACC.csv", "--out",
                        "/dev/null", "--filtered", f_out], check=True, stdout=subprocess.DEVNULL)
        raw, filt = load(f"{d}/BVP.csv"), load(f_out)
        s, e, _, cadence = eps[-1]
        lo, hi = int((s + 30) * 64), int((e - 5) * 64)
        changes = [10 * np.log10(band_power(filt[lo:hi], 64, k * cadence) / band_power(raw[lo:hi], 64, k * cadence))
                   for k in (1, 2, 3)]
        ref = np.loadtxt(f"{d}/HRREF.csv", delimiter=",", skiprows=1)
        hr = np.median(ref[(ref[:, 0] >= s + 30) & (ref[:, 0] < e - 5), 1]) / 60
        pulse_db = 10 * np.log10(band_power(filt[lo:hi], 64, hr, 0.1) / band_power(raw[lo:hi], 64, hr, 0.1)) \
            if pulse else float("nan")
        print(f"| {name} | {cadence} | {' / '.join(f'{c:+.1f}' for c in changes)} | {pulse_db:+.1f} |")
    print()
    print("| E4 set | beats raw / filtered | same sample | still-time beats raw / filtered | still-time same |")
    print("|---|---|---|---|---|")
    sets = [("e4-msr2023", f"{a.data}/e4-msr2023")]
    sets += [(f"stresspredict-{s}", f"{a.data}/e4-stresspredict/{s}") for s in ("S01", "S06", "S08", "S33")]
    for name, d in sets:
        out = f"{root}/{name}"
        os.makedirs(out, exist_ok=True)
        f_out = f"{out}/filtered.csv"
        subprocess.run([f"{a.bin}/empalinkctl", "ibi", "--bvp", f"{d}/BVP.csv", "--acc", f"{d}/ACC.csv", "--out",
                        "/dev/null", "--filtered", f_out], check=True, stdout=subprocess.DEVNULL)
        b_raw = beats(a.bin, f"{d}/BVP.csv", f"{d}/ACC.csv", f"{out}/beats-raw.csv")
        b_filt = beats(a.bin, f_out, f"{d}/ACC.csv", f"{out}/beats-filtered.csv")
        same = np.isin(np.round(b_raw * 64), np.round(b_filt * 64))
        still_raw, still_filt = still_mask(f"{d}/ACC.csv", b_raw), still_mask(f"{d}/ACC.csv", b_filt)
        print(f"| {name} | {len(b_raw)} / {len(b_filt)} | {same.mean():.3f} | {still_raw.sum()} / {still_filt.sum()} "
              f"| {same[still_raw].mean() if still_raw.any() else float('nan'):.3f} |")


if __name__ == "__main__":
    main()
