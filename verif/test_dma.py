"""cocotb bench of :class:`meritz.tau.dma.Dma`: footprint tiles from the AXI DRAM into SRAM rows.

The bench requests tiles of one input slot (the slot's values from ``merit.compile.slot_config``)
and collects the rows the DMA sends, with random backpressure on the rows and, when asked, on
every AXI channel. The reference tile is built here from the transform's box (``Transform.box``)
and the tensor with numpy: the element at box coordinate ``i`` is ``A[low + i]`` with ``zero``
(0 outside) or ``clamp`` (nearest edge) per axis, at tile address ``sum i * lpitch``; every other
tile address (padding) is 0.

Configuration: lanes, shape, transform (``{"p": [...], "a": [...], "boundary": ...}`` with
indices as ``[axis, stride, offset]`` or null), p_size, a_size, tiling, lpitch, tiles (list of
``[p_origin, a_origin]``), latency, backpressure.

The pytest side. The DMA on the Verilator model: footprint tiles against numpy, zero and clamp
boundaries.
"""

import cocotb
import numpy as np
import pytest
from cocotb.triggers import ReadOnly, RisingEdge

from harness import run_bench
from merit.compile import Tiling, slot_config, tile_words
from merit.sim.benchlib import bench_config, record_metric, rng, setup
from merit.sim.dram import Dram
from merit.transform import Index, Transform
from meritz import kernelcfg
from meritz.tau.dma import Dma, request_layout

BASE = 0x200


def transform_from(cfg):
    def idx(e):
        return None if e is None else Index(e[0], stride=e[1], offset=e[2])
    t = cfg["transform"]
    return Transform(tuple(cfg["shape"]), p=[idx(e) for e in t["p"]], a=[idx(e) for e in t["a"]],
                     boundary=t["boundary"], name="A")


