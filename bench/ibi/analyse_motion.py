#!/usr/bin/env python3
"""Which of our motion-time emissions are not in Empatica's output, and what sets them apart?

    analyse_motion.py --beats BEATS.csv [--data ../shared/data/e4-msr2023] [--eval ../shared/tools/eval_ibi.py]

BEATS.csv is `empalinkctl ibi --beats` output. For every beat we emitted in the scorer's motion time (its 4 s ACC
index >= 0.05 g) it recomputes, from the raw BVP and ACC, what the engine saw when it judged the beat: template
correlation (from BEATS.csv), amplitude relative to recent pulses, foot-to-upstroke time relative to recent clean
pulses, the engine's 1 s ACC index now and its maximum over the interval, time since the last strong (> 0.5 g) and
mild (> 0.1 g) motion, position in the run of clean intervals, interval vs the median of recent ones and vs the
previous one, upstroke slope vs the running level. It prints, per feature, the quartiles for emissions at a
reference row and for the others, and the gates "drop emission if feature beyond x": how many emissions each removes
(and how many of them were at reference rows). A gate is worth having only if it removes many non-reference
emissions per reference row lost AND has an a-priori reason; this script only measures.
"""
import argparse
import importlib.util
import os

import numpy as np
from scipy.signal import butter, lfilter

from beats import HELD, load_beats

TOL = 0.1


def engine_motion_index(acc_g, fs, window=1.0):
    """The engine's causal index: sqrt of summed per-axis variance over the last `window` s, per ACC sample."""
    n = int(round(window * fs))
    out = np.zeros(len(acc_g))
    c = np.cumsum(np.r_[np.zeros((1, 3)), acc_g], axis=0)
    c2 = np.cumsum(np.r_[np.zeros((1, 3)), acc_g ** 2], axis=0)
    for i in range(len(acc_g)):
        lo = max(0, i + 1 - n)
        k = i + 1 - lo
        m = (c[i + 1] - c[lo]) / k
        v = (c2[i + 1] - c2[lo]) / k - m * m
        out[i] = np.sqrt(np.clip(v, 0, None).sum())
    return out


