"""Fixed point bit-exact with MERIT-z: the problem's ISA program as the kernel's strategy bodies.

:func:`isa_body` translates the MERIT-z program of a problem (``merit.isa.programs.program_for``:
its Pre, Loop and Post sections, constants and lookup tables) into the C bodies the code generator
puts in ``struct Strat``: one statement per instruction, registers ``r0..r7`` as the state, the
operands read by the RP ports passed as the stage inputs ``in<k>``.  Every instruction calls a
helper of :data:`PRELUDE` that computes what ``docs/isa.md`` specifies (64-bit exact sums, wrap to
32 bits, arithmetic shifts, the multiplier's 16-bit saturation, the saturating ``out``), so a
quantized layer run on the GPU gives the bits of the golden ISA model and of the RTL.

The statements use only assignments, integer literals and calls of the ``merit_*`` helpers, so the
same text runs as Python on numpy arrays (the CPU test emulates it against the ISA interpreter).
"""

__all__ = ["PRELUDE", "isa_body", "SECTIONS", "random_inputs"]

#: Device helpers of the translated instructions (arguments are 32-bit values in 64-bit ints).
PRELUDE = r"""
__device__ __forceinline__ long long merit_wrap(long long x) { return (long long)(int)(unsigned)x; }
__device__ __forceinline__ long long merit_sat16(long long x) {
    return x < -32768 ? -32768 : (x > 32767 ? 32767 : x);
}
__device__ __forceinline__ long long merit_add(long long a, long long b, long long c, int s) {
    return merit_wrap(a + ((b + c) >> s));
}
__device__ __forceinline__ long long merit_sub(long long a, long long b, long long c, int s) {
    return merit_wrap(a + ((b - c) >> s));
}
__device__ __forceinline__ long long merit_l1(long long a, long long b, long long c, int s) {
    long long d = b - c;
    return merit_wrap(a + ((d < 0 ? -d : d) >> s));
}
__device__ __forceinline__ long long merit_mac(long long a, long long b, long long c, int s) {
    return merit_wrap(a + ((merit_sat16(b) * merit_sat16(c)) >> s));
}
__device__ __forceinline__ long long merit_max(long long a, long long b, int s) {
    return merit_wrap((a > b ? a : b) >> s);
}
__device__ __forceinline__ long long merit_min(long long a, long long b, int s) {
    return merit_wrap((a < b ? a : b) >> s);
}
__device__ __forceinline__ long long merit_sel(long long a, long long b, long long c, int s) {
    return merit_wrap((a != 0 ? b : c) >> s);
}
__device__ __forceinline__ long long merit_and(long long a, long long b, int s) {
    return merit_wrap((a & b) >> s);
}
__device__ __forceinline__ long long merit_or(long long a, long long b, int s) {
    return merit_wrap((a | b) >> s);
}
__device__ __forceinline__ long long merit_xor(long long a, long long b, int s) {
    return merit_wrap((a ^ b) >> s);
}
__device__ __forceinline__ long long merit_index(long long a, long long i, int s) {
    return merit_wrap(a + (i >> s));
}
__device__ __forceinline__ long long merit_out(long long a, long long b, int s) {
    return merit_sat16((a + b) >> s);
}
"""

_LUT = r"""
__device__ __forceinline__ long long merit_lookup{n}(long long a, long long b, long long c,
                                                     int s) {{
    const short t[33] = {{{table}}};
    long long u = (b - c) >> s;
    u = u < 0 ? 0 : (u > 8192 ? 8192 : u);
    const int i = (int)(u >> 8), f = (int)(u & 255);
    const long long y0 = t[i], y1 = t[i < 32 ? i + 1 : 32];
    return merit_wrap(a + y0 + (((y1 - y0) * f) >> 8));
}}
"""

#: Program sections, in the order the golden model runs them.
SECTIONS = ("pre", "loop", "post")


def _sections(prog):
    """``{("pre", j) | ("loop", 0) | ("post", j): (start, end)}`` address ranges (j = 1..D)."""
    D = prog.levels
    out = {("loop", 0): (prog.begs[0], prog.ends[0])}
    for j in range(1, D + 1):
        out[("pre", j)] = (prog.begs[D - j + 1], prog.begs[D - j])
        out[("post", j)] = (prog.ends[D - j], prog.ends[D - j + 1])
    return out


def _operand(code, ins_at, slot_of, consts):
    """C text of operand ``code`` of the instruction at address ``ins_at``."""
    from merit.isa.encoding import N_REGS, OPERAND_CONST, OPERAND_IMM, OPERAND_RP0, OPERAND_RP1

    if code < N_REGS:
        return f"r{code}"
    if code in (OPERAND_RP0, OPERAND_RP1):
        return f"in{slot_of[(code - OPERAND_RP0, ins_at)]}"
    if OPERAND_CONST <= code < OPERAND_CONST + 4:
        return str(consts[code - OPERAND_CONST])
    if code >= OPERAND_IMM:
        return str(((code & 15) ^ 8) - 8)
    raise ValueError(f"reserved operand code {code} at address {ins_at}")


