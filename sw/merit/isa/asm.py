"""Assembler and disassembler for MERIT-z programs (syntax in ``docs/isa.md``).

Example::

    .const k0 = 128        ; rounding constant
    pre1:
        add  r0, 0, 0, 0   ; r0 = 0
    loop:
        mac  r0, r0, i0, i1
    post1:
        out  r0, k0 >> 8   ; sat16((r0 + 128) >> 8)
"""

import re

from .encoding import (
    IMM_MAX,
    IMM_MIN,
    LUT_ENTRIES,
    MAX_LEVELS,
    N_CONSTS,
    N_LUTS,
    N_REGS,
    OPERAND_CONST,
    OPERAND_IMM,
    OPERAND_RP0,
    IndexKind,
    Instruction,
    IsaError,
    Logic,
    Op,
    decode,
    encode,
)
from .program import Program

__all__ = ["AsmError", "assemble", "disassemble", "disassemble_word"]


class AsmError(IsaError):
    """A syntax or range error in assembler text; the message names the line."""


# mnemonic -> (opcode, fn, operand names)
_MNEMONICS = {
    "add": (Op.ADD, 0, ("rd", "a", "b", "c")),
    "sub": (Op.SUB, 0, ("rd", "a", "b", "c")),
    "l1": (Op.L1, 0, ("rd", "a", "b", "c")),
    "mac": (Op.MAC, 0, ("rd", "a", "b", "c")),
    "max": (Op.LOGIC, Logic.MAX, ("rd", "a", "b")),
    "min": (Op.LOGIC, Logic.MIN, ("rd", "a", "b")),
    "sel": (Op.LOGIC, Logic.SEL, ("rd", "a", "b", "c")),
    "and": (Op.LOGIC, Logic.AND, ("rd", "a", "b")),
    "or": (Op.LOGIC, Logic.OR, ("rd", "a", "b")),
    "xor": (Op.LOGIC, Logic.XOR, ("rd", "a", "b")),
    "index": (Op.INDEX, None, ("rd", "a", "index")),
    "lut": (Op.LOOKUP, None, ("rd", "a", "b", "c", "table")),
    "out": (Op.OUT, 0, ("a", "b")),
}
_SECTION = re.compile(rf"^(pre|post)([1-{MAX_LEVELS}])$|^loop$")


def _parse_int(text, what, lineno):
    try:
        return int(text, 0)
    except ValueError:
        raise AsmError(f"line {lineno}: expected {what}, got {text!r}") from None


def _operand(text, lineno):
    t = text.lower().replace(" ", "")
    if t.endswith("+x"):
        raise AsmError(f"line {lineno}: an indexed register {text!r} is the destination or the "
                       f"operand a only")
    if t.startswith("r") and t[1:].isdigit():
        n = int(t[1:])
        if n >= N_REGS:
            raise AsmError(f"line {lineno}: bad register {text!r} (expected r0..r{N_REGS - 1})")
        return n
    if t in ("i0", "i1"):
        return OPERAND_RP0 + int(t[1])
    if t.startswith("k") and t[1:].isdigit():
        n = int(t[1:])
        if n >= N_CONSTS:
            raise AsmError(f"line {lineno}: bad constant {text!r} (expected k0..k{N_CONSTS - 1})")
        return OPERAND_CONST + n
    value = _parse_int(t, "an operand (r0..r7, i0, i1, k0..k3 or an immediate -8..7)", lineno)
    if not IMM_MIN <= value <= IMM_MAX:
        raise AsmError(f"line {lineno}: immediate {value} out of range {IMM_MIN}..{IMM_MAX} "
                       f"(put larger values in a constant k0..k3)")
    return OPERAND_IMM + (value & 15)


def _register(text, lineno):
    code = _operand(text, lineno)
    if code >= N_REGS:
        raise AsmError(f"line {lineno}: bad register {text!r} as destination (expected "
                       f"r0..r{N_REGS - 1})")
    return code


