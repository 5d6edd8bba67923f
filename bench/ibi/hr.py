#!/usr/bin/env python3
"""The heart-rate part of make bench-ibi: our 1 Hz HR (empalinkctl ibi --hr), Empatica's own HR.csv, and HR from
NeuroKit2's and HeartPy's beats, on every set, scored by ../shared/tools/score_hr.py; one table.

    hr.py --bin .build/debug --out .build/bench-ibi [--score ../shared/tools/score_hr.py] [--data ../shared/data]
          [--seed S | --seeds 1-8] [--no-e4] [--peers]

--seed S passes through to walk.py (default 1). --seeds A-B (or a list, 1,3,5) runs the walking/running sets once
per seed (OUT/hr/walk-sS/, OUT/hr/sS/<set>/; the E4 sets once), prints one table per seed and a summary: the mean
over seeds of availability, MAE and P90 per set, and offwrist-walk per seed (seconds published, seconds above
confidence 0.3, largest confidence). Peers then run only with --peers. --no-e4 skips the E4 sets.

Sets: e4-msr2023 and e4-stresspredict S01/S06/S08/S33 (reference: Empatica's IBI.csv, 8 s windows -- where
Empatica emitted beats, i.e. mostly still time; Empatica's HR.csv is PPG-derived too and is scored, not used, as a
reference), and the walking/running sets of walk.py (reference: the exact beat truth, HRREF.csv; the stride-* sets swing the
arm at half the step rate, as a real arm does), and the e4m-* sets of e4motion.py (the e4-stresspredict pulses played
faster as a heart beats with effort, walk.py's motion added; reference: Empatica's beats moved with them; not with
--no-e4). Peers' HR is
60 / mean of their IBIs that ended in the last 5 s when they cover >= 2.5 s, for the second 3 s before the window's
end (our beat rule); NeuroKit2 keeps every
peak pair, HeartPy its accepted ones. "offwrist-walk" and "offwrist-stride-run" have no pulse: availability there is what was published
(lower is right), with the largest confidence of ours.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
# Seconds of IBIs the peers' HR averages: the engine's IBIConfiguration.heartRateWindow.
BEAT_WINDOW = 5.0
# The second a peer's value is for, before the end of its window: the engine's IBIEngine.heartRateDelay.
DELAY = 3.0


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
        m = (t > k + DELAY - BEAT_WINDOW) & (t <= k + DELAY)
        values.append(60 * m.sum() / ibi[m].sum() if m.sum() and ibi[m].sum() >= BEAT_WINDOW / 2 else 0.0)
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


def parse_seeds(text):
    seeds = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-")
            seeds += list(range(int(a), int(b) + 1))
        elif part:
            seeds.append(int(part))
    return seeds


def run_set(a, name, d, out, peers):
    """Scores ours (and Empatica's HR.csv, and the peers when asked) on one set; rows of the table."""
    os.makedirs(out, exist_ok=True)
    ref = f"{d}/HRREF.csv" if os.path.exists(f"{d}/HRREF.csv") else f"{d}/IBI.csv"
    bvp = f"{d}/BVP.csv"
    start = bvp_start(bvp)
    n = sum(1 for _ in open(bvp)) - 2
    duration = n / 64
    spectral, confidence = ours(a.bin, d, out)
    rows = [(name, "empalink", score(a.score, f"{out}/empalink-hr.csv", ref, bvp), f"{spectral:.2f}",
             f"{confidence:.2f}")]
    if os.path.exists(f"{d}/HR.csv"):
        rows.append((name, "Empatica HR.csv", score(a.score, f"{d}/HR.csv", ref, bvp), "", ""))
    if peers:
        subprocess.run([sys.executable, f"{HERE}/peers.py", "--bvp", bvp, "--outdir", out], check=True)
        for peer in ("neurokit2", "heartpy"):
            peer_hr(f"{out}/{peer}.csv", start, duration, f"{out}/{peer}-hr.csv")
            rows.append((name, peer, score(a.score, f"{out}/{peer}-hr.csv", ref, bvp), "", ""))
    return rows


def e4_motion(a, seed, sets_dir, out_dir, peers):
    """The e4-stresspredict pulses with walk.py's motion (e4motion.py), scored against Empatica's moved beats."""
    subprocess.run([sys.executable, f"{HERE}/e4motion.py", "--outdir", sets_dir, "--seed", str(seed),
                    "--data", a.data], check=True)
    rows = []
    for n in sorted(os.listdir(sets_dir)):
        rows += run_set(a, f"e4m-{n}", f"{sets_dir}/{n}", f"{out_dir}/e4m-{n}", peers)
    return rows


def offwrist(out):
    """Seconds published, seconds above confidence 0.3, largest confidence of ours on a no-pulse set."""
    detail = np.genfromtxt(f"{out}/empalink-hr-detail.csv", delimiter=",", names=True, dtype=None, encoding=None,
                           ndmin=1)
    if not detail.size:
        return 0, 0, 0.0
    c = np.atleast_1d(detail["confidence"]).astype(float)
    return int(c.size), int(np.sum(c > 0.3)), float(c.max())


def print_table(rows):
    print("| set | source | seconds | availability | MAE bpm | P90 bpm | AAE all bpm | spectral share | max confidence |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, who, s, share, conf in rows:
        print(f"| {name} | {who} | {s['seconds']} | {s['availability']} | {s['mae_bpm']} | {s['p90_bpm']} | "
              f"{s['aae_all_bpm']} | {share} | {conf} |")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--score", default="../shared/tools/score_hr.py")
    p.add_argument("--data", default="../shared/data")
    p.add_argument("--peers", action="store_true", help="also NeuroKit2/HeartPy on the E4 sets (slow)")
    p.add_argument("--seed", type=int, default=1, help="walk.py's seed")
    p.add_argument("--seeds", help="several walk.py seeds, e.g. 1-8: a table per seed and a summary")
    p.add_argument("--no-e4", action="store_true", help="only the walking/running sets")
    a = p.parse_args()
    rows = []
    if not a.no_e4:
        sets = [("e4-msr2023", f"{a.data}/e4-msr2023")]
        sets += [(f"stresspredict-{s}", f"{a.data}/e4-stresspredict/{s}") for s in ("S01", "S06", "S08", "S33")]
        for name, d in sets:
            rows += run_set(a, name, d, f"{a.out}/hr/{name}", a.peers)
    if not a.seeds:
        walk_dir = f"{a.out}/hr/walk"
        subprocess.run([sys.executable, f"{HERE}/walk.py", "--outdir", walk_dir, "--seed", str(a.seed)], check=True)
        for n in sorted(os.listdir(walk_dir)):
            rows += run_set(a, n, f"{walk_dir}/{n}", f"{a.out}/hr/{n}", True)
        if not a.no_e4:
            rows += e4_motion(a, a.seed, f"{a.out}/hr/e4motion", f"{a.out}/hr", True)
        print_table(rows)
        with open(f"{a.out}/hr/scores.json", "w") as f:
            json.dump([{"set": r[0], "source": r[1], **r[2]} for r in rows], f, indent=1)
        return
    seeds = parse_seeds(a.seeds)
    per_seed = {}
    off = {}
    for seed in seeds:
        walk_dir = f"{a.out}/hr/walk-s{seed}"
        subprocess.run([sys.executable, f"{HERE}/walk.py", "--outdir", walk_dir, "--seed", str(seed)], check=True)
        seed_rows = []
        for n in sorted(os.listdir(walk_dir)):
            out = f"{a.out}/hr/s{seed}/{n}"
            seed_rows += run_set(a, n, f"{walk_dir}/{n}", out, a.peers)
            if not os.path.exists(f"{walk_dir}/{n}/IBI.csv"):
                off[(n, seed)] = offwrist(out)
        if not a.no_e4:
            seed_rows += e4_motion(a, seed, f"{a.out}/hr/e4motion-s{seed}", f"{a.out}/hr/s{seed}", a.peers)
        per_seed[seed] = seed_rows
    if rows:
        print("E4 sets\n")
        print_table(rows)
    for seed in seeds:
        print(f"\nseed {seed}\n")
        print_table(per_seed[seed])
    print(f"\nmean over seeds {a.seeds} (empalink; MAE/P90 over the seeds that published)\n")
    print("| set | availability | MAE bpm | P90 bpm | worst availability | worst MAE | worst P90 |")
    print("|---|---|---|---|---|---|---|")
    names = [r[0] for r in per_seed[seeds[0]] if r[1] == "empalink"]
    summary = {}
    for name in names:
        s = [r[2] for seed in seeds for r in per_seed[seed] if r[0] == name and r[1] == "empalink"]
        av = [x["availability"] for x in s]
        mae = [x["mae_bpm"] for x in s if x["mae_bpm"] is not None]
        p90 = [x["p90_bpm"] for x in s if x["p90_bpm"] is not None]
        fmt = lambda v, f: f"{f(v):.2f}" if v else "-"
        summary[name] = {"availability": float(np.mean(av)), "mae_bpm": float(np.mean(mae)) if mae else None,
                         "p90_bpm": float(np.mean(p90)) if p90 else None}
        print(f"| {name} | {np.mean(av):.3f} | {fmt(mae, np.mean)} | {fmt(p90, np.mean)} | {min(av):.3f} | "
              f"{fmt(mae, max)} | {fmt(p90, max)} |")
    if off:
        print("\nno-pulse sets per seed: seconds published / seconds above confidence 0.3 / largest confidence\n")
        print("| set | " + " | ".join(f"seed {s}" for s in seeds) + " |")
        print("|---|" + "---|" * len(seeds))
        for name in sorted({k[0] for k in off}):
            cells = [off[(name, s)] for s in seeds]
            print(f"| {name} | " + " | ".join(f"{c[0]} / {c[1]} / {c[2]:.2f}" for c in cells) + " |")
    with open(f"{a.out}/hr/scores-seeds.json", "w") as f:
        json.dump({"e4": [{"set": r[0], "source": r[1], **r[2]} for r in rows],
                   "seeds": {str(s): [{"set": r[0], "source": r[1], **r[2]} for r in per_seed[s]] for s in seeds},
                   "mean": summary,
                   "offwrist": {f"{k[0]}-s{k[1]}": v for k, v in off.items()}}, f, indent=1)


if __name__ == "__main__":
    main()
