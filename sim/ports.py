"""Resolve flattened stream port names (``ctrl__tokens``) to Amaranth interface objects."""

__all__ = ["resolve_port"]


def resolve_port(dut, name: str):
    obj = dut
    for part in name.split("__"):
        obj = getattr(obj, part)
    return obj