def run_positions(reason):
    pos = np.zeros(len(reason), int)
    run = 0
    for i, r in enumerate(reason):
        run = run + 1 if r == "emitted" or r in HELD else 0
        pos[i] = run
    return pos


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--beats", required=True)
    p.add_argument("--data", default="../shared/data/e4-msr2023")
    p.add_argument("--eval", default="../shared/tools/eval_ibi.py")
    p.add_argument("--all-time", action="store_true", help="analyse every emission, not only motion time")
    p.add_argument("--still-time", action="store_true", help="analyse the emissions in still time")
    p.add_argument("--around", type=float, nargs="*", default=[],
                   help="instead: list the detected beats within 3 s of these times (s since start) with features")
    a = p.parse_args()
    spec = importlib.util.spec_from_file_location("eval_ibi", a.eval)
    ev = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ev)

    start, fs, bvp = ev.read_e4_signal(os.path.join(a.data, "BVP.csv"))
    bvp = bvp[:, 0]
    duration = len(bvp) / fs
    ref_t, ref_ibi = ev.read_events(os.path.join(a.data, "IBI.csv"), start)
    a_start, a_fs, acc = ev.read_e4_signal(os.path.join(a.data, "ACC.csv"))
    acc = acc / 64.0
    acc_t = a_start - start + np.arange(len(acc)) / a_fs
    mi4 = ev.motion_index(np.r_[acc] if a_start == start else acc, a_fs, int(np.ceil(duration)))
    motion_sec = mi4 >= 0.05
    motion_min = motion_sec.sum() / 60
    idx1 = engine_motion_index(acc, a_fs)

    bt, bibi, breason, bshape = load_beats(a.beats)
    emitted = breason == "emitted"
    sec = np.clip(np.floor(bt).astype(int), 0, len(mi4) - 1)
    in_motion = motion_sec[sec]
    rr2b, _ = ev.match(ref_t, bt[emitted], TOL)
    at_ref_e = np.zeros(emitted.sum(), bool)
    at_ref_e[rr2b[rr2b >= 0]] = True
    at_ref = np.zeros(len(bt), bool)
    at_ref[np.flatnonzero(emitted)[at_ref_e]] = True

    # Signal features around each detected beat, as the engine computes them.
    b, a_ = butter(2, 5 / (fs / 2))
    lp = lfilter(b, a_, bvp - bvp[0]) + bvp[0]
    slope = np.r_[0, np.diff(lp)]
    n = np.clip(np.round(bt * fs).astype(int), 0, len(bvp) - 1)
    amp = np.array([bvp[k:k + int(0.4 * fs)].max() - bvp[k] for k in n])
    up = np.array([k + int(np.argmax(slope[k:k + int(0.3 * fs)])) for k in n])
    rise = (up - n) / fs
    upslope = slope[up]
    ok_pulse = np.isin(breason, ("emitted", "irregular") + HELD)
    feats = {}
    amp_ratio = np.full(len(bt), np.nan)
    rise_dev = np.full(len(bt), np.nan)
    slope_ratio = np.full(len(bt), np.nan)
    ibi_vs_med = np.full(len(bt), np.nan)
    ibi_vs_prev = np.full(len(bt), np.nan)
    clean_rises = []
    for i in range(len(bt)):
        lo = max(0, i - 8)
        if i >= 3:
            amp_ratio[i] = amp[i] / np.median(amp[lo:i])
            slope_ratio[i] = upslope[i] / np.mean(upslope[lo:i])
        if len(clean_rises) >= 3:
            rise_dev[i] = (rise[i] - np.median(clean_rises[-8:])) / max(np.median(clean_rises[-8:]), 1 / fs)
        if ok_pulse[i]:
            clean_rises.append(rise[i])
    em_idx = np.flatnonzero(emitted)
    for k, i in enumerate(em_idx):
        prev = bibi[em_idx[max(0, k - 8):k]]
        if len(prev) >= 3:
            ibi_vs_med[i] = bibi[i] / np.median(prev) - 1
        if k >= 1:
            ibi_vs_prev[i] = bibi[i] / bibi[em_idx[k - 1]] - 1
    # ACC: index at the foot, max over the interval, time since strong / mild motion.
    acc_at = np.searchsorted(acc_t, bt, "right") - 1
    acc_now = idx1[np.clip(acc_at, 0, len(idx1) - 1)]
    acc_max = np.array([idx1[max(0, np.searchsorted(acc_t, t - (iv if np.isfinite(iv) else 1.0) - 0.5)):max(j, 0) + 1]
                        .max() for t, iv, j in zip(bt, bibi, acc_at)])
    strong_t = acc_t[idx1 > 0.5]
    mild_t = acc_t[idx1 > 0.1]

    def since(times, t):
        k = np.searchsorted(times, t, "right") - 1
        return np.where(k >= 0, t - times[np.clip(k, 0, None)], np.inf)

    # Absolute pulse amplitude against its long-run level (median of the previous 60 s of detected pulses).
    amp_long = np.full(len(bt), np.nan)
    for i in range(len(bt)):
        lo = np.searchsorted(bt, bt[i] - 60)
        if i - lo >= 10:
            amp_long[i] = amp[i] / np.median(amp[lo:i])
    feats["shape (template r)"] = bshape
    feats["amplitude (BVP units)"] = amp
    feats["amplitude / 60 s median"] = amp_long
    feats["amplitude / recent median"] = amp_ratio
    with np.errstate(divide="ignore"):
        feats["|log2 amplitude ratio|"] = np.abs(np.log2(amp_ratio))
    feats["foot-upstroke dev (rel)"] = np.abs(rise_dev)
    feats["upstroke slope / recent"] = slope_ratio
    feats["ACC 1 s index now (g)"] = acc_now
    feats["ACC 1 s index max over IBI (g)"] = acc_max
    feats["scorer 4 s index (g)"] = mi4[sec]
    feats["s since strong motion"] = np.minimum(since(strong_t, bt), 9999)
    feats["s since mild motion"] = np.minimum(since(mild_t, bt), 9999)
    feats["run position"] = run_positions(breason).astype(float)
    feats["|ibi / median - 1|"] = np.abs(ibi_vs_med)
    feats["|ibi / previous - 1|"] = np.abs(ibi_vs_prev)
    feats["ibi (s)"] = bibi

    if a.around:
        names = ["shape (template r)", "amplitude / recent median", "foot-upstroke dev (rel)",
                 "upstroke slope / recent",
                 "ACC 1 s index now (g)", "ACC 1 s index max over IBI (g)", "scorer 4 s index (g)",
                 "s since strong motion"]
        print("t ibi reason ref | shape amp rise slope acc1 accmax acc4 sinceStrong")
        for t0 in a.around:
            print(f"--- {t0}  reference rows near: " + " ".join(
                f"{t:.3f}/{v:.3f}" for t, v in zip(ref_t, ref_ibi) if abs(t - t0) < 3))
            for i in np.flatnonzero(np.abs(bt - t0) < 3):
                print(f"  {bt[i]:9.3f} {bibi[i]:6.3f} {breason[i]:12s} {'R' if at_ref[i] else ' '} | " +
                      " ".join(f"{feats[k][i]:6.2f}" for k in names))
        return
    sel = emitted & ((~in_motion) if a.still_time else (in_motion | a.all_time))
    ref = sel & at_ref
    non = sel & ~at_ref
    print(f"emissions analysed: {sel.sum()} ({ref.sum()} at reference rows, {non.sum()} not); "
          f"motion time {motion_min:.1f} min; rate in motion time {sel.sum() / motion_min:.2f} /min")
    print(f"\n{'feature':34s} {'at reference: q10 q25 q50 q75 q90':>44s}   "
          f"{'not in reference: q10 q25 q50 q75 q90':>44s}")
    for name, f in feats.items():
        def q(m):
            v = f[m & np.isfinite(f)]
            return " ".join(f"{x:8.3f}" for x in np.quantile(v, [0.1, 0.25, 0.5, 0.75, 0.9])) if len(v) else "-"
        print(f"{name:34s} {q(ref):>44s}   {q(non):>44s}")

    print("\ngates (drop an emission when the feature is beyond x): removed at reference / removed not in reference")
    gates = [
        ("shape (template r)", "<", [0.6, 0.7, 0.8, 0.85, 0.9, 0.95]),
        ("|log2 amplitude ratio|", ">", [0.5, 0.75, 1.0, 1.5]),
        ("foot-upstroke dev (rel)", ">", [0.15, 0.25, 0.35]),
        ("upstroke slope / recent", "<", [0.5, 0.7, 0.85]),
        ("ACC 1 s index now (g)", ">", [0.06, 0.1, 0.15, 0.2, 0.3]),
        ("ACC 1 s index max over IBI (g)", ">", [0.1, 0.15, 0.2, 0.3]),
        ("s since strong motion", "<", [1, 2, 3, 5, 8, 12, 20]),
        ("s since mild motion", "<", [0.5, 1, 2, 3]),
        ("run position", "<", [5, 6, 8, 10]),
        ("|ibi / median - 1|", ">", [0.05, 0.08, 0.1, 0.15]),
        ("|ibi / previous - 1|", ">", [0.05, 0.08, 0.1, 0.15]),
    ]
    for name, op, xs in gates:
        f = feats[name]
        parts = []
        for x in xs:
            drop = (f < x) if op == "<" else (f > x)
            drop &= np.isfinite(f)
            parts.append(f"{x:g}: {(ref & drop).sum()}/{(non & drop).sum()}")
        print(f"  {name} {op} x   " + "   ".join(parts))


if __name__ == "__main__":
    main()
