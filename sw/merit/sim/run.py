"""``simulate``: run one MERIT problem on the Verilator model of MERIT-z, bit-exact against the
golden ISA model, and return its cycle count and utilization (``docs/perf.md``).

The entry point of ``merit sim WORKLOAD`` and of the TAU and top benches::

    from merit.sim import simulate
    metrics = simulate(problem, lanes=32, dram_bytes_per_cycle=8)            # one TAU
    metrics = simulate(problem, lanes=32, taus=4, dram_bytes_per_cycle=8)    # the processor

With ``taus=None`` the cocotb module (:mod:`merit.sim.cocotb_tau`) is the dispatcher: it hands one
TAU every parallel tile and waits for its ``idle``. With ``taus=T`` the whole processor
(:class:`meritz.top.Top`) runs the problem the way software does (:mod:`merit.sim.cocotb_top`):
configuration registers and LUT window written through AXI4-Lite, ``CTRL.start``, wait for
``irq``, ``STATUS`` read back. Either way the problem travels to the cocotb bench pickled; the
bench compiles it (``merit.compile.compile_problem``), fills the DRAM, and checks every output and
the whole DRAM image.

By default the DRAM is simulated inside the Verilator model (:mod:`merit.sim.fast`, the fast
path: no Python per clock cycle); ``dram="python"`` takes cocotbext-axi's RAM behind Python
coroutines (:mod:`merit.sim.dram`), the model with random stalls for the robustness benches.

The benches print a progress line every ~2 s of wall time (:func:`report_progress`, cocotb side);
``simulate(..., progress=print)`` hands those lines to a callable while the simulation runs.
"""

import dataclasses
import functools
import hashlib
import os
import pickle
import shutil
import threading
import time
from pathlib import Path

from merit.arch import CP_BYTES, RP_BYTES, RP_PORTS
from merit.compile import program_slots  # re-exported: the benches' default
from merit.sim.build import run_bench, sim_build_root
from merit.sim.toolchain import wave_format

__all__ = ["simulate", "tau_for", "top_for", "program_slots", "report_progress", "expected_cycles",
           "cycle_limit", "record_run", "bench_kernel"]



def tau_for(lanes, *, rp_bytes=None, cp_bytes=CP_BYTES, ports=RP_PORTS, instructions=16):
    """The :class:`meritz.tau.Tau` of ``lanes`` lanes (default SRAM sizes: paper §V-A); the same
    component for the same parameters (its Verilog is emitted once, :func:`build.emitted`)."""
    return _component("tau", lanes, None, tuple(rp_bytes or RP_BYTES), cp_bytes, ports,
                      instructions)


def top_for(lanes, taus, *, rp_bytes=None, cp_bytes=CP_BYTES, instructions=16):
    """The :class:`meritz.top.Top` of ``taus`` TAUs of ``lanes`` lanes; the same component for
    the same parameters (its Verilog is emitted once, :func:`build.emitted`)."""
    return _component("top", lanes, taus, tuple(rp_bytes or RP_BYTES), cp_bytes, RP_PORTS,
                      instructions)


@functools.lru_cache(maxsize=8)
def _component(kind, lanes, taus, rp_bytes, cp_bytes, ports, instructions):
    rp0, rp1 = rp_bytes
    if kind == "tau":
        from meritz.tau import Tau
        return Tau(lanes=lanes, rp0_bytes=rp0, rp1_bytes=rp1, cp_bytes=cp_bytes, ports=ports,
                   instructions=instructions)
    from meritz.top import Top
    return Top(lanes=lanes, taus=taus, rp0_bytes=rp0, rp1_bytes=rp1, cp_bytes=cp_bytes,
               instructions=instructions)


def _check_waves(waves):
    """``(path, kind, note)`` of a ``waves`` argument: an ``.fst`` file where FST can be built,
    else the ``.vcd`` file beside it (``note`` says why); a ``.vcd`` file as asked."""
    if waves is None:
        return None, None, None
    if not isinstance(waves, (str, os.PathLike)):
        raise TypeError(f"waves must be the path of an .fst or .vcd file, not {waves!r}")
    path = Path(waves)
    if path.suffix not in (".fst", ".vcd"):
        raise ValueError(f"waves must name an .fst or .vcd file, not {str(path)!r}")
    if path.suffix == ".vcd":
        return path, "vcd", None
    kind, why = wave_format()
    if kind == "vcd":
        return path.with_suffix(".vcd"), "vcd", f"VCD instead of FST: {why}"
    return path, "fst", None


def _check_dram(dram, backpressure):
    if dram is None:
        return "python" if backpressure else "fast"
    if dram not in ("fast", "python"):
        raise ValueError(f"dram must be 'fast' or 'python', not {dram!r}")
    if dram == "fast" and backpressure:
        raise ValueError(f"backpressure ({backpressure}) needs dram='python': the fast DRAM "
                         f"has no random stalls")
    return dram


