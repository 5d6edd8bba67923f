"""Reading `empalinkctl ibi --beats` output, shared by the IBI analysis scripts."""
import numpy as np

# Reasons of a beat that passed every check but was held for its run's confirmation and withheld when the run was not
# confirmed within the latency budget: `motion` is the same in strong motion (the engine withholds nothing outright
# for motion any more).
HELD = ("unconfirmed", "motion")


def load_beats(path):
    t, ibi, reason, shape = [], [], [], []
    with open(path) as f:
        next(f)
        for line in f:
            c = line.rstrip("\n").split(",")
            t.append(float(c[0]))
            ibi.append(float(c[1]) if c[1] else np.nan)
            reason.append(c[2] or "emitted")
            shape.append(float(c[3]) if len(c) > 3 and c[3] else np.nan)
    return np.array(t), np.array(ibi), np.array(reason), np.array(shape)
