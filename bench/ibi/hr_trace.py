#!/usr/bin/env python3
"""Second by second, one walking/running set: the truth (HRREF.csv), what we published (hr-detail), and where the
gaps and errors > 5 bpm are, as runs.   hr_trace.py SETDIR HRDETAIL.csv [--all]"""
import sys
import numpy as np

d, detail = sys.argv[1], sys.argv[2]
start = float(open(f"{d}/BVP.csv").readline().split(",")[0])
ref = np.loadtxt(f"{d}/HRREF.csv", delimiter=",", skiprows=1, ndmin=2)
pub = {}
for line in open(detail).readlines()[1:]:
    t, bpm, conf, src = line.strip().split(",")
    pub[int(round(float(t) - (start if float(t) > 1e8 else 0)))] = (float(bpm), float(conf), src)
state, since = None, None
for t, r in ref:
    t = int(t)
    p = pub.get(t)
    s = "gap" if p is None else ("off" if abs(p[0] - r) > 5 else "ok")
    if "--all" in sys.argv:
        print(t, f"{r:.1f}", p)
    if s != state:
        if state and state != "ok":
            print(f"{state} {since}-{t - 1} ({t - since} s)")
        state, since = s, t
if state != "ok":
    print(f"{state} {since}-end")
