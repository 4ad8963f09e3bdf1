"""The fast simulation path: the DRAM inside the Verilator model, Python out of the cycle loop.

:func:`build` wraps a TAU or the processor in a generated SystemVerilog top (``<name>_sim``) with
the fast DRAM (``merit_dram.sv`` + ``merit_dram.cpp``: the Python model's AXI4 timing and
accounting, memory loaded and dumped as one binary file) and, around a TAU, a tile feeder (the
tile list loaded as one file). The emitted MERIT-z Verilog is included unchanged. The model is
built without ``--public-flat-rw``: only the wrapper's own ports are visible to cocotb, so
Verilator optimises the design as a whole. :func:`run` runs the cocotb bench
``merit.sim.cocotb_fast`` on it; the bench drives the control port, then waits for ``done`` /
``irq`` under a watchdog, reading the model only every few thousand cycles for the progress line.

:class:`FastDram` is the bench's view of the DRAM (the interface of :class:`dram.Dram` that the
checks use: ``read``, ``cycles``, ``read_beats``, ``outside``...).
"""

import hashlib
import json
import os
from pathlib import Path

from merit.sim.build import (
    WAIVERS,
    _locked,
    emitted,
    ports_public,
    run_bench,
    runner,
    sim_build_root,
    timed,
    trace_args,
)
from merit.sim.toolchain import verilator_env

__all__ = ["FAST_ARGS", "OPT_FAST", "build", "run", "wrapper_verilog", "FastDram"]

HERE = Path(__file__).resolve().parent
DRAM_SV = HERE / "merit_dram.sv"
DRAM_CPP = HERE / "merit_dram.cpp"
#: Verilator options of the fast path (beside the waiver file): X values are settled the fastest
#: way (the robustness benches keep the Python path's ``unique``); results are identical because
#: a correct design never reads an unset value (the cross-check test holds both paths against
#: each other).
FAST_ARGS = ["-Wall", "--x-assign", "fast", "--x-initial", "fast", "-Wno-fatal"]
#: C++ optimisation of the model's per-cycle code (Verilator's default is -Os).
OPT_FAST = "-O2"
#: The cocotb module of this path.
BENCH = "merit.sim.cocotb_fast"


def _escaped(name):
    return f"\\{name} "


#: The control port's channels: (name, fields, towards the DUT). The wrapper puts a register slice
#: on each, so that no input of the model reaches the DUT's logic without a flip-flop between.
_AXIL_CHANNELS = (("aw", ("awaddr", "awprot"), True), ("w", ("wdata", "wstrb"), True),
                  ("ar", ("araddr", "arprot"), True), ("b", ("bresp",), False),
                  ("r", ("rdata", "rresp"), False))


def _decl(port, direction=None):
    return (f"{direction or ('input' if port['dir'] == 'in' else 'output')} logic "
            f"[{port['width'] - 1}:0] {_escaped(port['name'])}")


def _control_slices(by_name):
    """``(ports, lines, connections)`` of the register slices between the wrapper's AXI4-Lite
    port (the bench's side) and the DUT's ``s_axil``: each slice holds one transfer and takes
    the next once it is passed on (half the throughput, and no path from an input to the DUT)."""
    ports, lines, connections = [], [], []
    for channel, fields, inbound in _AXIL_CHANNELS:
        valid, ready = f"s_axil__{channel}valid", f"s_axil__{channel}ready"
        names = [f"s_axil__{f}" for f in fields]
        lines.append(f"    logic {channel}_full;")
        for name in names:
            lines.append(f"    logic [{by_name[name]['width'] - 1}:0] {name}_q;")
        if inbound:     # bench -> slice -> DUT
            ports += [_decl(by_name[valid]), _decl(by_name[ready])] + \
                [_decl(by_name[n]) for n in names]
            lines += [f"    logic {channel}_taken;",
                      f"    assign {_escaped(ready)} = !{channel}_full;"]
            connections += [f".{valid}({channel}_full)", f".{ready}({channel}_taken)"]
            connections += [f".{n}({n}_q)" for n in names]
            loads = " ".join(f"{n}_q <= {_escaped(n)};" for n in names)
            lines += [
                "    always @(posedge clk)",
                f"        if (rst_q) {channel}_full <= 0;",
                f"        else if ({channel}_full) {channel}_full <= !{channel}_taken;",
                f"        else if ({_escaped(valid)}) begin {channel}_full <= 1; {loads} end"]
        else:           # DUT -> slice -> bench
            ports += [_decl(by_name[valid]), _decl(by_name[ready])] + \
                [_decl(by_name[n]) for n in names]
            lines += [f"    logic {channel}_offered;"]
            lines += [f"    logic [{by_name[n]['width'] - 1}:0] {n}_d;" for n in names]
            connections += [f".{valid}({channel}_offered)", f".{ready}(!{channel}_full)"]
            connections += [f".{n}({n}_d)" for n in names]
            loads = " ".join(f"{n}_q <= {n}_d;" for n in names)
            lines += [
                f"    assign {_escaped(valid)} = {channel}_full;",
                *(f"    assign {_escaped(n)} = {n}_q;" for n in names),
                "    always @(posedge clk)",
                f"        if (rst_q) {channel}_full <= 0;",
                f"        else if ({channel}_full) {channel}_full <= !{_escaped(ready)};",
                f"        else if ({channel}_offered) begin {channel}_full <= 1; {loads} end"]
    return ports, lines, connections


