"""Shared plumbing of every section: the param/section field helpers, _fail and the _Section bounds check."""

from __future__ import annotations

import dataclasses
from dataclasses import field

from ..errors import ConfigError


def param(default, doc, *, min=None, max=None, unit=None):
    """A config field with its documentation and bounds (inclusive)."""
    meta = {"doc": doc, "min": min, "max": max, "unit": unit}
    if isinstance(default, (list, dict)):
        raise TypeError("use tuples for sequence defaults")
    return field(default=default, metadata=meta)


def section(cls, doc):
    return field(default_factory=cls, metadata={"doc": doc})


def _fail(key, value, rule):
    raise ConfigError(key, value, rule)


class _Section:
    """Mixin: bounds checks from field metadata, then the section's own rules."""

    def __post_init__(self):
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            lo, hi = f.metadata.get("min"), f.metadata.get("max")
            values = value if isinstance(value, tuple) else (value,)
            for v in values:
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    if lo is not None and v < lo:
                        _fail(f.name, value, f"must be ≥ {lo}.")
                    if hi is not None and v > hi:
                        _fail(f.name, value, f"must be ≤ {hi}.")
        self._check()

    def _check(self):
        pass
