#!/usr/bin/env python3
"""Prints the Markdown tables of the IBI benchmark from run.sh's outputs (real recording and synthetic truth)."""
import argparse
import glob
import importlib.util
import json
import os

import warnings

import numpy as np

warnings.filterwarnings("ignore")

p = argparse.ArgumentParser()
p.add_argument("--out", required=True)
p.add_argument("--eval", required=True)
p.add_argument("--sets", default="", help="names of the other real sets scored under OUT/sets/ (whitespace-separated)")
a = p.parse_args()
spec = importlib.util.spec_from_file_location("eval_ibi", a.eval)
ev = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ev)

real = json.load(open(f"{a.out}/real/scores.json"))
print("### Real E4 recording (e4-msr2023, 61 min), reference = Empatica IBI.csv, 100 ms, lag-corrected\n")
print("| detector | lag ms | coverage | IBI MAE ms | IBIs/min still | IBIs/min motion | implausible in motion "
      "| implausible all | HR MAE vs ref-IBI HR (bpm) |")
print("|---|---|---|---|---|---|---|---|---|")
for path, r in real.items():
    m = r["matching"]["lagcorr@100ms"]
    g = r["garbage"]
    print(f"| {os.path.basename(path)[:-4]} | {m['lag_ms']} | {m['coverage']} | {m['ibi_mae_ms']} "
          f"| {r['emitted_ibi_per_min_still']} | {r['emitted_ibi_per_min_motion']} | {g['frac_any_motion']} "
          f"| {g['frac_any']} | {r['hr']['mae_vs_refibi_bpm']} |")


def set_rows(name, scores):
    """One row per detector of a real set: the figures issue 18 targets (coverage, precision, F1 at 100 ms)."""
    for path, r in scores.items():
        m = r["matching"]["lagcorr@100ms"]
        yield (f"| {name} | {os.path.basename(path)[:-4]} | {m['lag_ms']} | {m['coverage']} | {m['precision_cov']} "
               f"| {m['f1_cov']} | {m['ibi_mae_ms']} | {r['emitted_ibi_per_min_motion']} "
               f"| {r['garbage']['frac_any_motion']} |")


print("\n### Every real E4 set, reference = Empatica IBI.csv, 100 ms, lag-corrected\n")
print("Coverage = reference rows matched; precision and F1 over detected beats inside the reference's covered windows "
      "(eval_ibi.py `precision_cov`, `f1_cov`); motion = the scorer's 4 s ACC index ≥ 0.05 g.\n")
print("| set | detector | lag ms | coverage | precision | F1 | IBI MAE ms | IBIs/min motion | implausible in motion |")
print("|---|---|---|---|---|---|---|---|---|")
for line in set_rows("e4-msr2023", real):
    print(line)
for name in a.sets.split():
    for line in set_rows(name, json.load(open(f"{a.out}/sets/{name}/scores.json"))):
        print(line)

print("\n### Synthetic truth (bench/ibi/synth.py), every true beat is the reference, 100 ms, lag-corrected\n")
print("Sensitivity/precision/F1 are over detected beats; `emitted` is the fraction of true intervals emitted; "
      "`IBI MAE` over emitted intervals whose both beats match; `motion prec` = emitted intervals inside motion "
      "episodes that are correct (both beats within 100 ms), and how many were emitted there.\n")
print("| scenario | detector | sens | prec | F1 | emitted | IBI MAE ms | motion prec (n emitted / true beats) |")
print("|---|---|---|---|---|---|---|---|")
for d in sorted(glob.glob(f"{a.out}/synth/data/*/")):
    name = os.path.basename(d.rstrip("/"))
    ref_t, ref_ibi = ev.read_events(f"{d}/IBI.csv", ev.read_e4_signal(f"{d}/BVP.csv")[0])
    mot = np.loadtxt(f"{d}/motion.csv", delimiter=",", skiprows=1, ndmin=2)
    for det in ("empalink", "neurokit2", "heartpy"):
        r = ev.load_and_evaluate(f"{d}/BVP.csv", f"{d}/IBI.csv", f"{a.out}/synth/{name}/{det}.csv",
                                 acc=f"{d}/ACC.csv", tols=(0.1,))
        m = r["matching"]["lagcorr@100ms"]
        det_t, det_ibi = ev.read_events(f"{a.out}/synth/{name}/{det}.csv", ev.read_e4_signal(f"{d}/BVP.csv")[0])
        lag = m["lag_ms"] / 1000
        em = np.isfinite(det_ibi)
        mp = ""
        if len(mot):
            inm = np.zeros(len(det_t), bool)
            truth_in = 0
            for s, e in mot:
                inm |= (det_t - lag >= s) & (det_t - det_ibi - lag < e)
                truth_in += np.sum((ref_t >= s) & (ref_t < e))
            sel = em & inm
            ok = 0
            for t, v in zip(det_t[sel] - lag, det_ibi[sel]):
                ok += np.min(np.abs(ref_t - t)) <= 0.1 and np.min(np.abs(ref_t - (t - v))) <= 0.1
            mp = f"{ok / max(sel.sum(), 1):.3f} ({sel.sum()} / {truth_in})"
        print(f"| {name} | {det} | {m['sens_cov']} | {m['precision_cov']} | {m['f1_cov']} "
              f"| {r['n_emitted_ibi'] / max(len(ref_t), 1):.3f} | {m['ibi_mae_ms']} | {mp} |")