def wrapper_verilog(module, metadata, *, tau):
    """SystemVerilog of ``<module>_sim``: the component ``module`` (its port ``metadata`` from
    :func:`meritz.emit.to_verilog`) with its ``m_axi`` port on the fast DRAM.

    No input of the wrapper drives the DUT's logic directly (Verilator evaluates the logic that
    inputs reach at every evaluation, twice a clock cycle, instead of once after the clock edge):
    ``rst`` and a TAU's ``config`` / ``luts`` pass through a flip-flop, the processor's control
    port through register slices. A TAU's ``tiles`` come from the tile feeder. Every other port
    passes through."""
    ports = metadata["ports"]
    by_name = {p["name"]: p for p in ports}
    id_width = by_name["m_axi__arid"]["width"]
    lines = [f"module {module}_sim (",
             "    input logic clk, input logic rst,",
             "    input logic dram_load, input logic dram_dump,",
             "    input logic [7:0] dram_bytes_per_cycle, input logic [15:0] dram_latency,",
             "    output logic [63:0] dram_size, output logic [63:0] dram_cycle,",
             "    output logic [63:0] dram_first_request,",
             "    output logic [63:0] dram_last_response,",
             "    output logic [63:0] dram_last_handshake,",
             "    output logic [63:0] dram_request_cycles,",
             "    output logic [31:0] dram_read_beats, output logic [31:0] dram_write_beats,",
             "    output logic [31:0] dram_reads_owed, output logic [31:0] dram_writes_owed,",
             "    output logic [31:0] dram_outside_count, output logic [31:0] dram_outside_addr,",
             "    output logic dram_outside_write,",
             "    output logic [31:0] tiles_taken,"]
    if tau:
        lines += ["    input logic tiles_start, output logic [31:0] tiles_total,",
                  "    output logic done,"]
    rest = [p for p in ports if p["name"] not in ("clk", "rst")
            and not p["name"].startswith(("m_axi__", "s_axil__"))
            and not (tau and p["name"].startswith("tiles__"))]
    body, connections = ["    logic rst_q;", "    always @(posedge clk) rst_q <= rst;"], []
    decls = [_decl(p) for p in rest]
    for p in rest:
        if p["dir"] == "in":
            name = _escaped(p["name"])
            body += [f"    logic [{p['width'] - 1}:0] {p['name']}_q;",
                     f"    always @(posedge clk) {p['name']}_q <= {name};"]
            connections.append(f".{name}({p['name']}_q)")
        else:
            connections.append(f".{_escaped(p['name'])}({_escaped(p['name'])})")
    if "s_axil__awvalid" in by_name:
        slice_ports, slice_lines, slice_connections = _control_slices(by_name)
        decls += slice_ports
        body += slice_lines
        connections += slice_connections
    lines.append(",\n".join(f"    {d}" for d in decls))
    lines.append(");")
    lines += body
    axi = [p for p in ports if p["name"].startswith("m_axi__")]
    for p in axi:
        lines.append(f"    logic [{p['width'] - 1}:0] {p['name']};")
    connections = [".clk(clk)", ".rst(rst_q)"] + connections
    connections += [f".{p['name']}({p['name']})" for p in axi]
    if tau:
        payload = by_name["tiles__payload"]["width"]
        lines += [f"    logic [{payload - 1}:0] tiles__payload;",
                  "    logic tiles__valid, tiles__ready;"]
        connections += [".tiles__payload(tiles__payload)", ".tiles__valid(tiles__valid)",
                        ".tiles__ready(tiles__ready)"]
    lines.append(f"    {module} dut (" + ", ".join(connections) + ");")
    dram = [".clk(clk)", ".rst(rst_q)", ".bytes_per_cycle(dram_bytes_per_cycle)",
            ".latency(dram_latency)", ".load(dram_load)", ".dump(dram_dump)"]
    dram += [f".{p['name'][len('m_axi__'):]}({p['name']})" for p in axi]
    dram += [f".{stat}(dram_{stat})" for stat in (
        "size", "cycle", "first_request", "last_response", "last_handshake", "request_cycles",
        "read_beats", "write_beats", "reads_owed", "writes_owed", "outside_count",
        "outside_addr", "outside_write")]
    lines.append(f"    merit_sim_dram #(.ID_W({id_width})) dram (" + ", ".join(dram) + ");")
    if tau:
        axes = payload // 16
        lines += [
            '    import "DPI-C" function int merit_tiles_load(input string path);',
            '    import "DPI-C" function int merit_tile_coordinate(input int tile,',
            '                                                      input int axis);',
            "    string tiles_path;",
            "    initial if (!$value$plusargs(\"merit_tiles=%s\", tiles_path)) "
            "tiles_path = \"tiles.bin\";",
            "    logic running;",
            f"    function automatic logic [{payload - 1}:0] tile_at(input int t);",
            f"        for (int a = 0; a < {axes}; a++) "
            "tile_at[a * 16 +: 16] = 16'(merit_tile_coordinate(t, a));",
            "    endfunction",
            "    always @(posedge clk) begin",
            "        if (rst_q) begin",
            "            running <= 0; tiles_taken <= 0; tiles_total <= 0; tiles__payload <= 0;",
            "        end else if (tiles_start) begin",
            "            running <= 1; tiles_taken <= 0;",
            "            tiles_total <= merit_tiles_load(tiles_path);",
            "            tiles__payload <= tile_at(0);",
            "        end else if (tiles__valid && tiles__ready) begin",
            "            tiles_taken <= tiles_taken + 1;",
            "            tiles__payload <= tile_at(int'(tiles_taken) + 1);",
            "        end",
            "    end",
            "    assign tiles__valid = running && tiles_taken < tiles_total;",
            "    assign done = running && tiles_taken == tiles_total && idle;",
        ]
    else:
        lines.append("    assign tiles_taken = dut.dispatcher.count;")
    lines.append("endmodule")
    return "\n".join(lines) + "\n"


