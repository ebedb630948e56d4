"""Workload statistics of the WTU for docs/results-rtl.md: ``python -m vrex.sim.dre.wtu.stats [CONFIG]``.

Early-exit statistics (buckets walked, share of a row's clusters in the walked buckets, passes) and the cycle
model applied to many rows come from the golden model and the cycle model, which the tests prove equal to the
RTL row by row (tests/dre/test_wtu.py); ``measure_cycles`` gives the same figures measured in simulation on a small
workload. The top-k table puts the cycle model beside SpAtten's quick-select latency model
(reference/hardware-anchors.md §4).
"""

from __future__ import annotations

import random
import statistics
import sys

from vrex.golden.dre.jobs import random_jobs
from vrex.golden.dre.wtu.linear import select_bucketed, select_exact, wtu_row_cycles

from vrex.sim.dre.wtu.bench import bench_params, peaked_job, random_wtu_jobs

__all__ = ["row_statistics", "workloads", "topk_cycle_table", "main"]


def row_statistics(cfg, jobs) -> dict:
    """Mean early-exit statistics and cycles per row of ``jobs`` in the config's mode (valid jobs only)."""
    p = bench_params(cfg)
    g = p.geometry
    walked, spanned, fraction, exact, cycles, passes, words = [], [], [], [], [], [], []
    for job in jobs:
        for row in job.rows:
            sel = select_bucketed(row, job.counts, ratio_q=p.ratio_q, ratio_bits=g.ratio_bits, buckets=g.buckets,
                                  transform=g.transform)
            rc = wtu_row_cycles(row, job.counts, lanes=g.lanes, **p.golden)
            walked.append(sel.buckets_walked)
            spanned.append(sel.top_bucket + 1)
            fraction.append(sel.count() / len(row))
            exact.append(select_exact(row, job.counts, ratio_q=p.ratio_q, ratio_bits=g.ratio_bits,
                                      transform=g.transform).count() / len(row))
            cycles.append(rc.cycles)
            passes.append(rc.passes)
            words.append(rc.words)
    mean = statistics.fmean
    return {"rows": len(walked), "mean_clusters": mean(len(r) for j in jobs for r in j.rows),
            "mean_buckets_walked": mean(walked), "mean_buckets_spanned": mean(spanned),
            "mean_fraction_of_scores_to_threshold": mean(fraction), "mean_fraction_exact_rule": mean(exact),
            "mean_passes": mean(passes),
            "mean_cycles_per_row": mean(cycles), "mean_cycles_per_word": mean(c / w for c, w in zip(cycles, words))}


def workloads(cfg, seed: int = 0) -> dict:
    """Named job lists: the bench's random mix, golden.jobs.random_jobs, and peaked rows at fixed sizes."""
    g = bench_params(cfg).geometry
    rng = random.Random(seed)
    peaked = {}
    for n in (g.capacity // 16, g.capacity // 4, g.capacity):
        if n < 1:
            continue
        peaked[f"peaked rows, N = {n}"] = [peaked_job(g, n, 40, rng, "p")]
    return {"bench random mix (sim/dre/wtu/bench.py)": random_wtu_jobs(cfg, 20 * g.words, seed),
            "golden.jobs.random_jobs": random_jobs(cfg, n_hcu=0, n_wtu=40, seed=seed)[1], **peaked}


def topk_cycle_table(cfg, sizes=((256, 32), (1024, 32), (1024, 128), (1024, 512), (4096, 256)), trials=200,
                     seed=0):
    """Mean (sd) cycles of top-k rows of uniform random scores: selection passes only, and the whole row."""
    p = bench_params(cfg.with_overrides({"dre.wtu.mode": "topk", "resv.threshold_mass": "offloaded"}))
    g = p.geometry
    rng = random.Random(seed)
    lo, hi = g.score_range
    out = []
    for n, k in sizes:
        if n > g.capacity:
            continue
        sel, total = [], []
        for _ in range(trials):
            row = [rng.randint(lo, hi) for _ in range(n)]
            rc = wtu_row_cycles(row, [1] * n, lanes=g.lanes, **(p.golden | {"k": k}))
            total.append(rc.cycles)
            sel.append(rc.cycles - 2 * rc.words - 6)
        out.append({"n": n, "k": k, "selection": (statistics.fmean(sel), statistics.pstdev(sel)),
                    "row": (statistics.fmean(total), statistics.pstdev(total)), "one_pass": -(-n // g.lanes)})
    return out


def main(argv=None) -> int:
    from vrex.config import load_config

    argv = sys.argv[1:] if argv is None else argv
    base = load_config(argv[0] if argv else "edge")
    print(f"config {base.name}, hash {base.hash()}")
    for mode in ("early_exit", "histogram"):
        cfg = base.with_overrides({"dre.wtu.mode": mode})
        print(f"\n{mode} (config hash {cfg.hash()}): workload | rows | mean N | buckets walked / spanned | "
              "share selected (exact rule) | passes | cycles/row | cycles/word")
        for name, jobs in workloads(cfg).items():
            s = row_statistics(cfg, jobs)
            print(f"| {name} | {s['rows']} | {s['mean_clusters']:.0f} | {s['mean_buckets_walked']:.2f} / "
                  f"{s['mean_buckets_spanned']:.2f} | {100 * s['mean_fraction_of_scores_to_threshold']:.1f}% "
                  f"({100 * s['mean_fraction_exact_rule']:.1f}%) | "
                  f"{s['mean_passes']:.2f} | {s['mean_cycles_per_row']:.0f} | {s['mean_cycles_per_word']:.2f} |")
    topk = base.with_overrides({"dre.wtu.mode": "topk", "resv.threshold_mass": "offloaded"})
    print(f"\ntopk (config hash {topk.hash()}), uniform random scores, 200 trials: N | k | one pass | "
          "selection cycles mean (sd) | row cycles mean (sd)")
    for r in topk_cycle_table(topk):
        print(f"| {r['n']} | {r['k']} | {r['one_pass']} | {r['selection'][0]:.0f} ({r['selection'][1]:.0f}) | "
              f"{r['row'][0]:.0f} ({r['row'][1]:.0f}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
