"""The SIMD array's two execute stages (Amaranth simulator, 8 lanes): an instruction whose ``b`` /
``c`` is the previous instruction's result waits one cycle (interlock) and still computes the
golden model's value; chains through ``a`` (MAC, max) and ``b`` of ``out`` run back to back;
``LOOKUP`` stays ``merit.perf.LOOKUP_E1_CYCLES`` cycles in the first execute stage, so the
instruction behind it waits that many cycles less one more.

Each program runs as a stream of EXEC commands, one offered per cycle; every ``out`` vector is
compared with :func:`merit.isa.step`, and the cycles between the first and the last accepted
command are counted.
"""

import numpy as np
import pytest
from amaranth.sim import Simulator

from merit.isa import LUT_ENTRIES, N_REGS, assemble, decode, step
from merit.perf import LOOKUP_E1_CYCLES
from meritz.tau.cp.simd import Command, SimdArray

LANES = 8
LATENCY = 3     # cycles from a command's acceptance to its out vector: decode, issue, E1 (+ E2)
CONSTS = (-7, 1 << 20, 300, -(1 << 31))


def _tables(rng):
    return [[int(v) for v in rng.integers(-32768, 32768, LUT_ENTRIES)] for _ in range(2)]


def _run(lines, *, seed=0, out_ready=None):
    """Run ``lines`` (assembler syntax) once on every lane; returns (outs, golden outs, cycles
    from the first to the last accepted command, the accepting cycles). ``out_ready(cycle)``
    drives ``out.ready`` (always 1 by default)."""
    rng = np.random.default_rng(seed)
    luts = _tables(rng)
    words = list(assemble("loop:\n" + "\n".join(lines), luts=luts).words)
    dut = SimdArray(lanes=LANES)
    # the golden model, one instruction at a time, with fresh RP elements per reading instruction
    regs = np.zeros((N_REGS, LANES), dtype=np.int64)
    rp = {0: [], 1: []}
    golden = []
    for word in words:
        ins = decode(word)
        el = {}
        for port in (0, 1):
            if ins.reads_rp(port):
                v = rng.integers(-32768, 32768, LANES).astype(np.int64)
                v[:2] = (-32768, 32767)
                rp[port].append(v)
                el[port] = v
        out = step(ins, regs, i0=el.get(0), i1=el.get(1), consts=CONSTS, luts=luts)
        if out is not None:
            golden.append([int(x) for x in np.broadcast_to(out, (LANES,))])
    got, accepted, outs = [], [], []

    async def bench(ctx):
        ctx.set(dut.config.consts, list(CONSTS))
        ctx.set(dut.config.luts, luts)
        queues = {0: list(rp[0]), 1: list(rp[1])}
        pending = list(words)
        cycle = 0
        while (pending or ctx.get(dut.busy)) and cycle < 10 * len(words) + 20:
            if pending:
                ctx.set(dut.cmd.valid, 1)
                ctx.set(dut.cmd.payload.kind, Command.EXEC)
                ctx.set(dut.cmd.payload.word.as_value(), pending[0])
            else:
                ctx.set(dut.cmd.valid, 0)
            for port in (0, 1):
                rpp = getattr(dut, f"rp{port}")
                ctx.set(rpp.valid, bool(queues[port]))
                if queues[port]:
                    ctx.set(rpp.payload, [int(x) for x in queues[port][0]])
            ctx.set(dut.out.ready, 1 if out_ready is None else out_ready(cycle))
            await ctx.delay(1e-9)
            if ctx.get(dut.out.valid) and ctx.get(dut.out.ready):
                got.append([int(x) for x in ctx.get(dut.out.payload)])
                outs.append(cycle)
            if pending and ctx.get(dut.cmd.ready):
                pending.pop(0)
                accepted.append(cycle)
            for port in (0, 1):         # an RP element is taken when its instruction issues
                if ctx.get(getattr(dut, f"rp{port}").ready):
                    queues[port].pop(0)
            await ctx.tick()
            cycle += 1
        assert not pending, f"{len(pending)} commands not accepted"
        assert not ctx.get(dut.error)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    # an instruction issues LATENCY - 1 cycles after it is accepted (the decode register) and
    # its out vector leaves E2 two cycles later: the issue cycles from the first instruction to
    # the last (an out) are the cycles from the first acceptance to the last out vector, less
    # the latency
    cycles = outs[-1] - accepted[0] + 1 - LATENCY if outs else None
    return got, golden, cycles, accepted