def _problem_file(problem):
    blob = pickle.dumps(problem)
    folder = sim_build_root() / "problems"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{hashlib.sha1(blob).hexdigest()[:16]}.pkl"
    part = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.part")  # whole,
    part.write_bytes(blob)  # then renamed: parallel runs read it whole
    os.replace(part, path)
    return path


def bench_kernel(cfg):
    """``(problem, kernel)`` of a bench run: the problem :func:`simulate` handed over in ``cfg``
    (its bench configuration), compiled as the hardware of ``cfg`` runs it (on the processor,
    ``cfg["taus"]`` TAUs, which may share an operand's fetches). Every bench compiles here, so
    that both DRAM models and both benches run the same kernel."""
    from merit.compile import compile_problem
    problem = pickle.loads(Path(cfg["problem"]).read_bytes())
    kernel = compile_problem(problem, lanes=cfg["lanes"], shift=cfg.get("shift", 0),
                             rp_bytes=tuple(cfg["rp_bytes"]), cp_bytes=cfg["cp_bytes"],
                             max_outputs=cfg.get("max_outputs"),
                             instructions=cfg.get("instructions", 16),
                             taus=cfg.get("compile_taus") or cfg.get("taus") or 1,
                             share_dims=cfg.get("share_dims"),
                             share_counts=tuple(cfg.get("share_counts", (1, 2))),
                             hold=bool(cfg.get("hold", False)))
    return problem, kernel


class _Tail(threading.Thread):
    """Hands every line appended to ``path`` to ``callback`` until stopped (then drains)."""

    def __init__(self, path, callback):
        super().__init__(daemon=True)
        self.path, self.callback = path, callback
        self.done = threading.Event()

    def run(self):
        with open(self.path) as f:
            while True:
                stopping = self.done.wait(0.2)
                for line in f.readlines():
                    self.callback(line.rstrip("\n"))
                if stopping:
                    return


