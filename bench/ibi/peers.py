#!/usr/bin/env python3
"""Run the open-source peers on an E4 BVP export and write their beats in eval_ibi.py's detections format.

    peers.py --bvp BVP.csv --outdir DIR      -> DIR/neurokit2.csv, DIR/heartpy.csv

NeuroKit2: ppg_clean + ppg_findpeaks(method="msptdfast"); every consecutive pair of peaks is an emitted IBI
(NeuroKit2 has no beat rejection). HeartPy: hp.process per 60 s segment (it is a batch tool); an IBI is emitted
when both its peaks are accepted (binary_peaklist) and they are consecutive.
Both return systolic peaks; eval_ibi.py's lag correction aligns them with the reference's feet.
"""
import argparse
import os
import warnings

import numpy as np

warnings.filterwarnings("ignore")


def read_bvp(path):
    with open(path) as f:
        start = float(f.readline().split(",")[0])
        fs = float(f.readline().split(",")[0])
    return start, fs, np.loadtxt(path, skiprows=2, ndmin=1)


def write(path, t, ibi):
    with open(path, "w") as f:
        f.write("t,ibi\n")
        for a, b in zip(t, ibi):
            f.write(f"{a:.6f},{'' if not np.isfinite(b) else f'{b:.6f}'}\n")


def neurokit(x, fs):
    import neurokit2 as nk
    clean = nk.ppg_clean(x, sampling_rate=fs)
    info = nk.ppg_findpeaks(clean, sampling_rate=fs, method="msptdfast")
    t = np.asarray(info["PPG_Peaks"], float) / fs
    return t, np.r_[np.nan, np.diff(t)]


def heartpy(x, fs, seg=60.0):
    import heartpy as hp
    ts, ibis = [], []
    n = int(seg * fs)
    for s in range(0, len(x), n):
        chunk = x[s:s + n]
        if len(chunk) < 10 * fs:
            continue
        try:
            wd, _ = hp.process(hp.filter_signal(chunk, [0.7, 3.5], fs, order=3, filtertype="bandpass"), fs)
        except Exception:  # HeartPy raises on segments it cannot analyse: no beats there
            continue
        peaks = np.asarray(wd["peaklist"], int)
        ok = np.asarray(wd["binary_peaklist"], int)
        t = (s + peaks) / fs
        ibi = np.full(len(t), np.nan)
        for k in range(1, len(t)):
            if ok[k] and ok[k - 1]:
                ibi[k] = t[k] - t[k - 1]
        ts.extend(t)
        ibis.extend(ibi)
    return np.asarray(ts), np.asarray(ibis)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bvp", required=True)
    p.add_argument("--outdir", required=True)
    a = p.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    _, fs, x = read_bvp(a.bvp)
    fs = int(round(fs))  # NeuroKit2 needs an integer rate
    for name, fn in (("neurokit2", neurokit), ("heartpy", heartpy)):
        t, ibi = fn(x, fs)
        write(os.path.join(a.outdir, f"{name}.csv"), t, ibi)


if __name__ == "__main__":
    main()
