#!/usr/bin/env python3
"""Real E4 pulses with walk.py's motion on top: a check of the heart-rate-through-motion estimator on pulses the
simulator did not make.

    e4motion.py --outdir DIR [--seed S] [--data ../shared/data]
        -> DIR/<subject>-<scenario>/{BVP.csv, ACC.csv, IBI.csv (Empatica's beats, moved with the recording)}

walk.py's pulse is synth.py's (a Gaussian systole, a sharp foot, 3 % sinusoidal HRV). Real wrist pulses differ in
shape, harmonics, variability and sensor noise. Here a seated e4-stresspredict session (S01, S06, S08, S33) gives
the pulse: a stretch of it is played faster as the heart would beat faster with effort (walk.py's first-order
rise toward rest + 25 bpm walking, + 70 running, 30 s in, 45 s out), i.e. resampled along a time warp whose
speed is the target rate over the stretch's resting rate. The pulse's shape is compressed with the warp (a real
heart shortens diastole more than systole; the spectrum's harmonic ratios stay those of the real pulse). The
recording's own ACC is warped the same way and walk.py's arm swing is added to it, and walk.py's artefact
(the swing, its harmonics, their lags, a wandering gain, low-passed wobble) is added to the BVP, scaled to the
stretch's pulse amplitude as walk.py scales it to its synthetic pulse.

Reference: Empatica's own beats (IBI.csv), each interval's two ends moved through the same warp, so the
reference exists where Empatica emitted beats in the seated original — mostly everywhere in these sessions.
Scored like the E4 sets (score_hr.py, IBI mode). The seed picks the stretch (a different start in each
session) and the artefact's draws.
"""
import argparse
import os

import numpy as np

import synth
import walk

FS, FS_ACC, START = synth.FS, synth.FS_ACC, synth.START
SUBJECTS = ("S01", "S06", "S08", "S33")
DURATION = 300.0
# name: (episode kind, cadence range Hz (steps), the arm swings once a stride)
SCENARIOS = {
    "walk": ("walk", (1.6, 1.9), True),
    "run": ("run", (2.5, 2.9), True),
    "run-step": ("run", (2.5, 2.9), False),  # the simulator's model: the arm at the step rate
}


def read_signal(path):
    with open(path) as f:
        rows = [r.strip() for r in f if r.strip()]
    start, fs = float(rows[0].split(",")[0]), float(rows[1].split(",")[0])
    return start, fs, np.array([[float(v) for v in r.split(",")] for r in rows[2:]])


def read_ibi(path):
    with open(path) as f:
        rows = [r.strip() for r in f if r.strip()]
    start = float(rows[0].split(",")[0])
    d = np.array([[float(v) for v in r.split(",")[:2]] for r in rows[1:]])
    return start, d[:, 0], d[:, 1]


def lowpass(x, fs, cutoff, taps=63):
    """Windowed-sinc FIR, zero phase (offline: the warp's resampling must not alias, not a causal filter)."""
    k = np.arange(taps) - (taps - 1) / 2
    h = np.sinc(2 * cutoff / fs * k) * np.hamming(taps)
    h /= h.sum()
    return np.convolve(x, h, "same")


def pulse_amplitude(x, fs):
    """Median over 8 s windows of half the 5-95 % range of the band-passed signal."""
    y = lowpass(x, fs, 4.0) - lowpass(x, fs, 0.5, taps=255)
    n = int(8 * fs)
    spans = [np.percentile(y[i:i + n], 95) - np.percentile(y[i:i + n], 5) for i in range(0, len(y) - n, n)]
    return float(np.median(spans)) / 2


def synthetic_reference_amplitude(rng):
    """walk.py's artefact is 80 x ratio for synth.py's pulse: the same estimator on that pulse, to scale alike."""
    beats = synth.beat_train(rng, 60.0, 75.0)
    return pulse_amplitude(synth.ppg(rng, beats, int(60 * FS)), FS)


