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


def _verif():
    """Make the repository's ``verif/`` benches importable (the CLI runs from a checkout)."""
    verif = Path(__file__).resolve().parents[2] / "verif"
    if not (verif / "simulate.py").is_file():
        raise CommandError(f"merit sim runs from a source checkout; {verif} has no simulate.py")
    if str(verif) not in sys.path:
        sys.path.insert(0, str(verif))


def _cmd_sim(args):
    _verif()
    try:
        from measure_tau import WORKLOADS
        from simulate import simulate
    except ImportError as exc:
        raise CommandError(f"simulation needs cocotb and amaranth ({exc}); run 'make setup'") \
            from None
    if args.workload not in WORKLOADS:
        raise CommandError(f"unknown workload {args.workload!r}; expected one of "
                           + ", ".join(sorted(WORKLOADS)))
    from meritz.configs import check_lanes
    check_lanes(args.lanes)
    if args.dram_bytes_per_cycle <= 0:
        raise CommandError(f"--dram-bytes-per-cycle must be positive, not "
                           f"{args.dram_bytes_per_cycle}")
    factory, what = WORKLOADS[args.workload]
    print(f"simulating {args.workload} ({what}) on one TAU of {args.lanes} lanes, "
          f"DRAM {args.dram_bytes_per_cycle} B/cycle ...", flush=True)
    from harness import BenchFailure
    try:
        metrics = simulate(factory(), lanes=args.lanes,
                           dram_bytes_per_cycle=args.dram_bytes_per_cycle, seed=args.seed)
    except BenchFailure as exc:
        raise CommandError(f"simulation failed: {exc}") from None
    metrics = {"workload": args.workload, "description": what, "lanes": args.lanes,
               "dram_bytes_per_cycle": args.dram_bytes_per_cycle, **metrics}
    width = max(len(key) for key in metrics)
    for key, value in metrics.items():
        shown = f"{value:.3f}" if isinstance(value, float) else value
        print(f"  {key.ljust(width)}  {shown}")
    print("  result: bit-exact against the golden ISA model")
    if args.json:
        import json
        Path(args.json).write_text(json.dumps(metrics, indent=2, sort_keys=True) + "\n")
        print(f"wrote {args.json}")


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

    sim = commands.add_parser(
        "sim", help="run one workload on the Verilator model of a TAU, bit-exact vs the golden "
                    "model; print cycles, ALU operations and utilization",
        description="Simulate one benchmark workload on MERIT-z (one TAU) under Verilator, with "
                    "DRAM modelled as an AXI RAM at the given bandwidth. The result is checked "
                    "bit for bit against the golden ISA model, and the whole DRAM image outside "
                    "the output is checked unchanged.")
    sim.add_argument("workload", help="workload name (see 'make bench'), e.g. conv3x3_c16")
    sim.add_argument("--lanes", type=int, default=32, metavar="N",
                     help="lanes of the TAU, a power of two (default: 32)")
    sim.add_argument("--dram-bytes-per-cycle", type=int, default=8, metavar="B",
                     help="DRAM bandwidth in bytes per cycle (default: 8, the paper's setting)")
    sim.add_argument("--seed", type=int, help="random seed of the bench (default: random)")
    sim.add_argument("--json", metavar="FILE", help="also write the metrics as JSON")
    sim.set_defaults(run=_cmd_sim)
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