def simulate(problem, *, lanes=32, taus=None, dram_bytes_per_cycle=8, latency=20, shift=0,
             seed=None, backpressure=0.0, rp_bytes=None, cp_bytes=CP_BYTES, max_outputs=None,
             instructions=None, waves=None, progress=None, register_writes=None, dram=None,
             build_options=None, share_dims=None, share_counts=(1, 2), compile_taus=None,
             hold=False):
    """Run ``problem`` on one TAU (``taus=None``) or on the processor with ``taus`` TAUs.

    Parameters
    ----------
    problem : merit.Problem
    lanes : int
        Lanes per TAU (a power of two).
    taus : int, optional
        None: one TAU driven by the bench. An integer (1..16): :class:`meritz.top.Top` driven
        through its control port.
    dram_bytes_per_cycle, latency : int
        DRAM bandwidth (read and write together) and read latency in cycles.
    shift, max_outputs : int
        As for :func:`merit.compile.compile_problem`.
    seed : int, optional
        Bench seed; random (and printed) when not given.
    backpressure : float
        Probability of a random stall per AXI channel and cycle.
    rp_bytes, cp_bytes : SRAM bytes per TAU (default: 16 KB + 8 KB and 5 KB, paper §V-A).
    instructions : int, optional
        Program slots of a TAU (default: :func:`program_slots`).
    waves : str or path, optional
        Write a waveform of the run to this ``.fst`` or ``.vcd`` file (a separate, traced
        build). Where FST cannot be built (no lz4 / zlib headers), an ``.fst`` request writes
        the ``.vcd`` file beside it instead: ``metrics["waves"]`` is the file written,
        ``metrics["waves_note"]`` says why.
    progress : callable, optional
        Called with each progress line (``[merit] cycle N, tiles done D/T, ...``) while the
        simulation runs.
    dram : {"fast", "python"}, optional
        The DRAM model: ``"fast"`` (inside the Verilator model, :mod:`merit.sim.fast`; the
        default) or ``"python"`` (cocotbext-axi's RAM behind Python coroutines,
        :mod:`merit.sim.dram`; the default where ``backpressure`` asks for random stalls, which
        only it models).
    register_writes : str or path, optional
        With ``taus``: replay this driver log instead of the Python driver's register writes
        (``W OFFSET VALUE`` lines in hexadecimal, as the C driver's host shim prints them; the
        writes up to CTRL.start, then those after done).
    share_dims, share_counts : optional
        With ``taus``: as for :func:`merit.compile.compile_problem` (None: the compiler's
        choice by the model; 1: one operand per group; 2: the processor's two-dimensional
        operand sharing where the compiler's plan shares two operands).
    compile_taus : int, optional
        With ``taus``: compile for this many TAUs instead (its sharing groups; the processor
        cuts groups larger than it has, ``meritz.dispatcher.share_shape``).
    hold : bool
        As for :func:`merit.compile.compile_problem`: footprint reuse (``config["hold"]``).
    build_options : dict, optional
        With the fast DRAM: Verilator build options instead of the defaults, as keywords of
        :func:`merit.sim.fast.build` (``args``, ``opt_fast``, ``public``); the speed benchmark
        measures each option with it. Results do not depend on them.

    Returns ``{"cycles", "utilization", "useful_ops", "read_beats", "write_beats", "dram_busy",
    "compute_bound_cycles", "tiling", "tiles", "sharing", "sim_seconds", "sim_cycles",
    "isa_vs_golden"}``
    (the top adds ``cycles_register``, the CYCLES register; ``dram_sha1`` is a digest of the
    DRAM image after the run, ``sim_cpu_seconds`` the simulator's CPU time, ``build`` the model's
    folder and build time). Three ways are
    compared: the RTL with the ISA interpreter, bit for bit, on inputs over the whole int16
    range (the bench raises :class:`merit.sim.BenchFailure` when an output differs or any byte
    of DRAM outside the outputs changed), and the ISA interpreter with the golden model
    (``problem.run``) on three data sets (:func:`merit.isa.programs.check_golden`;
    ``isa_vs_golden`` lists them as dicts with ``held``; the caller decides what a failed one
    means).
    """
    waves, wave_kind, wave_note = _check_waves(waves)
    dram = _check_dram(dram, backpressure)
    if build_options is not None:
        if dram != "fast":
            raise ValueError(f"build_options apply to the fast DRAM only, not to dram={dram!r}")
        unknown = sorted(set(build_options) - {"args", "opt_fast", "public"})
        if unknown:
            raise ValueError(f"build_options takes args, opt_fast and public, not {unknown}")
    from merit.isa.programs import check_golden
    golden = check_golden(problem, shift=shift)     # the ISA program against the golden model
    rp_bytes = tuple(rp_bytes or RP_BYTES)
    instructions = program_slots(problem, shift) if instructions is None else instructions
    config = {"problem": str(_problem_file(problem)), "lanes": lanes,
              "bytes_per_cycle": dram_bytes_per_cycle, "latency": latency, "shift": shift,
              "backpressure": backpressure, "rp_bytes": list(rp_bytes), "cp_bytes": cp_bytes,
              "max_outputs": max_outputs, "instructions": instructions}
    if share_dims is not None:
        config.update(share_dims=share_dims, share_counts=list(share_counts))
    if compile_taus is not None:
        config["compile_taus"] = compile_taus
    if hold:
        config["hold"] = True
    if taus is None:
        top = tau_for(lanes, rp_bytes=rp_bytes, cp_bytes=cp_bytes, instructions=instructions)
        bench, name = "merit.sim.cocotb_tau", f"tau_n{lanes}"
    else:
        top = top_for(lanes, taus, rp_bytes=rp_bytes, cp_bytes=cp_bytes,
                      instructions=instructions)
        bench, name = "merit.sim.cocotb_top", f"top_n{lanes}_t{taus}"
        config["taus"] = taus
    if register_writes is not None:
        if taus is None:
            raise ValueError("register_writes needs taus: only the processor has registers")
        config["register_writes"] = str(Path(register_writes).resolve())
    if waves is not None:
        config["waves"] = True
    tail = None
    if progress is not None:
        folder = sim_build_root() / "progress"
        folder.mkdir(parents=True, exist_ok=True)
        log = folder / f"{os.getpid()}-{threading.get_ident()}.log"
        log.write_text("")
        config["progress_file"] = str(log)
        tail = _Tail(log, progress)
        tail.start()
    try:
        if dram == "fast":
            from merit.sim.fast import run
            metrics = run(top, config=config, seed=seed, name=name, waves=wave_kind or False,
                          **(build_options or {}))
        else:
            # the processor's bench reads the dispatcher's tile count inside for its progress line
            metrics = run_bench(top, bench=bench, config=config, seed=seed, name=name,
                                waves=wave_kind or False, public=taus is not None)
    finally:
        if tail is not None:
            tail.done.set()
            tail.join()
    metrics["isa_vs_golden"] = [dataclasses.asdict(c) for c in golden]
    if waves is not None:
        dump = Path(metrics.pop("run_dir")) / f"dump.{wave_kind}"
        waves.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(dump, waves)
        metrics["waves"] = str(waves)
        if wave_note:
            metrics["waves_note"] = wave_note
    return metrics


# ---- cocotb side ---------------------------------------------------------------------------