def _instruction(body, lineno):
    shift = 0
    if ">>" in body:
        body, _, stext = body.partition(">>")
        shift = _parse_int(stext.strip(), "a shift amount after '>>'", lineno)
        if not 0 <= shift <= 31:
            raise AsmError(f"line {lineno}: shift {shift} out of range 0..31")
    mnemonic, _, rest = body.strip().partition(" ")
    mnemonic = mnemonic.lower()
    if mnemonic not in _MNEMONICS:
        raise AsmError(f"line {lineno}: unknown mnemonic {mnemonic!r} (expected one of "
                       f"{', '.join(_MNEMONICS)})")
    op, fn, names = _MNEMONICS[mnemonic]
    args = [a.strip() for a in rest.split(",")] if rest.strip() else []
    if len(args) != len(names) or not all(args):
        raise AsmError(f"line {lineno}: {mnemonic} expects {len(names)} operands "
                       f"({', '.join(names)}), got {len(args)}")
    fields = {"op": op, "s": shift}
    # ``rN+x``: the indexed accumulator (bit x), on the destination and a register ``a`` alike
    marked = {}
    for i, (name, arg) in enumerate(zip(names, args, strict=True)):
        if name in ("rd", "a"):
            plain = re.sub(r"\s*\+\s*x$", "", arg, flags=re.I)
            marked[name] = plain != arg
            args[i] = plain
    if any(marked.values()):
        fields["x"] = 1
        for name, m in marked.items():
            reg = args[names.index(name)].lower()
            if not m and reg.startswith("r") and reg[1:].isdigit():
                raise AsmError(f"line {lineno}: with an indexed register every register among "
                               f"the destination and a is indexed: write {reg}+x")
    if fn is not None:
        fields["fn"] = fn
    for name, arg in zip(names, args, strict=True):
        if name == "rd":
            fields["d"] = _register(arg, lineno)
        elif name == "index":
            m = re.fullmatch(r"([ap])([0-9])", arg.lower())
            if not m or int(m[2]) >= 6:
                raise AsmError(f"line {lineno}: expected an index a0..a5 or p0..p5, got {arg!r}")
            fields["fn"] = int(m[2])
            fields["b"] = IndexKind.ACC if m[1] == "a" else IndexKind.PAR
        elif name == "table":
            m = re.fullmatch(r"t([0-9])", arg.lower())
            if not m or int(m[1]) >= N_LUTS:
                raise AsmError(f"line {lineno}: expected a lookup table t0..t{N_LUTS - 1}, "
                               f"got {arg!r}")
            fields["fn"] = int(m[1])
        else:
            fields[name] = _operand(arg, lineno)
    try:
        return encode(Instruction(**fields))
    except IsaError as e:
        raise AsmError(f"line {lineno}: {e}") from None


def _section_key(name):
    m = _SECTION.match(name)
    if m[0] == "loop":
        return (1, 0)
    return (0, int(m[2])) if m[1] == "pre" else (2, -int(m[2]))


def assemble(text, *, consts=None, luts=None):
    """Assemble program text into a :class:`Program`.

    ``consts`` (4 ints) and ``luts`` (tables of 33 int16) override ``.const`` / ``.lut`` lines.
    Raises :class:`AsmError` naming the line and what was expected.
    """
    words, sections = [], {}
    k = [0] * N_CONSTS
    tables = {}
    levels = None
    xstride, xspan = (), 1
    current = implicit = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = re.split(r"[;#]", raw, maxsplit=1)[0].strip()
        if not line:
            continue
        if line.startswith("."):
            directive, _, rest = line.partition(" ")
            if directive == ".levels":
                levels = _parse_int(rest.strip(), "a level count 1..6", lineno)
                if not 1 <= levels <= MAX_LEVELS:
                    raise AsmError(f"line {lineno}: levels must be in 1..{MAX_LEVELS}, "
                                   f"not {levels}")
            elif directive == ".const":
                m = re.fullmatch(r"k([0-9])\s*=\s*(\S+)", rest.strip())
                if not m or int(m[1]) >= N_CONSTS:
                    raise AsmError(f"line {lineno}: expected '.const kN = value' with N in "
                                   f"0..{N_CONSTS - 1}")
                value = _parse_int(m[2], "a constant value", lineno)
                if not -(1 << 31) <= value < (1 << 31):
                    raise AsmError(f"line {lineno}: constant {value} is not a signed 32-bit value")
                k[int(m[1])] = value
            elif directive == ".xstride":
                xstride = [_parse_int(v, "a register stride", lineno)
                           for v in rest.replace(",", " ").split()]
            elif directive == ".xspan":
                xspan = _parse_int(rest.strip(), "a register span 1..8", lineno)
            elif directive == ".lut":
                m = re.fullmatch(r"t([0-9])\s*=\s*(.*)", rest.strip())
                if not m or int(m[1]) >= N_LUTS:
                    raise AsmError(f"line {lineno}: expected '.lut tN = v0 .. v32' with N in "
                                   f"0..{N_LUTS - 1}")
                values = [_parse_int(v, "a table entry", lineno)
                          for v in m[2].replace(",", " ").split()]
                if len(values) != LUT_ENTRIES or not all(-32768 <= v <= 32767 for v in values):
                    raise AsmError(f"line {lineno}: a lookup table needs {LUT_ENTRIES} int16 "
                                   f"entries, got {len(values)}")
                tables[int(m[1])] = values
            else:
                raise AsmError(f"line {lineno}: unknown directive {directive!r} (expected "
                               f".levels, .const, .lut, .xstride or .xspan)")
            continue
        if line.endswith(":"):
            name = line[:-1].strip().lower()
            if not _SECTION.match(name):
                raise AsmError(f"line {lineno}: unknown section {name!r} (expected preN:, "
                               f"loop: or postN: with N in 1..{MAX_LEVELS})")
            if implicit is not None and _section_key(name) <= _section_key("loop"):
                raise AsmError(f"line {lineno}: section {name + ':'!r} after an instruction "
                               f"outside any section (line {implicit}), which starts the loop "
                               f"body; put a label before every instruction (pre1..preD, loop, "
                               f"postD..post1)")
            if name in sections:
                raise AsmError(f"line {lineno}: section {name!r} appears twice")
            if current is not None and _section_key(name) <= _section_key(current):
                raise AsmError(f"line {lineno}: section {name!r} after {current!r}; the order "
                               f"is pre1..preD, loop, postD..post1")
            sections[name] = [len(words), len(words)]
            current = name
            continue
        if current is None:
            sections["loop"] = [0, 0]
            current, implicit = "loop", lineno
        words.append(_instruction(line, lineno))
        sections[current][1] = len(words)

    used = [int(n[-1]) for n in sections if n != "loop"]
    if levels is None:
        levels = max(used, default=1)
    if used and max(used) > levels:
        raise AsmError(f"section of level {max(used)} but .levels is {levels}")
    begs, ends = _range_table(sections, levels)
    if consts is not None:
        k = list(consts)
    if luts is None:
        if sorted(tables) != list(range(len(tables))):
            raise AsmError(f"lookup tables must be numbered from t0 without gaps, got "
                           f"{sorted(tables)}")
        luts = [tables[t] for t in sorted(tables)]
    try:
        return Program(words, begs, ends, k, luts, xstride=xstride, xspan=xspan)
    except IsaError as e:
        raise AsmError(str(e)) from None


