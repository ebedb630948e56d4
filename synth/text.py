"""How the report writes a figure in its text."""

__all__ = ["fmt_value"]


def fmt_value(v, fmt="{:.4g}", none="—") -> str:
    """A figure for the text: ``fmt`` applied to ``v``, ``none`` when it is missing."""
    return none if v is None else fmt.format(v)