def expected_tile(tensor, tr, tiling, lpitch, lanes, p_org, a_org):
    low, box = tr.box(p_org, a_org, tiling.p_tile, tiling.a_tile)
    _, lp, words = tile_words(tr, tiling, lpitch)
    rows = -(-words // lanes)
    out = np.zeros(rows * lanes, dtype=np.int64)
    grids = np.meshgrid(*[np.arange(b) for b in box], indexing="ij")
    coords = []
    valid = np.ones(grids[0].shape, dtype=bool)
    for i, g in enumerate(grids):
        c = low[i] + g
        n = tensor.shape[i]
        if tr.boundary[i] == "zero":
            valid &= (c >= 0) & (c < n)
        coords.append(np.clip(c, 0, n - 1))
    values = np.where(valid, tensor[tuple(coords)], 0)
    address = sum(g * p for g, p in zip(grids, lp, strict=True))
    out[address.ravel()] = values.ravel()
    return out.reshape(rows, lanes)


@cocotb.test()
async def dma_loads_footprints(dut):
    cfg = bench_config()
    rand = rng()
    lanes = cfg["lanes"]
    tr = transform_from(cfg)
    tiling = Tiling(tuple(cfg["tiling"]["p_tile"]), tuple(cfg["tiling"]["a_tile"]),
                    tuple(cfg["tiling"]["lane_index"]))
    slot = slot_config(tr, tiling, lanes, base=BASE, lpitch=cfg.get("lpitch"))
    n_p, n_a = len(tr.p), len(tr.a)
    values = {"p_tile": list(tiling.p_tile) + [1] * (6 - n_p),
              "a_tile": list(tiling.a_tile) + [1] * (6 - n_a),
              "rp0": [slot, {}], "rp1": [{}]}
    dut.config.value = kernelcfg.pack(values)
    dut.requests__valid.value = 0
    dut.rows__ready.value = 0
    await setup(dut)
    size = 1 << 16
    dram = Dram(dut, "m_axi_", dut.clk, dut.rst, size=size, write=False,
                latency=cfg.get("latency", 20), rand=rand,
                backpressure=cfg.get("backpressure", 0.0))
    nrng = np.random.default_rng(rand.randrange(1 << 30))
    tensor = nrng.integers(-32768, 32768, size=tr.source_shape, dtype=np.int64)
    dram.write(0, nrng.integers(0, 256, size=size, dtype=np.uint8).tobytes())
    dram.write(BASE, tensor.astype("<i2").tobytes())

    requests = []
    for p_org, a_org in cfg["tiles"]:
        base = rand.randrange(0, 200)
        requests.append((p_org, a_org, base, expected_tile(tensor, tr, tiling, cfg.get("lpitch"),
                                                           lanes, p_org, a_org)))
    req_layout = request_layout()
    pending = list(requests)
    received = {k: [] for k in range(len(requests))}
    tile_no = 0
    bp = cfg.get("backpressure", 0.0)
    for _ in range(200000):
        if pending:
            p_org, a_org, base, _ = pending[0]
            dut.requests__valid.value = 1
            dut.requests__payload.value = req_layout.const({
                "slot": 0, "base": base,
                "tile": {"p_origin": list(p_org) + [0] * (6 - n_p),
                         "a_origin": list(a_org) + [0] * (6 - n_a)}}).as_bits()
        else:
            dut.requests__valid.value = 0
        ready = int(not bp or rand.random() >= bp)
        dut.rows__ready.value = ready
        await ReadOnly()
        took = pending and int(dut.requests__ready.value)
        if ready and int(dut.rows__valid.value):
            fields = _unpack_row(int(dut.rows__payload.value), lanes)
            assert fields["base"] == requests[tile_no][2], "row carries the wrong base"
            received[tile_no].append(fields)
            if fields["last"]:
                tile_no += 1
        await RisingEdge(dut.clk)
        if took:
            pending.pop(0)
        if tile_no == len(requests):
            break
    assert tile_no == len(requests), f"only {tile_no} of {len(requests)} tiles arrived"
    for k, (_, _, _, want) in enumerate(requests):
        got = received[k]
        assert [r["row"] for r in got] == list(range(len(want))), f"tile {k}: rows out of order"
        for r in got:
            assert r["data"] == list(want[r["row"]]), (
                f"tile {k} row {r['row']}: got {r['data']}, expected {list(want[r['row']])}")
    for _ in range(10):
        await RisingEdge(dut.clk)
    assert int(dut.idle.value) and not int(dut.error.value)
    record_metric("dma_read_beats", dram.read_beats)
    record_metric("dma_rows", sum(len(r) for r in received.values()))


def _unpack_row(bits, lanes):
    words = []
    for n in range(lanes):
        w = (bits >> (16 * n)) & 0xFFFF
        words.append(w - 0x10000 if w & 0x8000 else w)
    off = 16 * lanes
    return {"data": words, "row": (bits >> off) & 0xFFFF, "base": (bits >> (off + 16)) & 0xFFFF,
            "slot": (bits >> (off + 32)) & 3, "last": (bits >> (off + 34)) & 1}


# ---- pytest side: build the model and run the cocotb tests above ----


CONV = dict(shape=[3, 7, 11],
            transform={"p": [[1, 1, 0], [2, 1, 0]], "a": [[0, 1, 0], [1, 1, -1], [2, 1, -1]],
                       "boundary": "zero"},
            tiling={"p_tile": [4, 8], "a_tile": [2, 3, 3], "lane_index": [1, 1, 0]},
            tiles=[[[0, 0], [0, 0, 0]], [[4, 8], [2, 0, 0]], [[4, 0], [0, 0, 0]]])
STRIDED_CLAMP = dict(shape=[9, 13],
                     transform={"p": [[0, 2, -1], [1, 2, -1]], "a": [[0, 1, 0], [1, 1, 0]],
                                "boundary": "clamp"},
                     tiling={"p_tile": [2, 4], "a_tile": [3, 3], "lane_index": [1, 1, 0]},
                     lpitch=[12, 1],
                     tiles=[[[0, 0], [0, 0]], [[2, 4], [0, 0]], [[4, 4], [0, 0]]])
WEIGHTS = dict(shape=[3, 3, 3],
               transform={"p": [None, None], "a": [[0, 1, 0], [1, 1, 0], [2, 1, 0]],
                          "boundary": "zero"},
               tiling={"p_tile": [4, 8], "a_tile": [2, 3, 3], "lane_index": [1, 1, 0]},
               tiles=[[[0, 0], [0, 0, 0]], [[0, 0], [2, 0, 0]]])
CASES = {"conv": CONV, "strided_clamp": STRIDED_CLAMP, "weights": WEIGHTS}


def _cases():
    for case in sorted(CASES):
        for bp in (0.0, 0.3):
            quick = (bp > 0) == (case == "conv")
            yield pytest.param(case, bp, marks=() if quick else pytest.mark.slow,
                               id=f"{case}-bp{bp}")


@pytest.mark.sim
@pytest.mark.parametrize("case, backpressure", list(_cases()))
def test_dma(case, backpressure):
    cfg = dict(CASES[case], lanes=8, backpressure=backpressure, latency=20)
    metrics = run_bench(Dma(lanes=8), bench="test_dma", config=cfg)
    assert metrics["dma_read_beats"] > 0
