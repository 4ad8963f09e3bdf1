"""Parameter checks shared by the golden model, the compiler, the CLI and the MERIT-z blocks.

Each check raises ``TypeError`` for a wrong type and ``ValueError`` for a wrong value, with a
message that names the parameter, echoes the bad value and says what was expected; it returns the
value when it is good.
"""

__all__ = ["check_lanes", "check_taus"]


def check_lanes(lanes):
    """``lanes``: a power of two of at least 2."""
    if not isinstance(lanes, int) or isinstance(lanes, bool):
        raise TypeError(f"lanes must be an integer, not {lanes!r}")
    if lanes < 2 or lanes & (lanes - 1):
        raise ValueError(f"lanes must be a power of two of at least 2, not {lanes}")
    return lanes


def check_taus(taus):
    """``taus``: tile accumulation units of MERIT-z, 1 to 16."""
    if not isinstance(taus, int) or isinstance(taus, bool):
        raise TypeError(f"taus must be an integer, not {taus!r}")
    if not 1 <= taus <= 16:
        raise ValueError(f"taus must be between 1 and 16, not {taus}")
    return taus