def make(rng, subject_dir, scenario, out, ref_amp, warped=True, artefact=1.0, hrv=1.0):
    kind, (c_lo, c_hi), stride = SCENARIOS[scenario]
    b_start, fs, bvp = read_signal(f"{subject_dir}/BVP.csv")
    a_start, fs_acc, acc = read_signal(f"{subject_dir}/ACC.csv")
    i_start, it, ibi = read_ibi(f"{subject_dir}/IBI.csv")
    bvp = bvp[:, 0]
    ends = i_start + it - b_start  # seconds since BVP's first sample
    begins = ends - ibi
    # the warp: the original time each new sample is taken from (below)
    episodes = [(40.0, 260.0, kind, 0.0)]
    u = np.arange(int(DURATION * FS)) / FS
    rest = 60.0 / np.median(ibi)  # the session's resting rate, for the stretch's length (+10 % margin)
    span = 1.1 * float(np.sum(walk.heart_rate(u, rest, episodes) / rest) / FS)
    # the stretch: a start on a 30 s grid, drawn, with at least 0.56 of Empatica's intervals a second in it (about
    # half of it covered at a resting rate)
    total = len(bvp) / fs
    starts = [s for s in np.arange(60.0, total - span - 10, 30.0)
              if np.sum((begins >= s) & (ends <= s + span)) * 0.9 >= 0.5 * span]
    if not starts:
        return False
    t0 = float(rng.choice(starts))
    m = (begins >= t0) & (ends <= t0 + span)
    rest_hr = 60.0 / np.median(ibi[m])
    target = walk.heart_rate(u, rest_hr, episodes)
    # The original's beat-to-beat rate (Empatica's intervals, glitches left out, below). Played
    # faster by target / rest alone, its variability in bpm would grow with the speed (a resting RSA of +-5 bpm,
    # +-10 at twice the rate) where a running heart's shrinks; the speed takes the rate to target x (rate /
    # rest)^(rest / target) instead, which keeps the variability's size in bpm what it was at rest (`hrv` scales that
    # size: a diagnostic, as exercise withdraws the vagal tone that makes most of a seated heart's variability).
    # Empatica's intervals more than 20 % from the median of their 11 neighbours are its detector's misses and extras
    # (a seated heart does not change that much in one beat): left out of the warp and of the reference.
    rows = np.flatnonzero(m)
    inst = 60.0 / ibi[rows]
    local = np.array([np.median(inst[max(0, i - 5):i + 6]) for i in range(len(inst))])
    keep = np.abs(inst / local - 1) <= 0.2
    m[rows[~keep]] = False
    inst = inst[keep]
    warp = np.empty(len(u))
    w = t0
    for i in range(len(u)):
        warp[i] = w
        rate = float(np.interp(w, ends[m], inst))
        alpha = hrv * rest_hr / target[i]
        w += (target[i] * (rate / rest_hr) ** alpha / rate if warped else 1.0) / FS
    if warp[-1] >= total - 1:
        return False
    clean = lowpass(bvp, fs, 14.0)
    x = np.interp(warp, np.arange(len(bvp)) / fs, clean)
    amp_pulse = pulse_amplitude(np.interp(np.arange(t0, t0 + span, 1 / fs), np.arange(len(bvp)) / fs, bvp), fs)
    ua = np.arange(int(DURATION * FS_ACC)) / FS_ACC
    warp_a = np.interp(ua, u, warp)
    ta = np.arange(len(acc)) / fs_acc + (a_start - b_start)
    acc_out = np.stack([np.interp(warp_a, ta, acc[:, k]) for k in range(3)], axis=1)
    # walk.py's swing and artefact
    for (s, e, _, _) in episodes:
        ratio = rng.uniform(*walk.GAIN[kind][1:])
        cadence = rng.uniform(c_lo, c_hi)
        walk.add_motion(rng, u, ua, x, acc_out, (s, e, kind, cadence), stride,
                        80 * artefact * ratio * amp_pulse / ref_amp)
    # Empatica's intervals whose two ends lie in the stretch played, moved through the warp
    m &= ends <= warp[-1]
    new_end = np.interp(ends[m], warp, u)
    new_begin = np.interp(begins[m], warp, u)
    os.makedirs(out, exist_ok=True)
    with open(f"{out}/BVP.csv", "w") as f:
        f.write(f"{START:.2f}\n{FS:.6f}\n" + "".join(f"{v:.2f}\n" for v in x))
    with open(f"{out}/ACC.csv", "w") as f:
        f.write(f"{START:.6f}, {START:.6f}, {START:.6f}\n{FS_ACC:.6f}, {FS_ACC:.6f}, {FS_ACC:.6f}\n")
        f.write("".join(f"{int(a)},{int(b)},{int(c)}\n" for a, b, c in np.clip(np.round(acc_out), -128, 127)))
    with open(f"{out}/IBI.csv", "w") as f:
        f.write(f"{START:.6f}, IBI\n" + "".join(f"{e:.6f},{e - b:.6f}\n" for b, e in zip(new_begin, new_end)))
    with open(f"{out}/motion.csv", "w") as f:
        f.write("start,end,original_start,resting_bpm,cadence_hz\n"
                f"40,260,{t0:.1f},{rest_hr:.1f},{cadence:.3f}\n")
    return True


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--outdir", required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--data", default="../shared/data")
    p.add_argument("--no-warp", action="store_true", help="diagnostic: the heart at its resting rate throughout")
    p.add_argument("--artefact-scale", type=float, default=1.0,
                   help="diagnostic: the PPG artefact times this (0: the swing in ACC only, a clean PPG)")
    p.add_argument("--hrv-scale", type=float, default=1.0,
                   help="diagnostic: the seated heart's beat-to-beat variability, in bpm, times this while the"
                        " rate is raised (1: kept at its seated size)")
    a = p.parse_args()
    ref_amp = synthetic_reference_amplitude(np.random.default_rng(0))
    for j, subject in enumerate(SUBJECTS):
        for k, scenario in enumerate(SCENARIOS):
            rng = np.random.default_rng(a.seed * 1000 + 10 * j + k)
            make(rng, f"{a.data}/e4-stresspredict/{subject}", scenario, f"{a.outdir}/{subject}-{scenario}", ref_amp,
                 not a.no_warp, a.artefact_scale, a.hrv_scale)


if __name__ == "__main__":
    main()
