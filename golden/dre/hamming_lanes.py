"""Bit-exact reference of the Hamming lane array (hdl/dre/hamming_lanes.py)."""

__all__ = ["hamming_distance", "hamming_lanes"]


def hamming_distance(a: int, b: int) -> int:
    """Number of differing bits of two non-negative codes."""
    return (a ^ b).bit_count()


def hamming_lanes(query: int, refs: list[int], ref_valid: int, threshold: int) -> dict:
    """One lane-array transaction.

    Returns ``{"distance": [popcount(query ^ r) for r in refs], "below": mask}`` where bit ``k`` of ``mask`` is
    set iff lane ``k`` is valid and its distance is strictly below ``threshold``.
    """
    distance = [hamming_distance(query, r) for r in refs]
    below = 0
    for k, d in enumerate(distance):
        if (ref_valid >> k) & 1 and d < threshold:
            below |= 1 << k
    return {"distance": distance, "below": below}