def _public_vlt(wrapper):
    return (ports_public(wrapper)
            + f'lint_off -file "*/{wrapper}.sv"\n'
            + f'lint_off -file "*/{DRAM_SV.name}"\n')


def build(top, *, name, waves=False, args=None, opt_fast=None, public=False):
    """Emit ``top`` (a :class:`meritz.tau.Tau` or :class:`meritz.top.Top`), wrap it and build the
    fast model; return ``(build_dir, wrapper_module, metadata)``. Cached like
    :func:`merit.sim.build.build` (by a hash of every source and option), with its build time
    recorded (:func:`merit.sim.build.build_time`). ``waves``: as there (False, True / ``"fst"``,
    ``"vcd"``); ``args``: Verilator options instead of :data:`FAST_ARGS`; ``opt_fast``: the C++
    optimisation instead of :data:`OPT_FAST`; ``public``: every signal of the design visible
    (cocotb's ``--public-flat-rw``, as its runner builds by default) instead of the wrapper's
    ports only."""
    tau = "tiles" in top.signature.members
    text, metadata = emitted(top, name)
    wrapper = f"{name}_sim"
    wrapper_text = wrapper_verilog(name, metadata, tau=tau)
    args = list(FAST_ARGS if args is None else args) + trace_args(waves)
    opt_fast = OPT_FAST if opt_fast is None else opt_fast
    parts = [text, wrapper_text, DRAM_SV.read_text(), DRAM_CPP.read_text(), WAIVERS.read_text(),
             opt_fast, *args] + (["--public-flat-rw"] if public else [])
    digest = hashlib.sha1("\0".join(parts).encode()).hexdigest()[:12]
    build_dir = sim_build_root() / f"{name}-fast-{digest}"
    os.environ.update(verilator_env())
    with _locked(build_dir.with_suffix(".lock")):
        if not (build_dir / wrapper).is_file():
            build_dir.mkdir(parents=True, exist_ok=True)
            source = build_dir / f"{name}.v"
            source.write_text(text)
            (build_dir / f"{name}.json").write_text(json.dumps(metadata, indent=2) + "\n")
            wrapper_file = build_dir / f"{wrapper}.sv"
            wrapper_file.write_text(wrapper_text)
            vlt = build_dir / "public.vlt"
            vlt.write_text(_public_vlt(wrapper))
            with timed(build_dir):
                runner(opt_fast=opt_fast, public=public).build(
                    sources=[source, DRAM_SV, wrapper_file, vlt], hdl_toplevel=wrapper,
                    build_dir=build_dir, build_args=[*args, str(WAIVERS), str(DRAM_CPP)],
                    waves=bool(waves), log_file=build_dir / "build.log")
    return build_dir, wrapper, metadata


