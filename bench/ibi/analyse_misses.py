#!/usr/bin/env python3
"""Why does our engine miss Empatica's IBIs? Explains every reference row we do not cover on a real recording.

    analyse_misses.py --beats BEATS.csv [--data ../shared/data/e4-msr2023] [--eval ../shared/tools/eval_ibi.py]

BEATS.csv is `empalinkctl ibi --beats` output (every detected beat: t,ibi,reason,shape). Coverage is scored as
eval_ibi.py does it (end beat of each reference row matched one-to-one, 100 ms, lag 0 — our fiducial is
Empatica's), counting only the beats whose interval we emitted. For each uncovered reference row it says why:

- `end not detected`: no detected beat within 100 ms of the row's end beat (`off 100-250 ms` if the nearest
  detected beat is a bit further away);
- `suppressed: REASON`: a beat was detected there but its interval withheld (the engine's ``BeatSuppression``),
  with whether our interval started at the reference's start beat (`same start`) or not (a missed or extra beat
  in between, or the start beat not detected);
- `emitted, taken by another row`: the one-to-one matching gave our beat to a neighbouring row.

Then the motion-time budget in the scorer's own terms (its 4 s ACC index ≥ 0.05 g): the reference's rate, ours,
and how many of ours the reference does not have; and what emitting the `unconfirmed` beats of runs that were
confirmed too late (past the engine's latency budget) would do: coverage gained, emissions added in motion time, the
delay it would take.
"""
import argparse
import collections
import importlib.util
import os

import numpy as np

from beats import HELD, load_beats

TOL = 0.1


def nearest(sorted_t, x):
    """Index of the element of sorted_t nearest to x, and its distance."""
    k = np.searchsorted(sorted_t, x)
    best, dist = -1, np.inf
    for j in (k - 1, k):
        if 0 <= j < len(sorted_t) and abs(sorted_t[j] - x) < dist:
            best, dist = j, abs(sorted_t[j] - x)
    return best, dist


