"""Golden model of the weight-stationary DPE (hdl/lxe/dpe.py, docs/formats.md §LXE "DPE"): the weight memories of
``trees`` MAC trees and the results of a stream of load and compute beats, bit-exact with the RTL."""

from __future__ import annotations

from .mac_tree import dot_beats

__all__ = ["DpeModel"]


class DpeModel:
    """Weight memories (``trees`` × ``words`` words of ``n`` BF16, all +0 after reset) and the beat semantics.

    :meth:`beat` takes one input beat as a dict of the input layout (``load``, ``group``, ``mask``, ``addr``,
    ``data``, ``first``, ``last``) and returns the ``trees`` results ``(fp32, bf16)`` after a compute beat with
    ``last`` set, else ``None``. ``reference`` computes one tree's dot product from its beats (the MAC tree's
    golden, or a mutant of it)."""

    def __init__(self, *, trees: int, n: int, words: int, load_trees: int, guard_bits: int, reference=None):
        self.trees, self.n, self.words, self.load_trees, self.guard_bits = trees, n, words, load_trees, guard_bits
        self.reference = reference or (lambda a, b, g: dot_beats(a, b, g))
        self.memory = [[[0] * n for _ in range(words)] for _ in range(trees)]
        self._x: list[list[int]] = []
        self._w: list[list[list[int]]] = [[] for _ in range(trees)]

    def beat(self, b: dict):
        L = self.load_trees
        if b["load"]:
            for k in range(L):
                if b["mask"] >> k & 1:
                    self.memory[b["group"] * L + k][b["addr"]] = list(b["data"][k])
            return None
        if b["first"]:
            self._x, self._w = [], [[] for _ in range(self.trees)]
        self._x.append(list(b["data"][0]))
        for t in range(self.trees):
            self._w[t].append(self.memory[t][b["addr"]])
        if not b["last"]:
            return None
        return [self.reference(self._x, self._w[t], self.guard_bits) for t in range(self.trees)]