def _duration(seconds):
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds // 60 % 60:02d} min"


def expected_cycles(kernel, cfg, taus=1):
    """The cycles :mod:`merit.perf` predicts for this run (the progress lines' ETA), or None
    where the model cannot say."""
    try:
        from merit.perf import predict
        return predict(kernel, taus=taus, dram_bytes_per_cycle=cfg.get("bytes_per_cycle", 8),
                       latency=cfg.get("latency", 20),
                       rp_bytes=tuple(cfg.get("rp_bytes", RP_BYTES))).cycles
    except (ImportError, ValueError):
        return None


def cycle_limit(cfg, expected):
    """Cycles after which a bench gives up: the config's ``max_cycles``, else four times the
    prediction (at least 2 million)."""
    return cfg.get("max_cycles") or max(2_000_000, 4 * (expected or 0))


async def report_progress(total, done, *, expected=None, in_flight=2, path=None, every_s=2.0,
                          period_ns=10, check_cycles=1000):
    """cocotb coroutine (start it with ``cocotb.start_soon`` when the run starts): every
    ``every_s`` seconds of wall time print ``[merit] cycle N, tiles done D/T, X cycles/s, ETA ...``
    to the simulator's stdout and append it to ``path`` (the bench config's ``progress_file``).

    ``done`` is a callable returning the tiles handed to TAUs so far; the wall clock is looked at
    every ``check_cycles`` simulated cycles (a timer, not a per-cycle callback). The ETA divides
    the cycles left of ``expected`` (:func:`expected_cycles`) by the mean speed so far; without
    it, it assumes that ``in_flight`` of the tiles handed over (about 2 per TAU: one computing,
    one loading) are not finished yet."""
    from cocotb.simtime import get_sim_time
    from cocotb.triggers import Timer

    def now_cycle():
        return int(get_sim_time("ns")) // period_ns

    start = last = time.monotonic()
    first_cycle = last_cycle = now_cycle()
    while True:
        await Timer(check_cycles * period_ns, "ns")
        now = time.monotonic()
        if now - last < every_s:
            continue
        cycle = now_cycle()
        tiles = done()
        rate = (cycle - last_cycle) / (now - last)
        if expected:
            left = expected - (cycle - first_cycle)
            mean_rate = (cycle - first_cycle) / (now - start)
            eta = _duration(left / mean_rate) if left > 0 else "any moment"
        else:
            finished = tiles - in_flight
            eta = (_duration((now - start) * (total - finished) / finished) if finished > 0
                   else "unknown")
        line = (f"[merit] cycle {cycle}, tiles done {tiles}/{total}, {rate:.0f} cycles/s, "
                f"ETA {eta}")
        print(line, flush=True)
        if path:
            with open(path, "a") as f:
                f.write(line + "\n")
        last, last_cycle = now, cycle


def record_run(dram, kernel, cfg, *, alus, seconds, cpu_seconds=None):
    """Record the metrics of a finished, checked run (cocotb side; ``benchlib.record_metric``).

    ``alus``: lanes x TAUs; ``seconds``: wall time of the simulation itself; ``cpu_seconds``: the
    CPU time the simulator process spent on it (on a shared machine the steadier measure).
    Cycles run from the first DRAM request to the last write response (``docs/perf.md``)."""
    from merit.sim.benchlib import record_metric

    span = dram.cycles
    record_metric("cycles", span)
    record_metric("utilization", round(kernel.useful_ops / (span * alus), 4))
    record_metric("useful_ops", kernel.useful_ops)
    record_metric("read_beats", dram.read_beats)
    record_metric("write_beats", dram.write_beats)
    # share of the DRAM's beats (8 bytes each, one per cycle at 8 B/cycle) that moved data
    per_cycle = cfg.get("bytes_per_cycle", 8) / 8
    record_metric("dram_busy", round((dram.read_beats + dram.write_beats) / (span * per_cycle), 4))
    record_metric("compute_bound_cycles", -(-kernel.useful_ops // alus))
    record_metric("tiling", f"p={kernel.tiling.p_tile} a={kernel.tiling.a_tile}")
    record_metric("tiles", len(kernel.tiles))
    record_metric("sharing", kernel.shares)
    record_metric("sim_cycles", dram.cycle)
    # the whole DRAM image after the run: both DRAM models must leave the same bytes
    record_metric("dram_sha1", hashlib.sha1(bytes(dram.read(0, kernel.dram_bytes))).hexdigest())
    record_metric("sim_seconds", round(seconds, 2))
    if cpu_seconds is not None:
        record_metric("sim_cpu_seconds", round(cpu_seconds, 2))
    if cfg.get("waves"):
        record_metric("run_dir", os.getcwd())
