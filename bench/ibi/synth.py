#!/usr/bin/env python3
"""Synthetic E4-like recordings with exact beat truth, for the IBI benchmark.

    synth.py --outdir DIR [--seed S]   -> DIR/<scenario>/{BVP.csv, ACC.csv, IBI.csv (truth, every beat), motion.csv}

Written to be ported into the simulator's physiology generator: a beat train (heart rate with respiratory and
slow variability, optional arrhythmic episodes: premature beats and atrial-fibrillation-like irregularity), a PPG
pulse per beat (systolic wave, dicrotic notch and wave, diastolic decay back to the foot) whose timing scales
with the interval, baseline wander and sensor noise, and motion episodes that add arm-movement artefacts to the
PPG and show in ACC (1/64 g). The truth beat time is the pulse's foot, the fiducial Empatica's IBIs use.
"""
import argparse
import os

import numpy as np

FS, FS_ACC, START = 64.0, 32.0, 1_700_000_000.0


def beat_train(rng, dur, bpm, hrv=0.04, arrhythmia=None):
    t, out = 0.5, []
    while t < dur:
        base = 60.0 / bpm
        ibi = base * (1 + hrv * np.sin(2 * np.pi * 0.25 * t) + 0.5 * hrv * np.sin(2 * np.pi * 0.05 * t)
                      + 0.01 * rng.standard_normal())
        if arrhythmia and arrhythmia[0] <= t < arrhythmia[1]:
            ibi = base * rng.uniform(0.7, 1.3)  # AF-like irregular intervals
        elif arrhythmia is not None and rng.random() < 0.03:
            ibi = base * 0.65  # a premature beat, then a compensatory pause
            out.append(t)
            t += ibi
            ibi = base * 1.35
        out.append(t)
        t += ibi
    return np.array(out)


def ppg(rng, beats, n):
    t = np.arange(n) / FS
    x = np.zeros(n)
    for k, b in enumerate(beats):
        nxt = beats[k + 1] - b if k + 1 < len(beats) else 0.8
        s = np.clip(nxt / 0.8, 0.45, 1.3)
        i0, i1 = int(b * FS), min(n, int((b + 2.5) * FS))
        tau = t[i0:i1] - b
        tau = tau[tau >= 0]
        i0 = i1 - len(tau)
        g = (np.exp(-((tau - 0.14 * s) / (0.05 * s)) ** 2) + 0.4 * np.exp(-((tau - 0.36 * s) / (0.07 * s)) ** 2)
             # diastolic run-off: falls steadily until the next foot, so the foot is the trough
             + 0.35 * np.clip(tau / (0.12 * s), 0, 1) ** 2 * np.clip(1 - tau / nxt, 0, 1))
        x[i0:i1] += g * rng.uniform(0.85, 1.15)
    x += 0.15 * np.sin(2 * np.pi * 0.2 * t) + 0.01 * rng.standard_normal(n)
    return 80 * x


def motion(rng, n_bvp, episodes):
    n_acc = int(n_bvp / FS * FS_ACC)
    ta = np.arange(n_acc) / FS_ACC
    acc = np.tile([0.0, 0.0, 64.0], (n_acc, 1))
    art = np.zeros(n_bvp)
    tb = np.arange(n_bvp) / FS
    for (a, b, g) in episodes:  # g: peak ACC amplitude in g
        f = rng.uniform(1.0, 3.0)
        ma, mb = (ta >= a) & (ta < b), (tb >= a) & (tb < b)
        ph = rng.uniform(0, 2 * np.pi)
        acc[ma, 0] += 64 * g * np.sin(2 * np.pi * f * ta[ma] + ph)
        acc[ma, 1] += 32 * g * np.sin(2 * np.pi * 0.5 * f * ta[ma])
        art[mb] = 150 * g * np.sin(2 * np.pi * f * tb[mb] + ph) + 60 * g * rng.standard_normal(mb.sum())
    return np.round(acc), art


def write(d, bvp, acc, beats, episodes):
    os.makedirs(d, exist_ok=True)
    with open(f"{d}/BVP.csv", "w") as f:
        f.write(f"{START:.2f}\n{FS:.6f}\n" + "".join(f"{v:.2f}\n" for v in bvp))
    with open(f"{d}/ACC.csv", "w") as f:
        f.write(f"{START:.6f}, {START:.6f}, {START:.6f}\n{FS_ACC:.6f}, {FS_ACC:.6f}, {FS_ACC:.6f}\n")
        f.write("".join(f"{int(a)},{int(b)},{int(c)}\n" for a, b, c in acc))
    q = np.round(beats * FS) / FS  # the truth on the sample grid, as a 64 Hz detector can see it
    with open(f"{d}/IBI.csv", "w") as f:
        f.write(f"{START:.6f}, IBI\n" + "".join(f"{q[k]:.6f},{q[k] - q[k - 1]:.6f}\n" for k in range(1, len(q))))
    with open(f"{d}/motion.csv", "w") as f:
        f.write("start,end\n" + "".join(f"{a},{b}\n" for a, b, _ in episodes))


SCENARIOS = {  # name: (duration s, bpm, arrhythmia, motion episodes (start, end, g))
    "rest-40": (300, 40, None, []), "rest-60": (300, 60, None, []), "rest-100": (300, 100, None, []),
    "rest-150": (300, 150, None, []), "rest-200": (300, 200, None, []),
    "arrhythmia-75": (300, 75, (120, 180), []),
    "motion-80": (300, 80, None, [(60, 90, 0.4), (150, 160, 1.0), (220, 260, 0.15)]),
}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--outdir", required=True)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    for k, (name, (dur, bpm, arr, eps)) in enumerate(SCENARIOS.items()):
        rng = np.random.default_rng(a.seed * 100 + k)
        beats = beat_train(rng, dur, bpm, arrhythmia=arr)
        n = int(dur * FS)
        acc, art = motion(rng, n, eps)
        write(f"{a.outdir}/{name}", ppg(rng, beats, n) + art, acc, beats, eps)


if __name__ == "__main__":
    main()
