"""The figures' definitions (fleetfigures.py) on hand-made ward truth: coverage counts only due time, a full board
is no cover, handover gaps and a dead board's pickups are measured from the links."""
import fleetfigures

RADIO = {"tx_power_dbm": -59, "path_loss_exponent": 3.0, "floor_dbm": -90, "link_floor_dbm": -96}


def row(t, board, serial, event, reason=""):
    return {"t": str(t), "wall": str(1e9 + t), "board": board, "serial": serial, "event": event, "reason": reason}


def test_a_wristband_is_due_after_the_allowance_and_counted_while_connected():
    rows = [row(20, "a", "s1", "connect")]
    cover = fleetfigures.coverage(rows, RADIO, {"a": (0, 0)}, {1: [(0, 1, 0)]}, {1: "s1"}, {"a": [(0, None)]},
                                  {"a": 1}, 0, 100)
    connected, due = cover["s1"]
    assert abs(due - 85) < 0.2, "coverable from 0, due from 15 s"
    assert abs(connected - 80) < 0.2, "connected from 20 s"


def test_a_lost_link_restarts_the_allowance_and_a_full_board_is_no_cover():
    rows = [row(0, "a", "s1", "connect"), row(50, "a", "s1", "disconnect", "link loss"), row(60, "a", "s1", "connect"),
            row(0, "a", "s2", "connect")]
    cover = fleetfigures.coverage(rows, RADIO, {"a": (0, 0)}, {1: [(0, 1, 0)], 2: [(0, 2, 0)]},
                                  {1: "s1", 2: "s2"}, {"a": [(0, None)]}, {"a": 2}, 0, 100)
    connected, due = cover["s1"]
    assert abs(due - (35 + 35)) < 0.3 and abs(connected - due) < 0.3, "not due 50-65 s after the loss"
    only_s2 = [r for r in rows if r["serial"] == "s2"]
    one_slot = fleetfigures.coverage(only_s2, RADIO, {"a": (0, 0)}, {1: [(0, 1, 0)], 2: [(0, 2, 0)]},
                                     {1: "s1", 2: "s2"}, {"a": [(0, None)]}, {"a": 1}, 0, 100)
    assert one_slot["s1"] == (0.0, 0.0), "never due: a's only slot holds s2"


def test_out_of_range_and_dead_boards_do_not_cover():
    far = fleetfigures.coverage([], RADIO, {"a": (0, 0)}, {1: [(0, 11, 0)]}, {1: "s1"}, {"a": [(0, None)]},
                                {"a": 3}, 0, 60)
    assert far["s1"] == (0.0, 0.0), "11 m: below the -90 dBm floor noise-free"
    deaf = fleetfigures.coverage([row(10, "a", "", "radio_off")], RADIO, {"a": (0, 0)}, {1: [(0, 1, 0)]},
                                 {1: "s1"}, {"a": [(0, None)]}, {"a": 3}, 0, 60)
    assert abs(deaf["s1"][1]) < 0.2, "deaf from 10 s: never 15 s coverable"


def test_gaps_and_pickups():
    rows = [row(1, "a", "s1", "connect"), row(30, "a", "s1", "disconnect"), row(42, "b", "s1", "connect"),
            row(2, "c", "s2", "connect"), row(100, "c", "s2", "disconnect", "link loss (radio failed)"),
            row(103.5, "b", "s2", "connect"), row(2, "c", "s3", "connect"),
            row(100, "c", "s3", "disconnect", "link loss (radio failed)")]
    assert fleetfigures.handover_gaps(rows, 150) == [("s1", "a", "b", 30, 12), ("s2", "c", "b", 100, 3.5)]
    assert fleetfigures.pickups(rows, "c", 100, 150) == {"s2": 3.5, "s3": None}
    assert fleetfigures.position([(0, 0, 0), (10, 10, 0)], 5) == (5, 0)
