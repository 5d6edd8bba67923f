"""Reading empalink-sim's ward truth (`--truth DIR` -> DIR/ward.csv, Docs/simulator.md "Ward truth").

`links` turns the rows into each wristband's link intervals per board, `overlaps` finds two boards connected to one
wristband at once (the fleet's "never two boards" check, from the simulator's side), `connected_seconds` the time a
wristband was connected to any board (coverage), `contended` the Connects a board made while another board held the
wristband (`refused` rows, `connected to B`).
"""
import csv


def read(path):
    with open(path) as handle:
        return list(csv.DictReader(handle))


def links(rows, end=None):
    """{serial: [(board, start_t, end_t)]} in simulator seconds; a link still up at the end closes at `end` (or the
    last row's time)."""
    last = end if end is not None else max((float(r["t"]) for r in rows), default=0.0)
    open_links, out = {}, {}
    for row in rows:
        serial, board, t = row["serial"], row["board"], float(row["t"])
        if not serial:
            continue
        if row["event"] == "connect":
            open_links[(serial, board)] = t
        elif row["event"] == "disconnect" and (serial, board) in open_links:
            out.setdefault(serial, []).append((board, open_links.pop((serial, board)), t))
    for (serial, board), start in open_links.items():
        out.setdefault(serial, []).append((board, start, last))
    for intervals in out.values():
        intervals.sort(key=lambda i: i[1])
    return out


def overlaps(rows, end=None):
    """Every pair of links of one wristband to two different boards that overlap in time."""
    found = []
    for serial, intervals in links(rows, end).items():
        for i, (board, start, stop) in enumerate(intervals):
            for other, other_start, other_stop in intervals[i + 1:]:
                if other != board and other_start < stop and start < other_stop:
                    found.append((serial, (board, start, stop), (other, other_start, other_stop)))
    return found


def connected_seconds(rows, serial, start=0.0, end=None):
    """Seconds of [start, end] during which `serial` was connected to some board."""
    intervals = sorted((max(s, start), min(e, end if end is not None else e))
                       for _, s, e in links(rows, end).get(serial, []))
    total, reach = 0.0, start
    for s, e in intervals:
        s = max(s, reach)
        if e > s:
            total += e - s
            reach = e
    return total


def contended(rows):
    """Every `refused` row whose reason is another board's link (`connected to B`): a board tried to connect a
    wristband while another board held it. The simulator keeps one link per wristband by construction, so this is
    how "never two boards at once" shows that no board even tried (the fleet's rule 1, E4s take one central)."""
    return [r for r in rows if r["event"] == "refused" and r["reason"].startswith("connected to")]


def refused(rows):
    """Every `refused` row (another board's link, out of range, radio off), for reports."""
    return [r for r in rows if r["event"] == "refused"]