def test_interlock_b_c_read_the_previous_result():
    lines = [
        "add r1, 0, i0, k1 >> 3",        # r1 = i0 + k1 >> 3
        "sub r2, k0, r1, i1 >> 1",       # b = r1 (previous): waits
        "mac r3, r2, r2, r2 >> 1",       # a, b, c = r2 (previous): waits once
        "lut r4, 7, r3, k2, t1 >> 4",    # b = r3: waits
        "lut r5, r4, i0, r4, t0 >> 2",   # behind a lut, c = r4: its E1 cycles and one
        "out r5, 0 >> 1",                # behind a lut, a = r5: forwarded, its E1 cycles
        "l1 r6, 1, i1, r5",              # c = r5 (two back): no wait
        "sel r7, r6, r5, r6",            # a and c = r6: waits
        "max r0, r7, r7",                # b = r7: waits
        "min r1, r0, r6 >> 2",           # a = r0: no wait
        "out i0, r1 >> 3",               # b of out = r1 (previous): forwarded, no wait
        "and r2, i1, r1",                # b = r1 (two back, out between): no wait
        "xor r3, r2, k3",
        "or r4, i0, r3 >> 31",           # b = r3: or commutes, swapped
        "add r5, r4, r4, r4",            # b, c = r4: waits
        "out r5, r4 >> 2",
    ]
    got, golden, cycles, _ = _run(lines, seed=1)
    assert got == golden
    waits = 7 + 2 * (LOOKUP_E1_CYCLES - 1)
    assert cycles == len(lines) + waits, (cycles, len(lines), waits)


def test_commuting_operands_swap_instead_of_waiting():
    lines = [
        "add r1, 0, i0, i1",
        "max r0, r2, r1 >> 3",           # b = r1 (previous), a = r2: swapped, no wait
        "min r3, i1, r0",                # b = r0: swapped
        "and r4, k1, r3 >> 1",           # swapped
        "or r5, r4, r4",                 # a and b = r4: waits
        "xor r6, i0, r5",                # swapped
        "add r7, r1, r6, i0",            # s = 0: swapped
        "sub r2, k0, r7, r1",            # s = 0: swapped
        "add r3, k3, r2, i1 >> 1",       # s = 1: waits
        "sub r4, 3, r3, r3",             # b and c = r3: waits
        "sel r5, i1, r4, r3",            # sel does not commute: waits
        "max r6, r5, r5",                # a and b = r5: waits
        "mac r7, r0, r6, i0",            # waits
        "out r7, r6",
        "out r6, r7 >> 2",
    ]
    got, golden, cycles, _ = _run(lines, seed=4)
    assert got == golden
    waits = 6
    assert cycles == len(lines) + waits, (cycles, len(lines), waits)


@pytest.mark.parametrize("seed", [2, 3])
def test_mac_and_max_chains_run_back_to_back(seed):
    lines = (["add r0, 0, 0, 0"]
             + ["mac r0, r0, i0, i1"] * 12
             + ["out r0, k2 >> 9", "add r1, 0, k0, 0"]
             + ["max r1, r1, i0"] * 6
             + ["min r1, r1, i1 >> 1", "out r1, 0", "mac r0, r0, i0, i0 >> 30", "out r0, r1"])
    got, golden, cycles, _ = _run(lines, seed=seed)
    assert got == golden
    assert cycles == len(lines)


def test_lookup_stays_in_e1():
    lines = [
        "add r1, 0, i0, k2",
        "lut r2, r1, r1, i1, t0 >> 3",   # a = r1 forwarded (taken in the lut's first cycle);
                                         # b = r1: waits
        "lut r3, 5, i0, k0, t1",         # behind a lut: waits for its E1 cycles
        "lut r4, r3, i1, 0, t0 >> 1",    # behind a lut: the same (a = r3 forwarded)
        "lut r5, 0, r4, i0, t1 >> 12",   # behind a lut, b = r4: one cycle more
        "mac r6, r5, r5, i1 >> 2",       # behind a lut, a and b = r5: one cycle more
        "lut r7, r6, k1, r6, t0 >> 31",  # c = r6: waits one cycle
        "add r0, r7, r7, 0",             # behind a lut, s = 0, b = r7 and a = r7: one more
        "lut r1, r2, i0, i1, t1 >> 5",   # a = r2 (older): no wait
        "out r1, r3 >> 1",               # behind a lut, a = r1: its E1 cycles
        "lut r2, r1, r0, k3, t0 >> 20",  # no wait
        "out i0, r2 >> 2",               # behind a lut, b of out = r2: its E1 cycles
        "out r2, r1",
    ]
    got, golden, cycles, _ = _run(lines, seed=5)
    assert got == golden
    lut = LOOKUP_E1_CYCLES - 1          # the cycles behind a lut
    waits = 1 + lut + lut + (lut + 1) + (lut + 1) + 1 + (lut + 1) + 0 + lut + 0 + lut
    assert cycles == len(lines) + waits, (cycles, len(lines), waits)