def _statement(ins, addr, slot_of, consts, out_no, level_a):
    """One C statement for the instruction ``ins`` at ``addr``."""
    from merit.isa.encoding import IndexKind, Logic, Op

    def opnd(code):
        return _operand(code, addr, slot_of, consts)

    a, s, d = opnd(ins.a), ins.s, f"r{ins.d}"
    if ins.op == Op.OUT:
        return f"out{out_no[addr]} = merit_out({a}, {opnd(ins.b)}, {s});"
    if ins.op == Op.INDEX:
        idx = f"a{ins.fn}" if ins.b == IndexKind.ACC else f"p{ins.fn}"
        if ins.b == IndexKind.ACC and ins.fn >= level_a:
            raise ValueError(f"address {addr}: index a{ins.fn} but the problem has {level_a} "
                             f"accumulation indices")
        return f"{d} = merit_index({a}, {idx}, {s});"
    b = opnd(ins.b)
    names = {Op.ADD: "add", Op.SUB: "sub", Op.L1: "l1", Op.MAC: "mac"}
    if ins.op in names:
        return f"{d} = merit_{names[ins.op]}({a}, {b}, {opnd(ins.c)}, {s});"
    if ins.op == Op.LOOKUP:
        return f"{d} = merit_lookup{ins.fn}({a}, {b}, {opnd(ins.c)}, {s});"
    if ins.op == Op.LOGIC:
        fn = {Logic.MAX: "max", Logic.MIN: "min", Logic.AND: "and", Logic.OR: "or",
              Logic.XOR: "xor"}
        if ins.fn == Logic.SEL:
            return f"{d} = merit_sel({a}, {b}, {opnd(ins.c)}, {s});"
        return f"{d} = merit_{fn[ins.fn]}({a}, {b}, {s});"
    raise ValueError(f"address {addr}: opcode {ins.op} has no translation")


def isa_body(problem, shift=0):
    """The ``c_body`` (plus ``defs``: lookup-table helpers) running ``problem``'s MERIT-z program.

    Raises ValueError when MERIT-z has no program for the strategy, or when the program reads an
    operand in another stage than the problem declares for it.
    """
    from merit.isa.encoding import IsaError
    from merit.isa.programs import operand_ports, program_for

    try:
        prog = program_for(problem, shift=shift)
        ports = operand_ports(problem, shift=shift)
    except IsaError as e:
        raise ValueError(f"no fixed-point kernel for problem {problem.name!r}: {e}") from None
    code = prog.instructions
    reads = {port: prog.reads(port) for port in (0, 1)}
    slot_of = {}
    for k, (port, slot) in enumerate(ports):
        slot_of[(port, reads[port][slot])] = k
    out_no = {addr: o for o, addr in enumerate(prog.out_addresses)}
    na = len(problem.a_shape)
    levels = tuple(problem.levels)
    first = [0]
    for n in levels:
        first.append(first[-1] + n)
    sections = _sections(prog)
    stage_of = [op.stage for op in problem.operands]

    def text(kind, j):
        start, end = sections[(kind, j)]
        lines = []
        for addr in range(start, end):
            for code_ in code[addr].reads():
                k = slot_of.get((code_ - 8, addr)) if code_ in (8, 9) else None
                if k is not None and stage_of[k] != kind:
                    raise ValueError(f"problem {problem.name!r}: operand {k} is read in the "
                                     f"{kind} section of the MERIT-z program but declared "
                                     f"'{stage_of[k]}'")
            lines.append(_statement(code[addr], addr, slot_of, prog.consts, out_no, na))
        return " ".join(lines)

    pre, post = [], []
    used = set()
    for lv in range(len(levels)):
        j = first[lv] + 1
        if first[lv] < na and na:
            pre.append(text("pre", j))
            post.append(text("post", j))
            used.add(j)
        else:
            pre.append("")
            post.append("")
    for j in range(1, prog.levels + 1):
        if j not in used and (sections[("pre", j)][0] != sections[("pre", j)][1]
                              or sections[("post", j)][0] != sections[("post", j)][1]):
            raise ValueError(f"problem {problem.name!r}: the MERIT-z program has code at level "
                             f"{j}, which starts no level of the problem")
    # registers start at zero, as in the TAU (and the interpreter)
    state = "long long " + ", ".join(f"r{i} = 0" for i in range(8)) + ";"
    defs = "".join(_LUT.format(n=n, table=", ".join(map(str, t)))
                   for n, t in enumerate(prog.luts))
    if len(prog.out_addresses) != len(problem.outputs):
        raise ValueError(f"problem {problem.name!r}: the MERIT-z program has "
                         f"{len(prog.out_addresses)} out instructions for "
                         f"{len(problem.outputs)} outputs")
    return {"state": state, "pre": pre, "loop": text("loop", 0), "post": post,
            "defs": PRELUDE + defs}


def random_inputs(problem, rng, lo=-32768, hi=32768):
    """int16 inputs in ``[lo, hi)``; a bilateral filter gets a 12-bit image and its spatial
    weights in the program's format (``round(G * 4096)``, docs/isa.md)."""
    import numpy as np

    arrays = problem.random_inputs(rng, np.int16, lo, hi)
    if type(problem.strategy).__name__ == "Bilateral":
        arrays[0] = rng.integers(0, 4096, arrays[0].shape).astype(np.int16)
        arrays[1] = np.round(problem.tensors[1].value * 4096).astype(np.int16)
    return arrays
