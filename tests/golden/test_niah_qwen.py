"""`vrex niah --quick` on the shipped model (Qwen2.5-Coder-0.5B-Instruct from its PyPI wheels) and config, as a new
user runs it after the README's set-up: the table, the JSON contract, and a benchmark that measures something
(full attention answers the quick needles; retrieval fetches part of the haystack). Two option orders instead of
the default five keep the slow tier's time down (each order is a branch per needle and method)."""

import json

import pytest

from vrex.cli import main

pytestmark = pytest.mark.slow


def test_quick_niah_on_the_default_model(tmp_path, capsys):
    out = tmp_path / "niah.json"
    assert main(["niah", "--quick", "--orders", "2", "--json", str(out), "-o", str(tmp_path / "plots"), "-q"]) == 0
    table = capsys.readouterr().out
    assert "niah method" in table and "resv" in table and "rekv" in table
    r = json.loads(out.read_text())
    assert r["config"] == "qwen05" and r["model"]["sha256"].startswith("1d9614638d18")
    m = r["methods"]
    assert set(m) == {"full", "resv", "rekv"}
    kept = 2 - len(r["dropped_needles"])
    for name, v in m.items():
        n = v["niah"]
        assert n["questions"] == kept
        assert kept == 0 or (0.0 <= n["accuracy"] <= 1.0 and n["delta_points"] is not None)
    asked = [q for q in r["questions"] if q["method"] == "full"]
    assert len(asked) == 2 and all(len(q["scores"]) == 5 and q["orders"] == 2 for q in asked)  # 5 options
    for name in ("resv", "rekv"):
        assert 0.0 < m[name]["niah"]["ratio"]["frame"] < 1.0     # part of the offloaded haystack is fetched
    hits = [q["hit_rate"] for q in r["questions"] if q["method"] == "resv" and q["depth"] < 1]
    assert hits and all(0.0 <= h <= 1.0 for h in hits)      # the needle at 25 % is offloaded at the question
    assert all((tmp_path / "plots" / f).is_file() for f in ("niah-heatmaps.png", "niah-accuracy-vs-traffic.png"))
