"""Two-dimensional operand sharing on meritz.top.Top with real 8-lane TAUs (``docs/tau.md`` §10):
the compiler's 2-D plan (``compile_problem(share_dims=2)``: two slots, one per RP, each fetched
once per group and multicast) run end to end through the control port, bit-exact.

Each run is checked by the bench against the golden ISA model (every output and every other DRAM
byte); here, in addition: the kernel really shares two slots, the TILES register counts the
tiles of the grid (void tiles not counted), and the DRAM read beats are those of one fetch per
group (counted here from the footprints, independently of the RTL). On 1 and 2 TAUs the kernel
of 4 TAUs (2 x 2 blocks) runs on a processor that cuts its blocks
(``meritz.dispatcher.share_shape``). Each Verilator configuration is built once per session
(:func:`merit.sim.run.top_for` and the build cache).
"""

import numpy as np
import pytest

from merit import perf
from merit import workloads as W
from merit.compile import compile_problem
from merit.sim import simulate

SMALL = dict(lanes=8, rp_bytes=(2048, 1024), cp_bytes=2048)

PROBLEMS = {
    "conv3x3": lambda: W.conv2d(1, 3, 9, 13, 4, 3, padding=1),
    "gemm_24x40": lambda: W.gemm(24, 40, 16),
    "gemm_voids": lambda: W.gemm(36, 24, 16),
    "dilated": lambda: W.conv2d(1, 8, 16, 16, 8, 3, dilation=2, padding=2),
}
#: ``merit.perf``'s cycles against the RTL's on the runs of the compiler's default choice
MODEL_TOLERANCE = 0.05


def _kernel(name, taus):
    return compile_problem(PROBLEMS[name](), taus=taus, share_dims=2, share_counts=(2,),
                           **SMALL)


def _fetch_beats(kernel, taus):
    """Read beats of the block walk with one fetch of each shared slot per group: the
    footprints' beats of every member that leads the group of the slot (or does not share it)."""
    shares, _ = perf._shares(kernel, taus)
    units = perf._block_units(kernel, shares)
    members = [(k, origin) for unit in units for k, (_, origin) in enumerate(unit)]
    origins = np.asarray([o for _, o in members], dtype=np.int64)
    led = {slot: ((1 << log2) - 1) << shift for slot, _, log2, shift in shares}
    total = 0
    for a_origin, _ in perf._a_tiles(kernel):
        for n, (_, slot) in enumerate(perf._numbered_slots(kernel)):
            if slot is None:
                continue
            beats = perf._load_counts(kernel, slot, origins, a_origin)[0]
            total += sum(int(b) for (k, _), b in zip(members, beats, strict=True)
                         if n not in led or not k & led[n])
    return total


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("name,taus", [("conv3x3", 4), ("conv3x3", 8), ("gemm_24x40", 4),
                                       ("gemm_24x40", 8), ("gemm_voids", 8)])
def test_top_share2d_exact(name, taus):
    kernel = _kernel(name, taus)
    assert kernel.sharing is not None and len(kernel.sharing) == 2, kernel.sharing
    cfg = kernel.config
    assert (cfg["share_slot"], cfg["share_log2"]) == kernel.sharing[0]
    assert (cfg["share2_slot"], cfg["share2_log2"]) == kernel.sharing[1]
    metrics = simulate(PROBLEMS[name](), taus=taus, share_dims=2, share_counts=(2,), seed=3,
                       **SMALL)
    assert metrics["tiling"] == f"p={kernel.tiling.p_tile} a={kernel.tiling.a_tile}"
    assert metrics["tiles"] == len(kernel.tiles)
    assert metrics["sharing"] == " x ".join(f"slot {s} / 2^{v}" for s, v in kernel.sharing)
    assert metrics["read_beats"] == _fetch_beats(kernel, taus)
    assert metrics["cycles"] <= metrics["cycles_register"] <= metrics["cycles"] + 32


def test_gemm_voids_has_void_tiles():
    """The case above whose blocks run past the end of a walk (void tiles in the dealing)."""
    kernel = _kernel("gemm_voids", 8)
    shares, _ = perf._shares(kernel, 8)
    units = perf._block_units(kernel, shares)
    assert any(t < 0 for unit in units for t, _ in unit)


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("taus", [1, 2])
def test_top_share2d_blocks_cut_to_the_taus(taus):
    """A 2-D kernel of 4 TAUs on 1 and 2: the blocks are cut (1: no sharing, 2: a row of the
    first slot's groups, one TAU per column), the results the same."""
    kernel = _kernel("gemm_24x40", 4)
    assert len(kernel.sharing) == 2 and sum(v for _, v in kernel.sharing) == 2
    metrics = simulate(PROBLEMS["gemm_24x40"](), taus=taus, compile_taus=4, share_dims=2,
                       share_counts=(2,), seed=5, **SMALL)
    assert metrics["tiles"] == len(kernel.tiles)


def test_the_compiler_refuses_a_plan_the_processor_cannot_deal():
    from merit.compile import CompileError, _check_sharing
    kernel = _kernel("gemm_24x40", 4)
    (first, l1), (second, l2) = kernel.sharing
    cfg = kernel.config
    with pytest.raises(CompileError, match="must lie in different RPs"):
        _check_sharing(cfg, ((first, l1), (first, l2)), 4)
    with pytest.raises(CompileError, match="slot 0 must be an enabled slot alone in its RP"):
        _check_sharing(dict(cfg, rp0=[cfg["rp0"][0], dict(cfg["rp1"][0])]), kernel.sharing, 4)
    with pytest.raises(CompileError, match="must divide the 2 TAUs"):
        _check_sharing(cfg, kernel.sharing, 2)
    with pytest.raises(CompileError, match="slot 1 must be an enabled slot"):
        _check_sharing(cfg, ((first, l1), (1, l2)), 4)
    _check_sharing(cfg, kernel.sharing, 4)


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("name,taus", [("conv3x3", 8)])
def test_top_share2d_default_choice_and_model(name, taus):
    """The compiler's default on 8 TAUs shares two operands for this kernel (the model finds
    it faster than 1-D); the RTL runs that kernel bit-exact, and ``merit.perf`` predicts its
    cycles within MODEL_TOLERANCE.  (The dilated case left this list when whole tiles first
    gave it one tile per TAU, 8 tiles on 8 TAUs, which nothing shares.)"""
    kernel = compile_problem(PROBLEMS[name](), taus=taus, **SMALL)
    assert kernel.sharing is not None and len(kernel.sharing) == 2, kernel.sharing
    metrics = simulate(PROBLEMS[name](), taus=taus, seed=7, **SMALL)
    assert metrics["tiling"] == f"p={kernel.tiling.p_tile} a={kernel.tiling.a_tile}"
    assert metrics["read_beats"] == _fetch_beats(kernel, taus)
    predicted = perf.predict(kernel, taus=taus, rp_bytes=SMALL["rp_bytes"]).cycles
    assert abs(predicted / metrics["cycles"] - 1) <= MODEL_TOLERANCE, (predicted,
                                                                       metrics["cycles"])
