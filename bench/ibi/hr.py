#!/usr/bin/env python3
"""The heart-rate part of make bench-ibi: our 1 Hz HR (empalinkctl ibi --hr), Empatica's own HR.csv, and HR from
NeuroKit2's and HeartPy's beats, on every set, scored by ../shared/tools/score_hr.py; one table.

    hr.py --bin .build/debug --out .build/bench-ibi [--score ../shared/tools/score_hr.py] [--data ../shared/data]

Sets: e4-msr2023 and e4-stresspredict S01/S06/S08/S33 (reference: Empatica's IBI.csv, 8 s windows -- where
Empatica emitted beats, i.e. mostly still time; Empatica's HR.csv is PPG-derived too and is scored, not used, as a
reference), and the walking/running sets of walk.py (reference: the exact beat truth, HRREF.csv). Peers' HR is
60 / mean of their IBIs that ended in the last 10 s when they cover >= 5 s (our beat rule); NeuroKit2 keeps every
peak pair, HeartPy its accepted ones. "offwrist-walk" has no pulse: availability there is what was published
(lower is right), with the largest confidence of ours.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def bvp_start(path):
    with open(path) as f:
        return float(f.readline().split(",")[0])


def write_hr(path, start, seconds, bpm):
    with open(path, "w") as f:
        f.write(f"{start:.6f}\n1.000000\n" + "".join(f"{v:.2f}\n" for v in bpm))


def peer_hr(beats_csv, start, duration, out):
    """1 Hz HR from a peer's beats (t,ibi) with our beat rule."""
    d = np.genfromtxt(beats_csv, delimiter=",", skip_header=1, ndmin=2)
    if d.size == 0:
        write_hr(out, start, 0, [])
        return
    t, ibi = d[:, 0], d[:, 1]
    ok = np.isfinite(ibi) & (ibi >= 0.28) & (ibi <= 2.0)
    t, ibi = t[ok], ibi[ok]
    values = []
    for k in range(int(duration)):
        m = (t > k - 10) & (t <= k)
        values.append(60 * m.sum() / ibi[m].sum() if m.sum() and ibi[m].sum() >= 5 else 0.0)
    write_hr(out, start, duration, values)


def score(scorer, hr, ref, bvp):
    args = [sys.executable, scorer, hr, ref] + ([bvp] if ref.endswith("HRREF.csv") else [])
    return json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout)


def ours(binary, d, out):
    args = [f"{binary}/empalinkctl", "ibi", "--bvp", f"{d}/BVP.csv", "--out", f"{out}/empalink-ibi.csv",
            "--hr", f"{out}/empalink-hr.csv", "--hr-detail", f"{out}/empalink-hr-detail.csv"]
    if os.path.exists(f"{d}/ACC.csv"):
        args += ["--acc", f"{d}/ACC.csv"]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    detail = np.genfromtxt(f"{out}/empalink-hr-detail.csv", delimiter=",", names=True, dtype=None, encoding=None,
                           ndmin=1)
    spectral = float(np.mean(detail["source"] == "spectral")) if detail.size else 0.0
    confidence = float(np.max(detail["confidence"])) if detail.size else 0.0
    return spectral, confidence


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--score", default="../shared/tools/score_hr.py")
    p.add_argument("--data", default="../shared/data")
    p.add_argument("--peers", action="store_true", help="also NeuroKit2/HeartPy on the E4 sets (slow)")
    a = p.parse_args()
    sets = [("e4-msr2023", f"{a.data}/e4-msr2023")]
    sets += [(f"stresspredict-{s}", f"{a.data}/e4-stresspredict/{s}") for s in ("S01", "S06", "S08", "S33")]
    walk_dir = f"{a.out}/hr/walk"
    subprocess.run([sys.executable, f"{HERE}/walk.py", "--outdir", walk_dir], check=True)
    sets += [(n, f"{walk_dir}/{n}") for n in sorted(os.listdir(walk_dir))]
    rows = []
    for name, d in sets:
        out = f"{a.out}/hr/{name}"
        os.makedirs(out, exist_ok=True)
        ref = f"{d}/HRREF.csv" if os.path.exists(f"{d}/HRREF.csv") else f"{d}/IBI.csv"
        bvp = f"{d}/BVP.csv"
        start = bvp_start(bvp)
        n = sum(1 for _ in open(bvp)) - 2
        duration = n / 64
        spectral, confidence = ours(a.bin, d, out)
        rows.append((name, "empalink", score(a.score, f"{out}/empalink-hr.csv", ref, bvp),
                     f"{spectral:.2f}", f"{confidence:.2f}"))
        if os.path.exists(f"{d}/HR.csv"):
            rows.append((name, "Empatica HR.csv", score(a.score, f"{d}/HR.csv", ref, bvp), "", ""))
        if a.peers or d.startswith(walk_dir):
            subprocess.run([sys.executable, f"{HERE}/peers.py", "--bvp", bvp, "--outdir", out], check=True)
            for peer in ("neurokit2", "heartpy"):
                peer_hr(f"{out}/{peer}.csv", start, duration, f"{out}/{peer}-hr.csv")
                rows.append((name, peer, score(a.score, f"{out}/{peer}-hr.csv", ref, bvp), "", ""))
    print("| set | source | seconds | availability | MAE bpm | P90 bpm | AAE all bpm | spectral share | max confidence |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, who, s, share, conf in rows:
        print(f"| {name} | {who} | {s['seconds']} | {s['availability']} | {s['mae_bpm']} | {s['p90_bpm']} | "
              f"{s['aae_all_bpm']} | {share} | {conf} |")
    with open(f"{a.out}/hr/scores.json", "w") as f:
        json.dump([{"set": r[0], "source": r[1], **r[2]} for r in rows], f, indent=1)


if __name__ == "__main__":
    main()
