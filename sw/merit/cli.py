"""The ``merit`` command line: emit MERIT-z Verilog, simulate a workload on it, plan a kernel,
compile one to C.

Every error is one line on stderr, ``merit: error: ...``, with a non-zero exit status
(``MERIT_DEBUG=1`` shows the traceback instead).
"""

import argparse
import importlib
import importlib.util
import os
import re
import sys
import time
from pathlib import Path

__all__ = ["main"]


class CommandError(Exception):
    """An error to report to the user as one line."""


def _cmd_verilog(args):
    from merit.flow.verilog import write_verilog
    from merit.kernelcfg import check_lanes

    if args.lanes is not None:
        check_lanes(args.lanes)
    try:
        written = write_verilog(args.out, lanes=args.lanes, taus=args.taus)
    except ImportError as exc:
        raise CommandError(f"the RTL needs amaranth ({exc}); run 'make setup'") from None
    if not written:
        raise CommandError("no MERIT-z component is registered in meritz.blocks.BLOCKS")


def _import_module(name):
    """Import module ``name``: ``name.py`` of the current folder if there is one, else from the
    Python path."""
    path = Path.cwd() / f"{name}.py"
    if "." not in name and path.is_file():
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    return importlib.import_module(name)


def _problem(spec):
    """``(problem, description)`` of a workload name, of ``paper:ROW`` (the simulated slice of a
    row of the paper's Tables VIII / IX, :mod:`merit.paper`) or of ``module:function`` (a
    function of no arguments returning a :class:`merit.Problem`; the module may be a file in the
    current folder)."""
    from merit.problem import Problem

    if spec.startswith("paper:"):
        from merit.paper import ROWS
        rows = {r.name: r for r in ROWS}
        name = spec.partition(":")[2]
        if name not in rows:
            raise CommandError(f"unknown paper row {name!r}; expected one of "
                               + ", ".join(rows))
        r = rows[name]
        problems = r.slice_problems()
        what = f"{r.label} (Table {r.table}), slice: {r.slice_what}"
        if len(problems) > 1:       # a row run as several problems: the first of them
            what += f"; problem 1 of {len(problems)} ({problems[0].name})"
        return problems[0], what

    if ":" not in spec:
        from merit.suite import WORKLOADS as workloads
        if spec not in workloads:
            raise CommandError(f"unknown workload {spec!r}; expected one of "
                               + ", ".join(sorted(workloads))
                               + ", paper:ROW (a row of the paper's tables), or MODULE:FUNCTION "
                               "returning a merit.Problem")
        factory, what = workloads[spec]
        return factory(), what
    module_name, _, function_name = spec.rpartition(":")
    if not module_name or not function_name.isidentifier():
        raise CommandError(f"{spec!r}: expected MODULE:FUNCTION or path/to/file.py:FUNCTION, "
                           f"with a module and a function name")
    module = _import_user_module(module_name, spec)
    factory = getattr(module, function_name, None)
    if not callable(factory):
        raise CommandError(f"module {module_name!r} has no function {function_name!r}")
    try:
        problem = factory()
    except Exception as exc:            # user code: any failure is one line naming it
        raise CommandError(f"{spec}() failed: {type(exc).__name__}: {exc}") from None
    if not isinstance(problem, Problem):
        raise CommandError(f"{spec} must return a merit.Problem, not "
                           f"{type(problem).__name__}")
    return problem, f"{problem.name} from {spec}"


def _import_user_module(module_name, spec):
    """The module of ``MODULE:FUNCTION``: a file path (``.py``, or with a ``/``), else a module
    importable from the current folder or the Python path. Any failure is a CommandError."""
    try:
        if module_name.endswith(".py") or "/" in module_name or os.sep in module_name:
            path = Path(module_name)
            if not path.is_file():
                raise CommandError(f"{spec!r}: no file {module_name!r}")
            name = "_merit_user_" + "".join(c if c.isalnum() else "_" for c in path.stem)
            loader = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(loader)
            loader.loader.exec_module(module)
            return module
        return _import_module(module_name)
    except CommandError:
        raise
    except SyntaxError as exc:
        raise CommandError(f"cannot import {module_name!r} of {spec!r}: SyntaxError: {exc.msg} "
                           f"({exc.filename}, line {exc.lineno})") from None
    except Exception as exc:            # ImportError, or anything the module raises at import
        raise CommandError(f"cannot import {module_name!r} of {spec!r}: "
                           f"{type(exc).__name__}: {exc}") from None


