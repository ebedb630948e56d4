"""Bench factories per component: ``make(cfg, n=, seed=, p_valid=, p_ready=) -> StreamBench``."""

from vrex.errors import UsageError

__all__ = ["bench_for"]


def _makers():
    from . import hamming_lanes

    return {"hamming_lanes": hamming_lanes.make_bench}


def bench_for(component: str):
    makers = _makers()
    try:
        return makers[component]
    except KeyError:
        raise UsageError(f"no bench for component {component!r}; benches exist for: {', '.join(sorted(makers))}.") \
            from None