def _range_table(sections, levels):
    """(begs, ends) from the section boundaries; missing sections are empty."""
    order = ([f"pre{lv}" for lv in range(1, levels + 1)] + ["loop"]
             + [f"post{lv}" for lv in range(levels, 0, -1)])
    bounds, pos = {}, 0
    for name in order:
        if name in sections:
            bounds[name] = tuple(sections[name])
            pos = sections[name][1]
        else:
            bounds[name] = (pos, pos)
    begs = [bounds["loop"][0]] + [bounds[f"pre{levels - k + 1}"][0] for k in range(1, levels + 1)]
    ends = [bounds["loop"][1]] + [bounds[f"post{levels - k + 1}"][1] for k in range(1, levels + 1)]
    return begs, ends


def _operand_text(code):
    if code < N_REGS:
        return f"r{code}"
    if code in (OPERAND_RP0, OPERAND_RP0 + 1):
        return f"i{code - OPERAND_RP0}"
    if OPERAND_CONST <= code < OPERAND_CONST + N_CONSTS:
        return f"k{code - OPERAND_CONST}"
    return str(((code & 15) ^ 8) - 8)


def disassemble_word(word):
    """One instruction word as assembler text (raises IsaError on an illegal word)."""
    ins = decode(word)
    if ins.op == Op.LOGIC:
        mnemonic = Logic(ins.fn).name.lower()
    else:
        mnemonic = {Op.LOOKUP: "lut"}.get(ins.op, Op(ins.op).name.lower())
    names = _MNEMONICS[mnemonic][2]
    args = []
    for name in names:
        if name == "rd":
            args.append(f"r{ins.d}" + ("+x" if ins.x else ""))
        elif name == "a" and ins.x and ins.a < N_REGS:
            args.append(f"r{ins.a}+x")
        elif name == "index":
            args.append(("a" if ins.b == IndexKind.ACC else "p") + str(ins.fn))
        elif name == "table":
            args.append(f"t{ins.fn}")
        else:
            args.append(_operand_text(getattr(ins, name)))
    text = f"{mnemonic:<5} " + ", ".join(args)
    return text + (f" >> {ins.s}" if ins.s else "")


def disassemble(program):
    """Assembler text that assembles back to ``program`` (words, range table, constants, LUTs)."""
    d = program.levels
    lines = [f".levels {d}"]
    lines += [f".const k{i} = {v}" for i, v in enumerate(program.consts) if v]
    lines += [f".lut t{i} = " + " ".join(str(v) for v in t) for i, t in enumerate(program.luts)]
    if any(program.xstride) or program.xspan != 1:
        lines += [".xstride " + " ".join(str(v) for v in program.xstride),
                  f".xspan {program.xspan}"]
    begs, ends = program.begs, program.ends
    spans = [(f"pre{lv}", begs[d - lv + 1], begs[d - lv]) for lv in range(1, d + 1)]
    spans.append(("loop", begs[0], ends[0]))
    spans += [(f"post{lv}", ends[d - lv], ends[d - lv + 1]) for lv in range(d, 0, -1)]
    for name, lo, hi in spans:
        if hi > lo or name == "loop":
            lines.append(f"{name}:")
            lines += ["    " + disassemble_word(w) for w in program.words[lo:hi]]
    return "\n".join(lines) + "\n"
