"""Results producers of the MERIT project: each ``python -m bench.X`` (from the repository root)
measures something and writes it to ``docs/results/`` with the command, the date and the machine.
Not part of the installed package."""

import datetime
import os
import platform


def machine(what="Verilator model"):
    """The machine line of a results page: architecture, CPUs, OS, Python, and what ran."""
    return (f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}, "
            f"Python {platform.python_version()}, {what}")


def now():
    """The date line of a results page (UTC, to the minute)."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
