"""The timing constraints shipped beside generated Verilog (``<top>.sdc``).

One clock on ``clk`` at :func:`ip_clock_mhz` (``technology.clock_mhz``, or with 0 = auto the design's clock
``technology.target_clock_mhz``); every other input and every output gets an input / output delay
of ``ip.io_delay_fraction`` of the period (the part of the cycle left to the logic outside the block); the reset
is a false path. Times are in ns. The figures flow (``synth/sta.py``) times the same clock with port delays of 0.
"""

from __future__ import annotations

__all__ = ["ip_clock_mhz", "sdc_text"]


def ip_clock_mhz(cfg) -> float:
    """The clock a downstream flow is given (SDC, testbench, interface): ``technology.clock_mhz`` when set, else
    (0 = auto, which the figures flow resolves per library) the design's clock ``technology.target_clock_mhz``."""
    return float(cfg.technology.clock_mhz or cfg.technology.target_clock_mhz)


def _ports(names) -> str:
    return "[get_ports {" + " ".join(names) + "}]"


def sdc_text(interface: dict, cfg) -> str:
    """SDC for the design described by ``interface`` (:func:`vrex.synth.interface.describe`)."""
    mhz = ip_clock_mhz(cfg)
    period = 1000.0 / mhz
    delay = period * cfg.ip.io_delay_fraction
    clock = interface["clock"]["port"] if interface["clock"] else None
    reset = interface["reset"]["port"] if interface["reset"] else None
    inputs = [p["name"] for p in interface["ports"] if p["direction"] == "input" and p["name"] != clock]
    outputs = [p["name"] for p in interface["ports"] if p["direction"] == "output"]
    lines = [
        f"# Timing constraints of {interface['top']} (component {interface['component']}, config "
        f"{interface['config']}, hash {interface['config_hash']}), written by vrex {interface['vrex']}.",
        f"# Clock {mhz:g} MHz (technology.clock_mhz, 0 = technology.target_clock_mhz); input/output delays "
        f"ip.io_delay_fraction = {cfg.ip.io_delay_fraction:g} of the period. Times in ns.",
    ]
    if clock:
        lines.append(f"create_clock -name {clock} -period {period:.6g} [get_ports {clock}]")
        ref = clock
    else:   # a purely combinational block: a virtual clock times its ports
        lines.append(f"create_clock -name vclk -period {period:.6g}")
        ref = "vclk"
    if inputs:
        lines.append(f"set_input_delay {delay:.6g} -clock {ref} {_ports(inputs)}")
    if outputs:
        lines.append(f"set_output_delay {delay:.6g} -clock {ref} {_ports(outputs)}")
    if reset:
        lines.append("# The synchronous reset is held for several cycles and released by the integrator's reset "
                     "synchroniser: not timed.")
        lines.append(f"set_false_path -from [get_ports {reset}]")
    return "\n".join(lines) + "\n"
