"""Logic depth of MERIT-z in generic gates: the longest combinational path of every module.

The ASIC view of timing without a cell library's delays: each module is mapped (Yosys, as in
:mod:`merit.flow.synth`, hierarchy kept) to the generic gates of :func:`merit.flow.synth.liberty`
with flip-flop enables and synchronous resets turned into gates, and ``ltp -noff`` counts the gates
on its longest path from a flip-flop, memory read port or input to a flip-flop, memory port or
output. Memories are cut like flip-flops (their read ports are synchronous). A path that crosses
module boundaries is counted in pieces, one per module; the FPGA's critical path
(:mod:`merit.flow.fpga`) is the whole-chip view.
"""

import re
import subprocess
from pathlib import Path

__all__ = ["logic_depth_verilog", "parse_ltp"]


def parse_ltp(text):
    """``{module: {"depth": gates, "path": [signal names]}}`` from ``ltp`` output."""
    modules, current = {}, None
    for line in text.splitlines():
        head = re.match(r"\s*Longest topological path in (\S+) \(length=(\d+)\):", line)
        if head:
            current = {"depth": int(head.group(2)), "path": []}
            modules[head.group(1).lstrip("\\")] = current
            continue
        node = re.match(r"\s*\d+: (\S+)", line)
        if node and current is not None:
            current["path"].append(node.group(1).lstrip("\\"))
    return modules


def logic_depth_verilog(verilog, top, work_dir, *, timeout=3600, cache=True):
    """The longest combinational path, in generic gates, of every module under ``top``.

    Returns ``{module: {"depth", "path"}}``: module names as in the Verilog (Amaranth's
    ``top.sub.sub``), ``path`` the named signals along the path (Yosys' own names are left out).
    """
    from merit.flow.synth import (
        CELL_AREAS,
        _check_paths,
        _check_top,
        _stage_sources,
        _yosys_flow,
        liberty,
    )

    top = _check_top(top)
    paths, work = _check_paths(verilog, work_dir)
    names = _stage_sources(paths, work)
    (work / "cells.lib").write_text(liberty())
    script = (
        f"hierarchy -check -top {top}\n"
        f"synth -booth -top {top} -run :fine\n"
        "delete t:$scopeinfo\n"
        "memory_map t:$mem_v2 r:WR_PORTS=0 %i\n"
        "opt -fast -full\n"
        "opt -full\n"
        "techmap\n"
        "opt -fast\n"
        "setundef -zero\n"
        "dfflegalize -cell $_DFF_P_ 01\n"
        "abc -liberty cells.lib\n"
        "opt_clean\n"
        "delete t:$mem_v2\n"
        "read_liberty -lib cells.lib\n"
        # only the library's gates: a submodule instance is not one gate from every input to
        # every output (its own path is counted in its own module)
        f"tee -q -o ltp.txt ltp -noff w:* {' '.join(f't:{cell}' for cell in CELL_AREAS)}\n"
    )
    try:
        _yosys_flow(names, top, script, work, timeout, "logic depth", cache)
    except subprocess.TimeoutExpired:    # pragma: no cover - _yosys_flow converts it
        raise
    result = {}
    for module, info in parse_ltp((Path(work) / "ltp.txt").read_text()).items():
        named = [s for s in info["path"] if not s.startswith("$")]
        result[module] = {"depth": info["depth"], "path": named}
    return result