def _check_output_path(option, path):
    """Refuse an output file whose folder does not exist or cannot be written, before any run."""
    if path is None:
        return
    target = Path(path)
    if target.is_dir():
        raise CommandError(f"{option} {path!r} is a folder; name a file")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise CommandError(f"{option} {path!r}: folder {str(folder)!r} does not exist")
    if not os.access(folder, os.W_OK):
        raise CommandError(f"{option} {path!r}: folder {str(folder)!r} is not writable")


def _compile(problem, args, what, *, shift=0, instructions=None):
    """Compile ``problem`` for the command's hardware before anything is built, drawn or written:
    every limit the TAU has is named here, in one line, not after a Verilator build.
    ``instructions``: the TAU's instruction slots (default: as many as the program needs)."""
    from merit.compile import compile_problem, program_slots
    from merit.isa import IsaError
    try:
        if instructions is None:
            instructions = program_slots(problem)
        kernel = compile_problem(problem, lanes=args.lanes, shift=shift,
                                 instructions=instructions)
        if getattr(args, "taus", None) is not None:
            from merit.regmap import register_map
            register_map(instructions=instructions)
    except (IsaError, ValueError) as exc:
        raise CommandError(f"{what} cannot run on {_machine(args)}: {exc}") from None
    from merit.isa.programs import check_golden
    failed = [c for c in check_golden(problem, shift=shift) if not c.held]
    if failed:
        raise CommandError(f"the ISA program of {what} differs from the golden model on the "
                           + ", ".join(f"{c.data} data (max error {c.max_error}, tolerance "
                                       f"{c.tolerance})" for c in failed))
    return kernel