def _random_lines(rng, count):
    """Legal instructions drawn so that consecutive ones often share registers."""
    ops = ["add", "sub", "l1", "mac", "max", "min", "sel", "and", "or", "xor", "lut", "out"]
    weights = np.array([1, 1, 1, 2, 1, 1, 1, 1, 1, 1, 4, 3], dtype=float)
    regs = [f"r{k}" for k in range(4)]          # few registers: many back-to-back hazards
    srcs = regs + ["i0", "i1", "k0", "k2", "3", "-5"]
    lines = []
    for _ in range(count):
        op = rng.choice(ops, p=weights / weights.sum())
        d, a, b, c = rng.choice(regs), rng.choice(srcs), rng.choice(srcs), rng.choice(srcs)
        s = int(rng.choice([0, 0, 1, 3, 9, 31]))
        if op == "out":
            lines.append(f"out {a}, {b} >> {s}")
        elif op == "lut":
            lines.append(f"lut {d}, {a}, {b}, {c}, t{rng.integers(2)} >> {s}")
        elif op in ("max", "min", "and", "or", "xor"):
            lines.append(f"{op} {d}, {a}, {b} >> {s}")
        else:
            lines.append(f"{op} {d}, {a}, {b}, {c} >> {s}")
    return lines


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_random_lookup_programs_match_the_golden_model_and_perf(seed):
    """Random programs rich in LOOKUPs and hazards: bit-exact, and without backpressure the
    cycles are the instructions plus :func:`merit.perf.interlocked` of every adjacent pair."""
    from merit.perf import interlocked

    rng = np.random.default_rng(seed)
    lines = _random_lines(rng, 60) + ["out r0, r1"]     # the last out ends the count
    got, golden, cycles, _ = _run(lines, seed=seed)
    assert got == golden
    ins = [decode(w) for w in assemble("loop:\n" + "\n".join(lines),
                                       luts=_tables(np.random.default_rng(0))).words]
    waits = sum(interlocked(x, y) for x, y in zip(ins, ins[1:], strict=False))
    assert waits >= 20                            # the draw does exercise the interlocks
    assert cycles == len(lines) + waits, (cycles, len(lines), waits)


@pytest.mark.parametrize("seed", [21, 22])
def test_random_lookup_programs_with_out_backpressure(seed):
    rng = np.random.default_rng(seed)
    lines = _random_lines(rng, 50)
    pattern = rng.random(2000) < 0.6
    got, golden, _, _ = _run(lines, seed=seed, out_ready=lambda cycle: int(pattern[cycle]))
    assert len(golden) > 3
    assert got == golden


def _waits(lines):
    from merit.perf import interlocked

    ins = [decode(w) for w in assemble("loop:\n" + "\n".join(lines),
                                       luts=_tables(np.random.default_rng(0))).words]
    return sum(interlocked(x, y) for x, y in zip(ins, ins[1:], strict=False))


@pytest.mark.parametrize("seed", [31, 32])
def test_shift_in_e2_mac_chains_results_as_b_c_and_wide_values(seed):
    """E1 ends at the MAC product (or b + c, b - c, |b - c|, b) and E2 shifts it in front of its
    adder: MAC chains with every kind of shift amount run back to back and match the golden
    model; a MAC result read as ``b`` / ``c`` right behind waits one cycle (and as ``b`` of a
    commuting LOGIC or of ``out`` none); the products at int16's limits (``sat16`` of values
    beyond it, -32768 * -32768 = 2**30) and 33-bit sums and differences shifted by up to 31."""
    lines = ["add r0, 0, 0, 0", "add r1, 0, k1, k1"]
    for s in (0, 1, 7, 15, 16, 30, 31):
        lines += [f"mac r0, r0, i0, i1 >> {s}", f"mac r0, r0, i0, i0 >> {s}",
                  f"mac r0, r0, r1, k3 >> {s}",        # sat16 of 2**21 and of -2**31
                  "out r0, 0 >> 16", "out r0, 0 >> 4"]  # sat16 hides the upper bits
    lines += [
        "mac r2, 0, i0, i0 >> 30",         # -32768 * -32768 >> 30 = 1 in lane 0
        "mac r3, r2, r2, r2 >> 0",         # b and c = r2 (previous MAC): waits
        "mac r1, 5, i1, r3 >> 2",          # c = r3: waits
        "max r2, i0, r1 >> 1",             # b = r1: swapped (LOGIC's b >> s in E2)
        "mac r3, 0, r2, k3 >> 31",         # b = r2 (a LOGIC result): waits
        "out i1, r3 >> 4",                 # b of out = r3: forwarded
        "out r3, 0 >> 16",
        "add r0, k3, k3, k3 >> 1",         # b + c = -2**32 (33 bits) >> 1
        "out r0, 0 >> 16",
        "sub r1, r0, k1, k3 >> 7",         # 2**20 + 2**31 (33 bits) >> 7
        "out r1, 0 >> 16",
        "l1 r2, r1, k3, k1 >> 2",          # |-2**31 - 2**20| (34 bits signed) >> 2
        "out r2, 0 >> 16",
        "l1 r3, r2, k3, k1",               # not shifted: wraps
        "out r3, 0 >> 16",
        "xor r0, r3, r2 >> 5",             # LOGIC after l1
        "out r0, 0 >> 16",
        "and r1, r0, k3 >> 31",
        "sel r2, r1, r0, r3 >> 9",         # a = r1: forwarded
        "out r2, r1 >> 1",
        "out r3, r0",
        "mac r0, r1, r2, r3 >> 16",
        "out r0, r2 >> 9",
    ]
    got, golden, cycles, _ = _run(lines, seed=seed)
    assert got == golden
    waits = _waits(lines)
    assert waits == 3                            # the three b / c hazards above
    assert cycles == len(lines) + waits, (cycles, len(lines), waits)
