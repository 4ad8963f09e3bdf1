"""The ``merit`` command line: emit MERIT-z Verilog (later: simulate, plan, benchmark).

Every error is one line on stderr, ``merit: error: ...``, with a non-zero exit status
(``MERIT_DEBUG=1`` shows the traceback instead).
"""

import argparse
import os
import sys
from pathlib import Path

__all__ = ["main"]


class CommandError(Exception):
    """An error to report to the user as one line."""


def _cmd_verilog(args):
    try:
        from meritz.configs import build
        from meritz.emit import write_component
    except ImportError as exc:
        raise CommandError(f"the RTL needs amaranth ({exc}); run 'make setup'") from None
    out = Path(args.out)
    written = []
    for name, component in build(lanes=args.lanes, taus=args.taus):
        v_path = write_component(component, name, out)
        (out / f"{name}.f").write_text(f"{v_path.name}\n")
        written.append(v_path)
        print(f"wrote {v_path} (+ {name}.json, {name}.f)")
    if not written:
        raise CommandError("no MERIT-z component is registered in meritz.configs.BLOCKS")
    (out / "meritz.f").write_text("".join(f"{path.name}\n" for path in written))
    print(f"wrote {out / 'meritz.f'}: file list of all {len(written)} modules")


def _parser():
    parser = argparse.ArgumentParser(
        prog="merit",
        description="MERIT: tensor transform + ranged inner products. Emit the MERIT-z processor "
                    "as Verilog, run it in simulation, plan and benchmark kernels.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    verilog = commands.add_parser(
        "verilog", help="emit MERIT-z Verilog (+ port JSON and file lists) into a folder",
        description="Emit every MERIT-z component (blocks, TAU, top) as Verilog, with its port "
                    "metadata as JSON beside each .v and .f file lists for FPGA/ASIC flows. "
                    "Without options, the default configurations are emitted.")
    verilog.add_argument("--lanes", type=int, metavar="N",
                         help="lanes (ALUs, SRAM banks) per TAU, a power of two (default: 32)")
    verilog.add_argument("--taus", type=int, metavar="T",
                         help="tile accumulation units of the top (default: 4)")
    verilog.add_argument("--out", default="rtl_out", metavar="DIR",
                         help="output folder (default: rtl_out)")
    verilog.set_defaults(run=_cmd_verilog)
    return parser


def main(argv=None):
    """Entry point of the ``merit`` command; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        args.run(args)
    except (CommandError, ValueError, TypeError, OSError) as exc:
        if os.environ.get("MERIT_DEBUG"):
            raise
        print(f"merit: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("merit: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
