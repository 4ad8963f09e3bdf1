"""cocotb bench of :class:`meritz.tau.wp.WritePipeline`: output vectors -> AXI4 bursts into the
DRAM.

The bench plays the CP: for each parallel tile and each warp (the order of ``docs/tau.md`` §2) it
sends one vector of random words with the warp's coordinates and element offset, with random gaps.
The DRAM is :class:`axi.Dram` (AXI RAM, 8 bytes/cycle, random backpressure on every channel when
asked). The reference is computed here from the coordinates alone (lane coordinates from the lane
map, address = base + 2 * sum coord * pitch): every lane inside the output tensor must land at its
address, and **the whole DRAM image** must otherwise be unchanged.

Configuration (``bench_config()``): lanes, p_size, p_tile, lane_index, pitch, base, dram_bytes,
backpressure, gaps.

The pytest side. The Write Pipeline on the Verilator model, against the whole DRAM image.
"""

import itertools

import cocotb
import numpy as np
import pytest
from cocotb.triggers import ReadOnly, RisingEdge

from harness import run_bench
from merit.compile import lane_coords
from merit.sim.benchlib import bench_config, record_metric, rng, setup
from merit.sim.dram import Dram
from meritz import kernelcfg
from meritz.tau.wp import WritePipeline


def _pad(values, fill, n=6):
    return list(values) + [fill] * (n - len(values))


@cocotb.test()
async def wp_writes_exactly_the_output(dut):
    cfg = bench_config()
    rand = rng()
    lanes = cfg["lanes"]
    p_size, p_tile, pitch = cfg["p_size"], cfg["p_tile"], cfg["pitch"]
    lane_index = cfg["lane_index"]
    base, size = cfg["base"], cfg["dram_bytes"]
    n_p = len(p_size)
    values = {
        "p_size": _pad(p_size, 1), "p_tile": _pad(p_tile, 1),
        "lane_index": list(lane_index) + [0] * (6 - len(lane_index)),
        "out_base": [base, 0, 0], "out_pitch": _pad(pitch, 0),
    }
    dut.config.value = kernelcfg.pack(values)
    dut.vectors__valid.value = 0
    await setup(dut)
    dram = Dram(dut, "m_axi_", dut.clk, dut.rst, size=size, read=False,
                latency=cfg.get("latency", 20), rand=rand,
                backpressure=cfg.get("backpressure", 0.0))
    image = bytearray(rand.randrange(256) for _ in range(size))
    dram.write(0, bytes(image))
    expected = bytearray(image)

    coords = lane_coords(lane_index, n_p)
    lanes_per = [1 << sum(1 for j in lane_index if j == jj) for jj in range(n_p)]
    warps = [t // n for t, n in zip(p_tile, lanes_per, strict=True)]
    grid = [-(-s // t) for s, t in zip(p_size, p_tile, strict=True)]
    vectors = []
    for tile in itertools.product(*[range(g) for g in grid]):
        origin = [t * s for t, s in zip(tile, p_tile, strict=True)]
        for w in itertools.product(*[range(n) for n in warps]):
            p_warp = [o + k * n for o, k, n in zip(origin, w, lanes_per, strict=True)]
            data = [rand.randrange(-32768, 32768) for _ in range(lanes)]
            vectors.append((p_warp, data))
            for n in range(lanes):
                c = [p_warp[j] + int(coords[j][n]) for j in range(n_p)]
                if all(c[j] < p_size[j] for j in range(n_p)):
                    a = base + 2 * sum(c[j] * pitch[j] for j in range(n_p))
                    expected[a:a + 2] = (data[n] & 0xFFFF).to_bytes(2, "little")

    gaps = cfg.get("gaps", 0.0)
    sent = 0
    while sent < len(vectors):
        p_warp, data = vectors[sent]
        if gaps and rand.random() < gaps:
            dut.vectors__valid.value = 0
            await RisingEdge(dut.clk)
            continue
        dut.vectors__valid.value = 1
        offset = sum(p * q for p, q in zip(p_warp, pitch, strict=True))
        payload = kernelcfg_vector(lanes, data, offset, _pad(p_warp, 0))
        dut.vectors__payload.value = payload
        await ReadOnly()
        accepted = int(dut.vectors__ready.value)
        await RisingEdge(dut.clk)
        if accepted:
            sent += 1
    dut.vectors__valid.value = 0
    for _ in range(20000):
        await RisingEdge(dut.clk)
        if int(dut.idle.value):
            break
    assert int(dut.idle.value), "the WP did not drain"
    assert not int(dut.error.value)
    got = dram.read(0, size)
    diff = np.flatnonzero(np.frombuffer(got, np.uint8) != np.frombuffer(bytes(expected), np.uint8))
    assert diff.size == 0, (f"{diff.size} DRAM bytes differ, first at 0x{diff[0]:x}: "
                            f"got {got[diff[0]]:#x}, expected {expected[diff[0]]:#x}")
    record_metric("wp_cycles", dram.cycles)
    record_metric("wp_write_beats", dram.write_beats)


def kernelcfg_vector(lanes, data, offset, p_warp):
    """Bits of a ``vector_layout`` payload (data, offset, p_warp, output 0)."""
    from meritz.tau.wp import vector_layout
    return vector_layout(lanes).const({"data": data, "offset": offset, "p_warp": p_warp,
                                       "output": 0}).as_bits()


# ---- pytest side: build the model and run the cocotb tests above ----


CASES = {
    # odd 2-D output, 4x2 lanes per warp, unaligned base
    "conv_5x13": dict(p_size=[5, 13], p_tile=[4, 8], lane_index=[1, 1, 0], pitch=[13, 1],
                      base=0x102),
    # 3-D output with a padded row pitch, lanes spread over two indices, 8 in a row
    "pitched_3d": dict(p_size=[3, 6, 9], p_tile=[1, 2, 8], lane_index=[2, 2, 2], pitch=[80, 11, 1],
                       base=0x40),
}


def _cases():
    for case in sorted(CASES):
        for bp in (0.0, 0.3):
            quick = (bp > 0) == (case == "conv_5x13")
            yield pytest.param(case, bp, marks=() if quick else pytest.mark.slow,
                               id=f"{case}-bp{bp}")


@pytest.mark.sim
@pytest.mark.parametrize("case, backpressure", list(_cases()))
def test_wp(case, backpressure):
    cfg = dict(CASES[case], lanes=8, dram_bytes=1024, backpressure=backpressure,
               gaps=0.2 if backpressure else 0.0)
    metrics = run_bench(WritePipeline(lanes=8), bench="test_wp", config=cfg)
    assert metrics["wp_write_beats"] > 0
