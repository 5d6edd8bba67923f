#!/usr/bin/env python3
"""Synthetic E4-like recordings with exact beat truth, for the IBI benchmark.

    synth.py --outdir DIR [--seed S]   -> DIR/<scenario>/{BVP.csv, ACC.csv, IBI.csv (truth, every beat), motion.csv}

Written to be ported into the simulator's physiology generator: a beat train (heart rate with respiratory and
slow variability, optional arrhythmic episodes: premature beats and atrial-fibrillation-like irregularity), a PPG
pulse per beat (systolic wave, dicrotic notch and wave, diastolic decay back to the foot) whose timing scales
with the interval, baseline wander and sensor noise, and motion episodes that add arm-movement artefacts to the
PPG and show in ACC (1/64 g). The truth beat time is the pulse's foot, the fiducial Empatica's IBIs use.

Pulse morphology follows the real E4 BVP (median pulse of e4-msr2023 around Empatica's beats): after the systolic
peak and the dicrotic shoulder the signal keeps falling, fastest just before the next upstroke, so the foot is a
sharp V trough exactly at the beat time (the previous pulse's run-off reaches its minimum there and the new pulse's
upstroke starts there). A run-off that flattened out long before the next beat would leave a noisy plateau whose
lowest sample wanders by hundreds of ms — unlike the E4, and unscorable at 40 bpm.

Motion artefacts are of the kinds arm movement produces, each visible in ACC with the amplitude in g given by the
scenario: periodic arm swing (fundamental plus second harmonic, and low-passed broadband wobble), and step-like
jolts (a brief ACC spike, a PPG step that decays back over about a second). Artefacts only add to the PPG; the
beat truth is untouched.
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
        u = np.clip(tau / nxt, 0, 1)
        g = (np.exp(-((tau - 0.14 * s) / (0.05 * s)) ** 2) + 0.4 * np.exp(-((tau - 0.36 * s) / (0.07 * s)) ** 2)
             # diastolic run-off: falls until the next foot, steepest just before it (E4-like V trough)
             + 0.6 * np.clip(tau / (0.12 * s), 0, 1) ** 2 * (1 - u ** 3))
        x[i0:i1] += g * rng.uniform(0.85, 1.15)
    x += 0.15 * np.sin(2 * np.pi * 0.2 * t) + 0.01 * rng.standard_normal(n)
    return 80 * x


def lowpass_noise(rng, n, width):
    """Broadband wobble without the 64 Hz white component real arm motion does not have: a moving average."""
    k = np.ones(width) / np.sqrt(width)
    return np.convolve(rng.standard_normal(n + width), k, "same")[:n]


def motion(rng, n_bvp, episodes):
    """Motion episodes (start, end, g, kind): kind "swing" = periodic arm swing at 1-3 Hz; "jolts" = a step-like
    jolt every 2-5 s. Returns ACC (counts) and the additive PPG artefact."""
    n_acc = int(n_bvp / FS * FS_ACC)
    ta = np.arange(n_acc) / FS_ACC
    acc = np.tile([0.0, 0.0, 64.0], (n_acc, 1))
    art = np.zeros(n_bvp)
    tb = np.arange(n_bvp) / FS
    for (a, b, g, kind) in episodes:  # g: peak ACC amplitude in g
        ma, mb = (ta >= a) & (ta < b), (tb >= a) & (tb < b)
        if kind == "swing":
            f = rng.uniform(1.0, 3.0)
            ph = rng.uniform(0, 2 * np.pi)
            acc[ma, 0] += 64 * g * np.sin(2 * np.pi * f * ta[ma] + ph)
            acc[ma, 1] += 32 * g * np.sin(2 * np.pi * 0.5 * f * ta[ma])
            art[mb] = 150 * g * (np.sin(2 * np.pi * f * tb[mb] + ph) + 0.3 * np.sin(4 * np.pi * f * tb[mb] + 2 * ph))
            art[mb] += 40 * g * lowpass_noise(rng, mb.sum(), 8)
        else:  # jolts
            t = a + rng.uniform(0.5, 2.0)
            while t < b:
                ia = (ta >= t) & (ta < t + 0.12)
                acc[ia, rng.integers(0, 3)] += 64 * g * np.sin(np.pi * (ta[ia] - t) / 0.12)
                after = tb >= t
                step = rng.choice([-1, 1]) * 120 * g * rng.uniform(0.5, 1.0)
                art[after] += step * np.exp(-(tb[after] - t) / rng.uniform(0.5, 1.5))
                t += rng.uniform(2.0, 5.0)
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
        f.write("start,end\n" + "".join(f"{e[0]},{e[1]}\n" for e in episodes))


SCENARIOS = {  # name: (duration s, bpm, arrhythmia, motion episodes (start, end, g, kind))
    "rest-40": (300, 40, None, []), "rest-60": (300, 60, None, []), "rest-100": (300, 100, None, []),
    "rest-150": (300, 150, None, []), "rest-200": (300, 200, None, []),
    "arrhythmia-75": (300, 75, (120, 180), []),
    "motion-80": (300, 80, None, [(60, 90, 0.4, "swing"), (150, 160, 1.0, "swing"), (220, 260, 0.15, "swing")]),
    "jolts-70": (300, 70, None, [(60, 120, 0.5, "jolts"), (180, 240, 1.5, "jolts")]),
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
