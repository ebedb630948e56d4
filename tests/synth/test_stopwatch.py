"""Where the time of a figures run goes: exclusive laps per tool, one job's timing, the printed table."""

import time

from vrex.synth.stopwatch import job_timing, lap, timing_summary, timing_table


def test_nested_laps_stop_their_parents_clock():
    with job_timing() as t:
        with lap("saif sim"):
            time.sleep(0.05)
            with lap("verilog"):
                time.sleep(0.1)
        time.sleep(0.02)
    tools = t["tools"]
    assert 0.09 <= tools["verilog"] < 0.15 and 0.04 <= tools["saif sim"] < 0.09
    assert 0.015 <= tools["python"] < 0.06          # the time outside any lap
    assert abs(sum(tools.values()) - t["wall_s"]) < 0.03


def test_a_new_job_starts_from_zero():
    with job_timing():
        with lap("yosys"):
            time.sleep(0.01)
    with job_timing() as t:
        pass
    assert "yosys" not in t["tools"]


def test_the_table_lists_parts_slowest_first_with_totals():
    parts = {"hcu": {"wall_s": 10.0, "tools": {"yosys": 6.0, "sta": 3.0, "python": 1.0}, "cached": False},
             "wtu": {"wall_s": 20.0, "tools": {"yosys": 15.0, "saif sim": 5.0}, "cached": False},
             "dre": {"wall_s": 0.5, "tools": {"cache": 0.5}, "cached": True}}
    summary = timing_summary(parts, 25.0, 2)
    assert summary["tools"] == {"yosys": 21.0, "sta": 3.0, "saif sim": 5.0, "cache": 0.5, "python": 1.0}
    assert list(summary["tools"]) == ["yosys", "sta", "saif sim", "cache", "python"]   # the table's column order
    assert summary["cached_parts"] == ["dre"]
    lines = timing_table(summary).splitlines()
    assert lines[0].startswith("Where the time went: 25 s wall, 3 parts on 2 workers")
    assert lines[1].split() == ["part", "wall", "s", "yosys", "sta", "saif", "sim", "cache", "python"]
    assert [ln.split()[0] for ln in lines[2:]] == ["wtu", "hcu", "dre", "all"]
    assert "(cached)" in lines[4] and lines[5].split()[2:4] == ["30.5", "21.0"]
