"""One shared slot dealt on the block walk (``share_block``) on meritz.top.Top with real 8-lane
TAUs: the compiler's plan of one slot (``compile_problem(share_dims=2, share_counts=(1,))``:
``share_slot``'s groups take consecutive tiles of the walk over the indices it does not move
along, :func:`merit.compile.share_walk` with ``g_2 = 1``) run end to end through the control
port, bit-exact.

Each run is checked by the bench against the golden ISA model (every output and every other DRAM
byte); here, in addition: the kernel is dealt on the block walk, the TILES register counts the
tiles of the grid (void tiles not counted), and the DRAM read beats are those of one fetch of the
shared slot per group (counted from the footprints, ``test_top_share2d._fetch_beats``). The GEMM
below has edge tiles on both indices and a walk over ``X`` of 3 tiles: groups of 4 (and, cut by a
processor of 2 TAUs, of 2) end with partial blocks, whose other TAUs get void tiles.
"""

import dataclasses

import pytest

from merit import perf
from merit import workloads as W
from merit.compile import CompileError, _check_sharing, compile_problem, share_walk
from merit.sim import simulate
from test_top_share2d import MODEL_TOLERANCE, SMALL, _fetch_beats

#: the GEMM's tiles (4 x 16 of 36 x 40: 9 x 3 tiles, edge tiles of 8 columns)
OPTIONS = dict(share_dims=2, share_counts=(1,), max_outputs=64, **SMALL)


def _problem():
    return W.gemm(36, 40, 16)


def _kernel(taus=4):
    return compile_problem(_problem(), taus=taus, **OPTIONS)


def _cut(kernel, taus):
    """``kernel`` as a processor of ``taus`` TAUs deals it (its group cut to the TAUs)."""
    (slot, log2), = kernel.sharing
    return dataclasses.replace(kernel, sharing=((slot, min(log2, taus.bit_length() - 1)),))


def test_the_kernel_is_dealt_on_the_block_walk_with_voids():
    kernel = _kernel()
    cfg = kernel.config
    assert kernel.sharing is not None and len(kernel.sharing) == 1, kernel.sharing
    assert (cfg["share_slot"], cfg["share_log2"]) == kernel.sharing[0]
    assert cfg["share_block"] == 1 and cfg["share2_log2"] == 0 and cfg["share_order"] == 0
    for taus in (2, 4):
        cut = _cut(kernel, taus)
        shares, walk = perf._shares(cut, taus)
        assert walk == "block" and len(shares) == 1
        units = perf._block_units(cut, shares)
        assert any(t < 0 for unit in units for t, _ in unit), "no void tile"
    shape, p_tile = kernel.problem.p_shape, kernel.tiling.p_tile
    assert any(o[j] + p_tile[j] > shape[j] for o in kernel.tiles for j in range(len(shape)))


@pytest.mark.sim
@pytest.mark.slow
@pytest.mark.parametrize("taus", [2, 4])
def test_top_share_block_exact(taus):
    """The kernel of 4 TAUs (groups of 4) on 4 and on 2 TAUs (groups cut to 2): bit-exact, the
    grid's tiles counted, one fetch of the shared slot per group; on 4, ``merit.perf`` within
    MODEL_TOLERANCE of the RTL's cycles."""
    kernel = _kernel()
    metrics = simulate(_problem(), taus=taus, compile_taus=4, seed=11, **OPTIONS)
    assert metrics["tiling"] == f"p={kernel.tiling.p_tile} a={kernel.tiling.a_tile}"
    assert metrics["tiles"] == len(kernel.tiles)
    assert metrics["sharing"] == kernel.shares
    cut = _cut(kernel, taus)
    assert metrics["read_beats"] == _fetch_beats(cut, taus)
    assert metrics["cycles"] <= metrics["cycles_register"] <= metrics["cycles"] + 32
    if taus == 4:
        predicted = perf.predict(kernel, taus=taus, rp_bytes=SMALL["rp_bytes"]).cycles
        assert abs(predicted / metrics["cycles"] - 1) <= MODEL_TOLERANCE, (predicted,
                                                                           metrics["cycles"])


def test_the_compiler_refuses_a_one_slot_plan_the_processor_cannot_deal():
    kernel = _kernel()
    cfg = kernel.config
    (slot, log2), = kernel.sharing
    with pytest.raises(CompileError, match="must divide the 2 TAUs"):
        _check_sharing(cfg, kernel.sharing, 2)
    with pytest.raises(CompileError, match="slot 3 must be an enabled slot alone in its RP"):
        _check_sharing(cfg, ((3, log2),), 4)
    with pytest.raises(CompileError, match="slot 1 must be an enabled slot alone in its RP"):
        _check_sharing(cfg, ((1, log2),), 4)
    _check_sharing(cfg, kernel.sharing, 4)


def test_the_walk_steps_over_the_indices_the_slot_does_not_move_along():
    """``share_walk`` with one slot: ``X`` the indices the slot does not move along, no ``Y``."""
    assert share_walk(4, [{0, 2}]) == ([1, 3], [], [0, 2])
    assert share_walk(2, [{1}]) == ([0], [], [1])