def _check_output_folder(option, path):
    """Refuse an output folder that is a file, or whose nearest existing ancestor is not a
    writable folder, before anything is compiled or written."""
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise CommandError(f"{option} {path!r} is a file; name a folder")
    existing = target
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise CommandError(f"{option} {path!r}: {str(existing)!r} is not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise CommandError(f"{option} {path!r}: folder {str(existing)!r} is not writable")


def _check_hardware(args):
    from merit.checks import check_taus
    from merit.kernelcfg import check_lanes

    check_lanes(args.lanes)
    if args.taus is not None:
        check_taus(args.taus)
    if args.dram_bytes_per_cycle <= 0:
        raise CommandError(f"--dram-bytes-per-cycle must be positive, not "
                           f"{args.dram_bytes_per_cycle}")


def _machine(args):
    if getattr(args, "taus", None) is None:
        return f"one TAU of {args.lanes} lanes"
    return f"MERIT-z with {args.taus} TAU{'s' if args.taus > 1 else ''} of {args.lanes} lanes"


def _table(rows):
    width = max(len(key) for key, _ in rows)
    for key, value in rows:
        print(f"  {key.ljust(width)}  {value}")


_DRAM_MODELS = {"fast": "DRAM model inside the Verilator model",
                "python": "Python DRAM model (cocotbext-axi)"}


def _cmd_sim(args):
    _check_hardware(args)
    if args.latency < 0:
        raise CommandError(f"--latency must be at least 0, not {args.latency}")
    if args.waves is not None and Path(args.waves).suffix not in (".fst", ".vcd"):
        raise CommandError(f"--waves must name an .fst or .vcd file, not {args.waves!r}")
    _check_output_path("--json", args.json)
    problem, what = _problem(args.workload)
    _compile(problem, args, args.workload)
    from merit.sim import BenchFailure, simulate
    from merit.sim.toolchain import ToolchainError

    print(f"simulating {args.workload} ({what}) on {_machine(args)}, "
          f"DRAM {args.dram_bytes_per_cycle} B/cycle, read latency {args.latency} cycles, "
          f"{_DRAM_MODELS[args.dram]} "
          f"(the first run of a configuration builds its Verilator model: minutes)", flush=True)
    start = time.monotonic()
    try:
        metrics = simulate(problem, lanes=args.lanes, taus=args.taus,
                           dram_bytes_per_cycle=args.dram_bytes_per_cycle, latency=args.latency,
                           seed=args.seed, waves=args.waves, dram=args.dram,
                           progress=lambda line: print(line, flush=True))
    except BenchFailure as exc:
        raise CommandError(f"simulation failed: {exc}") from None
    except ToolchainError as exc:
        raise CommandError(str(exc)) from None
    except RuntimeError as exc:     # the cocotb runner: Verilator or the C++ build failed
        raise CommandError(f"building the Verilator model failed ({exc}); see build.log in "
                           f"the newest sim_build/ folder of this configuration") from None
    wall = time.monotonic() - start
    alus = args.lanes * (args.taus or 1)
    print(f"{args.workload} on {_machine(args)}:")
    rows = [
        ("cycles", f"{metrics['cycles']}  (first DRAM request to last write response)"),
        ("utilization", f"{metrics['utilization']:.3f}  ({metrics['useful_ops']} useful ALU "
                        f"operations / (cycles x {alus} ALUs); ALU-bound: "
                        f"{metrics['compute_bound_cycles']} cycles)"),
        ("DRAM busy", f"{metrics['dram_busy']:.3f}  ({metrics['read_beats']} read + "
                      f"{metrics['write_beats']} write beats of 8 bytes)"),
        ("tiles", f"{metrics['tiles']}"),
        ("tiling", metrics["tiling"]),
    ]
    if "cycles_register" in metrics:
        rows.append(("CYCLES register", f"{metrics['cycles_register']}  (START to done)"))
    rate = metrics["sim_cycles"] / metrics["sim_seconds"] if metrics["sim_seconds"] else 0
    rows += [
        ("wall time", f"{wall:.1f} s  (simulation {metrics['sim_seconds']:.1f} s)"),
        ("cycles/s", f"{rate:.0f}  ({_DRAM_MODELS[args.dram]})"),
        ("RTL = ISA", "yes: every output equals the ISA interpreter bit for bit (inputs over "
                      "the whole int16 range), no other DRAM byte changed"),
        ("ISA = golden", _golden_row(metrics["isa_vs_golden"])),
    ]
    if args.waves:
        rows.append(("waves", metrics["waves"] + (f"  ({metrics['waves_note']})"
                                                  if "waves_note" in metrics else "")))
    _table(rows)
    failed = [c["data"] for c in metrics["isa_vs_golden"] if not c["held"]]
    if args.json:
        import json
        record = {"workload": args.workload, "description": what, "lanes": args.lanes,
                  "taus": args.taus, "dram_bytes_per_cycle": args.dram_bytes_per_cycle,
                  "latency": args.latency, "wall_s": round(wall, 1), **metrics}
        Path(args.json).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
        print(f"wrote {args.json}")
    if failed:
        raise CommandError(f"the ISA program of {args.workload} differs from the golden model on "
                           f"the {', '.join(failed)} data (the RTL matched the ISA program)")


def _golden_row(checks):
    """The table's line for the ISA-vs-golden comparisons of ``simulate``."""
    held = all(c["held"] for c in checks)
    tol = checks[0]["tolerance"] if checks else 0
    how = "bit-exact" if tol == 0 else f"within {tol} (fixed point)"
    sets = ", ".join(f"{c['data']} {'held' if c['held'] else 'FAILED'} (max error "
                     f"{c['max_error']}, {c['saturated']}/{c['outputs']} saturated)"
                     for c in checks)
    return f"{'yes' if held else 'NO'}: {how}; {sets}"


def _cmd_compile(args):
    from merit.kernelcfg import check_lanes

    check_lanes(args.lanes)
    _check_output_folder("--out", args.out)
    try:
        from systemrdl import RDLCompileError

        from merit.flow.driver import check_kernel_name, emit_c, instruction_slots
    except ImportError as exc:
        raise CommandError(f"C emission needs the flow packages ({exc}); run 'make setup'") \
            from None
    if args.name is not None:
        check_kernel_name(args.name)
    problem, what = _problem(args.workload)
    name = args.name or re.sub(r"\W", "_", args.workload.rpartition(":")[2], flags=re.ASCII)
    if name[:1].isdigit():
        name = f"k_{name}"
    # the C driver programs the default register map: its instruction slots, not the program's
    _compile(problem, args, args.workload, shift=args.shift, instructions=instruction_slots())
    try:
        paths = emit_c(problem, args.out, name, lanes=args.lanes, shift=args.shift,
                       description=what)
    except RDLCompileError as exc:
        raise CommandError(f"the register description did not compile: {exc}") from None
    except OSError as exc:
        raise CommandError(f"--out {args.out!r}: {exc.strerror or exc}") from None
    for path in paths:
        print(f"wrote {path}")


def _cmd_plan(args):
    _check_hardware(args)
    _check_output_path("--png", args.png)
    problem, _ = _problem(args.workload)
    _compile(problem, args, args.workload)
    try:
        from merit.plan import plan_png, plan_text
    except ImportError:
        raise CommandError("merit plan needs merit.plan.plan_text and plan_png, which are not "
                           "there yet (sw/merit/plan.py)") from None
    options = dict(lanes=args.lanes, taus=args.taus, dram_bytes_per_cycle=args.dram_bytes_per_cycle)
    print(plan_text(problem, **options))
    if args.png:
        plan_png(problem, args.png, **options)
        print(f"wrote {args.png}")


def _cmd_run(args):
    try:
        from merit.onnx.command import RunError, run_command
    except ImportError as exc:
        raise CommandError(f"merit run needs the onnx package ({exc}); run 'make setup'") \
            from None
    try:
        run_command(args)
    except RunError as exc:
        raise CommandError(str(exc)) from None


class _Parser(argparse.ArgumentParser):
    """argparse with the one-line error format of the other errors."""

    def error(self, message):
        print(f"merit: error: {message}", file=sys.stderr)
        sys.exit(2)


def _hardware_arguments(parser, *, taus_default, taus_help):
    parser.add_argument("--lanes", type=int, default=32, metavar="N",
                        help="lanes per TAU, a power of two (default: 32)")
    parser.add_argument("--taus", type=int, default=taus_default, metavar="T", help=taus_help)
    parser.add_argument("--dram-bytes-per-cycle", type=int, default=8, metavar="B",
                        help="DRAM bandwidth in bytes per cycle (default: 8, the paper's setting)")


def _parser():
    parser = _Parser(
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
        "sim", help="run one workload on the Verilator model of MERIT-z, bit-exact vs the golden "
                    "model; print cycles, utilization, DRAM traffic",
        description="Simulate one workload on MERIT-z under Verilator: one TAU driven by the "
                    "bench (default), or with --taus the whole processor driven like software "
                    "(registers through AXI4-Lite, CTRL.start, interrupt). DRAM is an AXI RAM at "
                    "the given bandwidth. The result is checked bit for bit against the golden "
                    "ISA model, and the whole DRAM image outside the output is checked "
                    "unchanged. A progress line every ~2 s, a table at the end.")
    sim.add_argument("workload", help="workload name (e.g. conv3x3_c16; a wrong name lists them) "
                                      "or MODULE:FUNCTION returning a merit.Problem")
    _hardware_arguments(sim, taus_default=None,
                        taus_help="simulate MERIT-z with T TAUs (1..16) through its control "
                                  "port (default: one TAU, driven by the bench)")
    sim.add_argument("--latency", type=int, default=20, metavar="C",
                     help="DRAM read latency in cycles (default: 20)")
    sim.add_argument("--seed", type=int, help="random seed of the bench (default: random)")
    sim.add_argument("--json", metavar="FILE", help="also write the metrics as JSON")
    sim.add_argument("--waves", metavar="FILE.fst",
                     help="write a waveform of the run (a separate, traced build): FST, or VCD "
                          "for a .vcd name or where FST cannot be built (no lz4 / zlib "
                          "headers; the .vcd goes beside the .fst name, and the table says so)")
    sim.add_argument("--dram", choices=sorted(_DRAM_MODELS), default="fast",
                     help="DRAM model: 'fast', inside the Verilator model (default), or "
                          "'python', cocotbext-axi's RAM behind Python coroutines (about 10x "
                          "slower; the model of the robustness benches)")
    sim.set_defaults(run=_cmd_sim)

    comp = commands.add_parser(
        "compile", help="compile a workload for MERIT-z and emit it as C: register writes, LUT "
                        "contents and a small driver",
        description="Compile one workload for MERIT-z and write it as C into a folder: "
                    "NAME.c / NAME.h (the configuration register writes and LUT window of the "
                    "kernel, the DRAM address of each tensor), meritz_driver.c / .h (load, "
                    "start, wait, STATUS decoding) and meritz.h (the register header generated "
                    "from the SystemRDL description). The platform supplies meritz_write32 and "
                    "meritz_read32.")
    comp.add_argument("workload", help="workload name, paper:ROW or MODULE:FUNCTION returning a "
                                       "merit.Problem")
    comp.add_argument("--emit", choices=["c"], default="c", help="output language (default: c)")
    comp.add_argument("--lanes", type=int, default=32, metavar="N",
                      help="lanes per TAU of the target, a power of two (default: 32)")
    comp.add_argument("--shift", type=int, default=0, metavar="S",
                      help="right shift of the results (default: 0)")
    comp.add_argument("--name", metavar="NAME",
                      help="C name of the kernel (default: the workload's name)")
    comp.add_argument("--out", default=".", metavar="DIR", help="output folder (default: .)")
    comp.set_defaults(run=_cmd_compile)

    plan = commands.add_parser(
        "plan", help="tiling, cycles and bottleneck of a workload on MERIT-z, without simulating",
        description="Print the plan of one workload on MERIT-z (merit.plan.plan_text): tiling, "
                    "predicted cycles and what bounds them; --png also draws it.")
    plan.add_argument("workload", help="workload name or MODULE:FUNCTION returning a "
                                       "merit.Problem")
    _hardware_arguments(plan, taus_default=4, taus_help="TAUs, 1..16 (default: 4)")
    plan.add_argument("--png", metavar="FILE", help="also draw the plan into a PNG file")
    plan.set_defaults(run=_cmd_plan)

    run = commands.add_parser(
        "run", help="run an ONNX model on the golden model, the GPU or MERIT-z (16-bit fixed "
                    "point and the performance model per layer)",
        description="Load an ONNX model as MERIT problems (merit.onnx, docs/onnx.md) and run "
                    "it on a random input: --on golden (numpy), gpu (merit.gpu) or meritz "
                    "(quantized to 16 bits, each layer's cycles, utilization and DRAM bytes "
                    "from merit.perf; --rtl simulates named layers on the Verilator model).")
    try:
        from merit.onnx.command import add_arguments
    except ImportError:        # without the onnx extra: the command says so when run
        run.add_argument("rest", nargs=argparse.REMAINDER)
    else:
        add_arguments(run)
    run.set_defaults(run=_cmd_run)
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
    except Exception as exc:            # a bug of merit itself: still one line, still exit 2
        if os.environ.get("MERIT_DEBUG"):
            raise
        print(f"merit: error: internal error, {type(exc).__name__}: {exc} (MERIT_DEBUG=1 shows "
              f"the traceback)", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
