#!/usr/bin/env python3
"""Walking and running recordings with exact beat truth, for the heart-rate-through-motion benchmark.

    walk.py --outdir DIR [--seed S]   -> DIR/<scenario>/{BVP.csv, ACC.csv, IBI.csv (truth, every beat), HRREF.csv}

The same model as the simulator's walking/running episodes (Sources/Simulator/PhysiologyModel.swift,
MotionEpisode.swift; Docs/simulator.md): the pulse of synth.py; during an episode the arm swings at the cadence
(1.5-3 Hz), which shows in ACC (x: swing, y: half its amplitude, z: the step bounce at twice the cadence) and
corrupts the PPG with the cadence and its harmonics (fundamental, 0.5 x second, 0.25 x third), each with its own
lag behind the ACC and a gain that wanders slowly (contact pressure), plus low-passed broadband wobble; the cadence
itself drifts by a few percent. Heart rate rises with effort: toward rest + 25 bpm walking, + 70 bpm running,
first-order with a 30 s time constant, and recovers after the episode with 45 s. The artefact is 0.8-1.2 x the
pulse's amplitude walking, 2-3 x running (the IEEE SPC 2015 treadmill PPG is of that order).

"offwrist-walk": no pulse at all (sensor noise and the walking artefact only): nothing confident must come out.
HRREF.csv is the true instantaneous heart rate at 1 Hz (60 / the interval in progress), for score_hr.py.
"""
import argparse
import os

import numpy as np

import synth

FS, FS_ACC, START = synth.FS, synth.FS_ACC, synth.START

# name: (duration s, rest bpm, episodes [(start, end, kind, cadence Hz)], pulse present)
SCENARIOS = {
    "walk-65": (300, 65, [(40, 260, "walk", 1.6)], True),
    "walk-85": (300, 85, [(40, 260, "walk", 1.9)], True),
    "run-75": (300, 75, [(40, 260, "run", 2.6)], True),   # HR rises through the cadence (156 /min)
    "run-95": (300, 95, [(30, 270, "run", 2.9)], True),
    "run-cadence-hr": (300, 90, [(40, 260, "run", 2.5)], True),  # HR settles at 150-160 bpm, cadence 150 /min
    "walk-cadence-hr": (300, 72, [(40, 260, "walk", 1.5)], True),  # HR 90-97 bpm on a 90 /min cadence
    "intervals-70": (360, 70, [(30, 90, "walk", 1.7), (90, 150, "run", 2.7), (150, 210, "walk", 1.7),
                               (210, 270, "run", 2.8)], True),
    "offwrist-walk": (200, 70, [(20, 180, "walk", 1.8)], False),
}
RISE = {"walk": 25.0, "run": 70.0}
GAIN = {"walk": (0.35, 0.8, 1.2), "run": (1.2, 2.0, 3.0)}  # ACC peak g, artefact / pulse amplitude range


def heart_rate(t, rest, episodes):
    """bpm at times t: first-order toward the effort's target (tau 30 s), recovery tau 45 s."""
    hr = np.full(len(t), float(rest))
    dt = t[1] - t[0]
    level = float(rest)
    for i, ti in enumerate(t):
        target, tau = float(rest), 45.0
        for a, b, kind, _ in episodes:
            if a <= ti < b:
                target, tau = rest + RISE[kind], 30.0
        level += (target - level) * dt / tau
        hr[i] = level
    return hr


def beats_from(rng, dur, hr_t, hr):
    t, out = 0.5, []
    while t < dur:
        bpm = np.interp(t, hr_t, hr)
        ibi = 60 / bpm * (1 + 0.03 * np.sin(2 * np.pi * 0.25 * t) + 0.01 * rng.standard_normal())
        out.append(t)
        t += ibi
    return np.array(out)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--outdir", required=True)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    for k, (name, (dur, rest, eps, pulse)) in enumerate(SCENARIOS.items()):
        rng = np.random.default_rng(a.seed * 1000 + k)
        n, n_acc = int(dur * FS), int(dur * FS_ACC)
        tb, ta = np.arange(n) / FS, np.arange(n_acc) / FS_ACC
        hr = heart_rate(tb, rest, eps)
        beats = beats_from(rng, dur, tb, hr)
        x = synth.ppg(rng, beats, n) if pulse else 80 * (0.15 * np.sin(2 * np.pi * 0.2 * tb)
                                                          + 0.01 * rng.standard_normal(n))
        acc = np.tile([8.0, -4.0, 62.0], (n_acc, 1)) + 0.7 * rng.standard_normal((n_acc, 3))
        for (s, e, kind, cadence) in eps:
            g, lo, hi = GAIN[kind]
            ratio = rng.uniform(lo, hi)
            ma, mb = (ta >= s) & (ta < e), (tb >= s) & (tb < e)
            # cadence drift: a slow random walk of a few percent, integrated to a phase
            drift = np.cumsum(rng.standard_normal(n)) / FS
            drift = 0.03 * drift / max(np.abs(drift).max(), 1e-9)
            phase_b = 2 * np.pi * np.cumsum(cadence * (1 + drift)) / FS
            phase_a = np.interp(ta, tb, phase_b)
            ramp_a = np.clip(np.minimum(ta - s, e - ta) / 2, 0, 1)  # 2 s to get going and to stop
            ramp_b = np.clip(np.minimum(tb - s, e - tb) / 2, 0, 1)
            acc[ma, 0] += (64 * g * ramp_a * (np.sin(phase_a) + 0.3 * np.sin(2 * phase_a)))[ma]
            acc[ma, 1] += (32 * g * ramp_a * np.sin(phase_a + 0.7))[ma]
            acc[ma, 2] += (25 * g * ramp_a * np.sin(2 * phase_a + 0.3))[ma]
            lags = rng.uniform(0, 2 * np.pi, 3)
            wander = 1 + 0.25 * np.sin(2 * np.pi * tb / rng.uniform(15, 40) + rng.uniform(0, 6.3))
            amp = 80 * ratio * ramp_b * wander  # the pulse is ~80 units peak
            art = amp * (np.sin(phase_b + lags[0]) + 0.5 * np.sin(2 * phase_b + lags[1])
                         + 0.25 * np.sin(3 * phase_b + lags[2]))
            art += 0.3 * amp * synth.lowpass_noise(rng, n, 8)
            x[mb] += art[mb]
        d = f"{a.outdir}/{name}"
        synth.write(d, x, np.clip(np.round(acc), -128, 127), beats, [(s, e) for s, e, _, _ in eps])
        with open(f"{d}/HRREF.csv", "w") as f:
            f.write("t,bpm\n")
            for sec in range(10, dur - 5):
                # the true rate: 60 / mean of the intervals ending in [sec-4, sec+4), as score_hr.py does for IBIs
                m = (beats[1:] >= sec - 4) & (beats[1:] < sec + 4)
                f.write(f"{sec},{60 / np.diff(beats)[m].mean():.3f}\n")
        if not pulse:
            os.remove(f"{d}/IBI.csv")


if __name__ == "__main__":
    main()
