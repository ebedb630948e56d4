"""Reading simulator values in cocotb testbenches (shared by the stream bench and the KVMU bench)."""

__all__ = ["value_int"]


def value_int(handle) -> int:
    """The unsigned value of a signal; an X or Z is an AssertionError naming the signal."""
    value = handle.value
    if not value.is_resolvable:
        raise AssertionError(f"{handle._name} is {value} (X or Z) where a defined value is needed")
    return value.to_unsigned() if hasattr(value, "to_unsigned") else int(value)