def run(top, *, config, name, seed=None, waves=False, args=None, opt_fast=None, public=False):
    """Run the fast bench (:mod:`merit.sim.cocotb_fast`) on the model of ``top``; return the
    metrics it recorded.

    ``config`` is the bench configuration of :func:`merit.sim.simulate` (``problem``, ``lanes``,
    ``taus``...); ``args``, ``opt_fast`` and ``public`` as for :func:`build`. Raises
    :class:`merit.sim.build.BenchFailure` naming the failed test."""
    def builder(top, *, name, waves):
        return build(top, name=name, waves=waves, args=args, opt_fast=opt_fast, public=public)
    return run_bench(top, bench=BENCH, config=config, seed=seed, waves=waves, name=name,
                     builder=builder)


class FastDram:
    """The fast DRAM seen from the cocotb bench: load the image, dump it, read the accounting.

    ``dut`` is the wrapper (``<name>_sim``); handles are looked up once."""

    def __init__(self, dut, *, bytes_per_cycle=8, latency=20):
        self.dut = dut
        dut.dram_bytes_per_cycle.value = bytes_per_cycle
        dut.dram_latency.value = latency
        dut.dram_load.value = 0
        dut.dram_dump.value = 0
        self._stats = {name: getattr(dut, f"dram_{name}") for name in (
            "size", "cycle", "first_request", "last_response", "last_handshake", "read_beats",
            "write_beats", "reads_owed", "writes_owed", "outside_count", "outside_addr",
            "outside_write", "request_cycles")}
        self._image = None

    def _get(self, name):
        return int(self._stats[name].value)

    def write(self, address, data):
        """Stage the whole image (``address`` 0) for the next :meth:`load`."""
        if address != 0:
            raise ValueError(f"the fast DRAM is loaded as one image at address 0, not at "
                             f"{address:#x}")
        Path("dram_in.bin").write_bytes(bytes(data))

    async def load(self):
        """Load the staged image into the model (one clock edge; during reset is fine)."""
        from cocotb.triggers import RisingEdge
        self.dut.dram_load.value = 1
        await RisingEdge(self.dut.clk)
        self.dut.dram_load.value = 0
        await RisingEdge(self.dut.clk)      # the model read the file at the edge before
        Path("dram_in.bin").unlink()

    async def dump(self):
        """Read the model's memory back (one clock edge)."""
        from cocotb.triggers import RisingEdge
        self.dut.dram_dump.value = 1
        await RisingEdge(self.dut.clk)
        self.dut.dram_dump.value = 0
        await RisingEdge(self.dut.clk)
        path = Path("dram_out.bin")
        self._image = path.read_bytes()
        path.unlink()

    def read(self, address, length):
        if self._image is None:
            raise RuntimeError("dump() the fast DRAM before reading it")
        return self._image[address:address + length]

    @property
    def cycle(self):
        return self._get("cycle")

    @property
    def cycles(self):
        """Cycles from the first DRAM request to the last write response."""
        if not self._get("last_response"):
            return None
        return self._get("last_response") - self._get("first_request")

    @property
    def read_beats(self):
        return self._get("read_beats")

    @property
    def write_beats(self):
        return self._get("write_beats")

    @property
    def outside(self):
        """``[(kind, address)]`` of the first access outside the memory, repeated for the
        count (the model keeps the first one only)."""
        n = self._get("outside_count")
        if not n:
            return []
        kind = "write" if self._get("outside_write") else "read"
        return [(kind, self._get("outside_addr"))] * n

    def describe(self):
        """The DRAM's state in words (for a watchdog's message)."""
        return (f"DRAM at cycle {self.cycle}: {self._get('reads_owed')} read and "
                f"{self._get('writes_owed')} write bursts owed an answer, last handshake at "
                f"cycle {self._get('last_handshake')}, {self._get('outside_count')} accesses "
                f"outside the memory")
