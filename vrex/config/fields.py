"""Shared plumbing of every section: the param/section field helpers, _fail and the _Section bounds check."""

from __future__ import annotations

import dataclasses
from dataclasses import field

from ..errors import ConfigError


_HASHED = object()


def param(default, doc, *, min=None, max=None, unit=None, omit_from_hash_at=_HASHED, hashed_only_if=None):
    """A config field with its documentation and bounds (inclusive).

    ``omit_from_hash_at``: for a key added after configs were hashed, the value that reproduces the behaviour from
    before the key existed; while the field holds it, :meth:`Config.hash` leaves the key out, so adding the key moved
    no config's hash (docs/decisions.md, "Config hash of added keys"). It is a fixed value, not the default: a later
    change of the default still changes the hash of every config that holds the new default.

    ``hashed_only_if``: ``(sibling field, value)``: the key takes part in the hash only while that field of the same
    section holds that value, for a key that has no effect otherwise (the row rule's p under the offloaded rule), so a
    config whose behaviour does not change keeps its hash when the key's default does."""
    meta = {"doc": doc, "min": min, "max": max, "unit": unit}
    if omit_from_hash_at is not _HASHED:
        meta["omit_from_hash_at"] = omit_from_hash_at
    if hashed_only_if is not None:
        meta["hashed_only_if"] = hashed_only_if
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
