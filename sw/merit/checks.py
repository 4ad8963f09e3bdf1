"""Parameter checks shared by the golden model, the compiler, the CLI and the MERIT-z blocks.

Each check raises ``TypeError`` for a wrong type and ``ValueError`` for a wrong value, with a
message that names the parameter, echoes the bad value and says what was expected; it returns the
value when it is good. An integer is a Python ``int`` (not a ``bool``).
"""

__all__ = ["check_int", "check_range", "check_at_least", "check_lanes", "check_taus",
           "check_ports"]


def check_int(name, value):
    """``value`` is an integer: ``TypeError`` ``"<name> must be an integer, not <value>"``."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, not {value!r}")
    return value


def check_range(name, value, low, high):
    """``value`` is an integer from ``low`` to ``high`` (both included)."""
    check_int(name, value)
    if not low <= value <= high:
        raise ValueError(f"{name} must be between {low} and {high}, not {value}")
    return value


def check_at_least(name, value, low):
    """``value`` is an integer of at least ``low``."""
    check_int(name, value)
    if value < low:
        raise ValueError(f"{name} must be at least {low}, not {value}")
    return value


def check_lanes(lanes):
    """``lanes``: a power of two of at least 2."""
    check_int("lanes", lanes)
    if lanes < 2 or lanes & (lanes - 1):
        raise ValueError(f"lanes must be a power of two of at least 2, not {lanes}")
    return lanes


def check_taus(taus):
    """``taus``: tile accumulation units of MERIT-z, 1 to ``merit.arch.MAX_TAUS`` (16)."""
    from merit.arch import MAX_TAUS  # merit.arch builds on this module
    return check_range("taus", taus, 1, MAX_TAUS)


def check_ports(name, value):
    """``value``: the ports of an SRAM bank, 1 (single-port) or 2 (a read and a write port)."""
    check_int(name, value)
    if value not in (1, 2):
        raise ValueError(f"{name} must be 1 (single-port) or 2 (two-port), not {value}")
    return value