def run_positions(reason):
    """For each beat, the 1-based position in its run of beats that passed every check (emitted or unconfirmed),
    and whether that run was eventually confirmed (reached an emitted beat)."""
    pos = np.zeros(len(reason), int)
    confirmed = np.zeros(len(reason), bool)
    start = None
    for i, r in enumerate(list(reason) + ["end"]):
        if r == "emitted" or r in HELD:
            if start is None:
                start = i
            pos[i] = i - start + 1
        else:
            if start is not None:
                run = range(start, i)
                ok = any(reason[j] == "emitted" for j in run)
                for j in run:
                    confirmed[j] = ok
            start = None
    return pos, confirmed


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--beats", required=True)
    p.add_argument("--data", default="../shared/data/e4-msr2023")
    p.add_argument("--eval", default="../shared/tools/eval_ibi.py")
    a = p.parse_args()
    spec = importlib.util.spec_from_file_location("eval_ibi", a.eval)
    ev = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ev)

    start, fs, bvp = ev.read_e4_signal(os.path.join(a.data, "BVP.csv"))
    duration = bvp.shape[0] / fs
    ref_t, ref_ibi = ev.read_events(os.path.join(a.data, "IBI.csv"), start)
    a_start, a_fs, acc = ev.read_e4_signal(os.path.join(a.data, "ACC.csv"))
    shift = int(round((a_start - start) * a_fs))
    acc = acc / 64.0
    acc = np.r_[np.full((shift, 3), np.nan), acc] if shift > 0 else acc[-shift:]
    mi = ev.motion_index(acc, a_fs, int(np.ceil(duration)))
    motion_sec = mi >= 0.05
    motion_min = motion_sec.sum() / 60
    still_min = (~motion_sec).sum() / 60

    def in_motion(t):
        return motion_sec[np.clip(np.floor(t).astype(int), 0, len(mi) - 1)]

    bt, bibi, breason, bshape = load_beats(a.beats)
    emitted = breason == "emitted"
    et = bt[emitted]
    r2d, d2r = ev.match(ref_t, et, TOL)
    covered = r2d >= 0
    needed = int(np.ceil(0.95 * len(ref_t)))
    short = needed - int(covered.sum())
    print(f"reference rows {len(ref_t)}, covered {covered.sum()} ({covered.mean():.3f}); "
          f"0.95 needs {needed} ({f'{short} short' if short > 0 else f'{-short} to spare'})")

    pos, confirmed = run_positions(breason)
    cats = collections.Counter()
    detail = collections.defaultdict(list)
    for i in np.flatnonzero(~covered):
        te, ts = ref_t[i], ref_t[i] - ref_ibi[i]
        j, dist = nearest(bt, te)
        mot = "motion" if in_motion(np.array([te]))[0] else "still"
        if dist > TOL:
            cat = "end not detected" + (" (nearest 100-250 ms off)" if dist <= 0.25 else "")
        elif breason[j] == "emitted":
            cat = "emitted, taken by another row"
        else:
            prev = j - 1
            same = prev >= 0 and abs(bt[prev] - ts) <= TOL
            extra = prev >= 0 and bt[prev] > ts + TOL
            how = "same start" if same else ("extra beat between" if extra else "start not detected")
            cat = f"suppressed: {breason[j]} ({how})"
            if breason[j] in HELD:
                cat += f" [run pos {min(pos[j], 4)}{'' if confirmed[j] else ', run never confirmed'}]"
        cats[(cat, mot)] += 1
        detail[cat].append(f"{te:9.3f} ibi {ref_ibi[i]:.3f} {mot} near {dist * 1000:5.0f} ms "
                           f"shape {bshape[j] if j >= 0 else np.nan:.2f}")
    print("\nuncovered reference rows by cause (still / motion time):")
    names = sorted({c for c, _ in cats}, key=lambda c: -(cats[(c, 'still')] + cats[(c, 'motion')]))
    for c in names:
        still, moving = cats[(c, "still")], cats[(c, "motion")]
        print(f"  {still + moving:4d}  ({still:3d} / {moving:3d})  {c}")

    # Reason of the detected beat at each covered/uncovered reference row, and of all beats in motion time.
    print("\nmotion time (scorer: 4 s ACC index >= 0.05 g): "
          f"{motion_min:.1f} min of {motion_min + still_min:.1f}")
    ref_m = in_motion(ref_t)
    em_m = in_motion(et)
    em_in_ref = d2r >= 0
    print(f"  reference rows: {ref_m.sum()} = {ref_m.sum() / motion_min:.2f} /min in motion, "
          f"{(~ref_m).sum() / still_min:.2f} /min still")
    print(f"  our emissions:  {em_m.sum()} = {em_m.sum() / motion_min:.2f} /min in motion "
          f"({(em_m & em_in_ref).sum()} at reference rows, {(em_m & ~em_in_ref).sum()} = "
          f"{(em_m & ~em_in_ref).sum() / motion_min:.2f} /min not in the reference); "
          f"{(~em_m).sum() / still_min:.2f} /min still")
    print(f"  reference rows in motion covered: {(covered & ref_m).sum()} / {ref_m.sum()}; "
          f"still: {(covered & ~ref_m).sum()} / {(~ref_m).sum()}")
    cap = 15 * motion_min
    print(f"  the 15 /min cap allows {cap:.0f} emissions in motion time; covering every reference row there takes "
          f"{ref_m.sum()} of them ({ref_m.sum() / cap:.0%})")

    # Beats detected in motion time, by reason.
    bm = in_motion(bt)
    print("\ndetected beats in motion time by outcome (all / at a reference row end):")
    at_ref = np.zeros(len(bt), bool)
    rr2b, _ = ev.match(ref_t, bt, TOL)
    at_ref[rr2b[rr2b >= 0]] = True
    for r, n in collections.Counter(breason[bm]).most_common():
        print(f"  {r:14s} {n:5d}  {(bm & at_ref & (breason == r)).sum():4d}")

    # Position in run of unconfirmed beats and of emitted ones, at reference rows and elsewhere.
    print("\nrun position of beats that passed every check in motion time (while the wrist moves 1..3 are held for "
          "confirmation, 4+ emitted):")
    for label, sel in (("at reference rows", bm & at_ref), ("not in reference", bm & ~at_ref)):
        c = collections.Counter(np.minimum(pos[sel & (pos > 0)], 6))
        print(f"  {label:18s} " + "  ".join(f"{k}{'+' if k == 6 else ''}:{c[k]}" for k in range(1, 7)))

    # What-if: emit the withheld (`unconfirmed`) beats of runs that were confirmed later, past the latency budget.
    retro = np.isin(breason, HELD) & confirmed
    rt = np.sort(np.r_[et, bt[retro]])
    r2, d2 = ev.match(ref_t, rt, TOL)
    delay = []
    for i in np.flatnonzero(retro):
        k = i + 1
        while k < len(bt) and breason[k] != "emitted":
            k += 1
        delay.append(bt[k] - bt[i])
    delay = np.array(delay)
    print(f"\nwhat if the withheld unconfirmed beats of confirmed runs were emitted whenever their run is confirmed: "
          f"{retro.sum()} more ({in_motion(bt[retro]).sum() / motion_min:.2f} /min more in motion), coverage "
          f"{(r2 >= 0).mean():.3f}, motion rate {in_motion(rt).sum() / motion_min:.2f} /min; delay from foot to "
          f"confirming foot median {np.median(delay) if len(delay) else 0:.2f} s, "
          f"{np.mean(delay <= 0.7) if len(delay) else 0:.0%} within 0.7 s")
    for k in (2, 3):
        held = np.isin(breason, HELD) & (pos >= k) & confirmed
        alt = np.sort(np.r_[et, bt[held]])
        r3, _ = ev.match(ref_t, alt, TOL)
        print(f"  emitting from run position {k} on instead of 4: coverage {(r3 >= 0).mean():.3f}, "
              f"motion rate {in_motion(alt).sum() / motion_min:.2f} /min")
    for k in (2, 3):
        held = np.isin(breason, HELD) & (pos >= k)
        alt = np.sort(np.r_[et, bt[held]])
        r3, _ = ev.match(ref_t, alt, TOL)
        print(f"  emitting from run position {k} (confirmed or not): coverage {(r3 >= 0).mean():.3f}, "
              f"motion rate {in_motion(alt).sum() / motion_min:.2f} /min")

    if os.environ.get("DETAIL"):
        for c, rows in detail.items():
            print(f"\n{c}:")
            for r in rows:
                print("   ", r)


if __name__ == "__main__":
    main()
