"""The figures of `make test-fleet`, computed from the simulator's ward truth (`ward.csv`), the scenario's routes
and radio model, and the rig's own record of when each board's agent ran. Pure functions, tested on hand-made rows
in test_fleet_figures.py; definitions in Docs/fleet.md, "`make test-fleet`".

Times are simulator seconds (`t` of ward.csv). A board is *alive* while its agent process runs and its radio is on.
A wristband is *coverable* at t when some alive board hears it noise-free (RSSI without the noise term at least
`floor_dbm`) and has a free slot (fewer links than its `max_connections`, or the link is this wristband's). It is
*due* at t when it has been coverable without a break over [t - ALLOWANCE, t] and none of its links ended in that
window: ALLOWANCE (15 s, the pickup goal) is the time the protocol may take to (re)connect a wristband that became
coverable or lost its link — grace after a broker connection (10 s), the stagger, the settle (2 s), the connect,
or the 10 s lost-link release. Coverage = connected time / due time, per wristband.
"""
import math

import wardtruth

ALLOWANCE = 15.0
STEP = 0.1


def position(route, t):
    """(x, y) on a route of waypoints [t, x, y]: linear between them, held before the first and after the last."""
    if not route:
        return 0.0, 0.0
    if t <= route[0][0]:
        return route[0][1], route[0][2]
    for (t0, x0, y0), (t1, x1, y1) in zip(route, route[1:]):
        if t0 <= t <= t1:
            if t1 == t0:
                return x1, y1
            f = (t - t0) / (t1 - t0)
            return x0 + f * (x1 - x0), y0 + f * (y1 - y0)
    return route[-1][1], route[-1][2]


def rssi0(radio, board_xy, band_xy):
    """Noise-free RSSI (Docs/simulator.md, "Radio model")."""
    d = max(math.dist(board_xy, band_xy), 0.1)
    return radio["tx_power_dbm"] - 10 * radio["path_loss_exponent"] * math.log10(d)


def parse_ward(scenario):
    """(radio, {board: (x, y)}, {device index: route}) from a parsed ward scenario (tomllib)."""
    ward = scenario.get("ward", {})
    radio = {"tx_power_dbm": ward.get("tx_power_dbm", -59), "path_loss_exponent": ward.get("path_loss_exponent", 3.0),
             "floor_dbm": ward.get("floor_dbm", -90), "link_floor_dbm": ward.get("link_floor_dbm", -96)}
    boards = {b["name"]: (b["x"], b["y"]) for b in ward["board"]}
    routes = {d["index"]: [tuple(w) for w in d.get("route", [])] for d in scenario.get("device", [])}
    return radio, boards, routes


def inside(intervals, t):
    return any(start <= t < stop for start, stop in intervals)


def alive_intervals(runs, rows, end):
    """{board: [(start, stop)]}: the agent's runs (rig record, sim seconds) minus the board's radio-off time."""
    deaf = {}
    for row in rows:
        if not row["serial"] and row["event"] in ("radio_off", "radio_on"):
            deaf.setdefault(row["board"], []).append((row["event"], float(row["t"])))
    out = {}
    for board, spans in runs.items():
        off, since = [], None
        for event, t in deaf.get(board, []):
            if event == "radio_off" and since is None:
                since = t
            elif event == "radio_on" and since is not None:
                off.append((since, t))
                since = None
        if since is not None:
            off.append((since, end))
        out[board] = [(s, e if e is not None else end) for s, e in spans]
        out[board] = [span for span in out[board] if span[1] > span[0]]
        out[board] = subtract(out[board], off)
    return out


def subtract(spans, holes):
    result = []
    for start, stop in spans:
        pieces = [(start, stop)]
        for h0, h1 in holes:
            pieces = [p for s, e in pieces for p in ((s, min(e, h0)), (max(s, h1), e)) if p[1] > p[0]]
        result += pieces
    return result


def coverage(rows, radio, boards, routes, serials, runs, capacity, start, end):
    """{serial: (connected_due_s, due_s)} for the wristbands `serials` ({device index: serial})."""
    links = wardtruth.links(rows, end)
    alive = alive_intervals(runs, rows, end)
    by_board = {}
    for serial, intervals in links.items():
        for board, s, e in intervals:
            by_board.setdefault(board, []).append((s, e, serial))
    out = {}
    for index, serial in serials.items():
        mine = links.get(serial, [])
        ends = [e for _, _, e in mine if e < end]
        covered_since = None
        connected_due = due = 0.0
        t = start
        while t < end:
            xy = position(routes.get(index, []), t)
            holder = next((b for b, s, e in mine if s <= t < e), None)
            coverable = False
            for board, board_xy in boards.items():
                if not inside(alive.get(board, []), t) or rssi0(radio, board_xy, xy) < radio["floor_dbm"]:
                    continue
                used = sum(1 for s, e, _ in by_board.get(board, []) if s <= t < e)
                if holder == board or used < capacity.get(board, 1):
                    coverable = True
                    break
            if not coverable:
                covered_since = None
            elif covered_since is None:
                covered_since = t
            if (covered_since is not None and t - covered_since >= ALLOWANCE
                    and not any(t - ALLOWANCE <= e <= t for e in ends)):
                due += STEP
                if holder is not None:
                    connected_due += STEP
            t += STEP
        out[serial] = (connected_due, due)
    return out


def handover_gaps(rows, end):
    """[(serial, from board, to board, lost at, gap s)] for every link followed by one on another board."""
    gaps = []
    for serial, intervals in wardtruth.links(rows, end).items():
        for (board, _, stop), (other, start, _) in zip(intervals, intervals[1:]):
            if other != board and stop < end:
                gaps.append((serial, board, other, stop, start - stop))
    return gaps


def pickups(rows, board, at, end, window=1.0):
    """{serial: seconds from `at` to its next link on another board, or None}: the wristbands whose link on `board`
    ended within `window` s of `at` (a dead board's)."""
    out = {}
    for serial, intervals in wardtruth.links(rows, end).items():
        for i, (b, _, stop) in enumerate(intervals):
            if b == board and abs(stop - at) <= window:
                later = [s for other, s, _ in intervals[i + 1:] if other != board]
                out[serial] = (later[0] - at) if later else None
    return out
