"""CPU tests of the staged epilogue of persistent wgmma tiles (``Tile.epi``): the plan, the
staging writes evaluated from the generated source against the fragment layout and the copy
engine's swizzled box, the order of waits, barriers and bulk stores, candidates, refusals, and
an sm_90a compile of the device test's tiles."""

import dataclasses
import re
import shutil

import pytest
from sm90 import assert_builds_without_spills
from wgmma_tiles import half_spec, persistent_tile

from merit import workloads as W
from merit.gpu import TUNED, ldsm, tiling
from merit.gpu.ldsm import EPI_BYTES, EPI_COLS, epi_offset, epi_plan, smem_bytes, source
from merit.gpu.spec import spec_of
from merit.gpu.tiling import H100, WG_TUNED, check_tile, rank


def test_epi_offset_is_the_128_byte_swizzle():
    """Every element of a 64 x 32 fp32 box once, 16-byte piece c of row r at piece c ^ r % 8."""
    seen = {epi_offset(r, c) for r in range(64) for c in range(EPI_COLS)}
    assert seen == set(range(0, EPI_BYTES, 4))
    assert epi_offset(0, 5) == 20 and epi_offset(1, 0) == 128 + 16 and epi_offset(9, 6) == (
        9 * 128 + ((1 ^ 1) << 4) + 8)


def test_plan_of_the_gemm_tile():
    spec = half_spec(W.gemm(4096, 4096, 4096))
    t = persistent_tile(spec, "b128x256")
    p = epi_plan(spec, t)
    assert p["dims"] == (4096, 4096) and p["strides"] == (16384,) and p["box"] == (32, 64)
    assert p["nwg"] == 2 and p["chunks"] == 8 and p["bytes"] == 2 * 2 * 8192
    # after the 4 buffers of 48 KB and their 8 mbarriers, at a 1024-byte boundary
    assert p["top"] == 197632 and p["top"] % 1024 == 0
    assert smem_bytes(spec, t) == 1024 + 197632 + 32768 <= H100.smem_block
    assert t.label().endswith("_g132_e2")


def _eval(expr, env):
    """A C integer expression of the generated source evaluated in Python (the operators used
    have the same meaning and precedence for non-negative values)."""
    return eval(re.sub(r"\(unsigned\)", "", expr), {}, dict(env))   # noqa: S307


_WRITE = re.compile(
    r"const int fl = (.*?);\s*"
    r"const float a0 = \(gq & 1\) \? (c0_\d+_\d+) : (c0_\d+_\d+);\s*"
    r"const float a1 = \(gq & 1\) \? (c0_\d+_\d+) : (c0_\d+_\d+);\s*"
    r"float v0; \{ Strat st; st\.acc = a0; st\.post0\((.*?), (.*?), \d+\); v0 = st\.out0; \}\s*"
    r"float v1; \{ Strat st; st\.acc = a1; st\.post0\((.*?), (.*?), \d+\); v1 = st\.out0; \}\s*"
    r"merit_sts2\((.*?), v0, v1\);")


def _frag(name):
    f, e = map(int, name.split("_")[1:])
    return f, e


@pytest.mark.parametrize("shape,epi", [("b128x256", 2), ("b128x256", 4), ("b64x64", 2),
                                       ("b128x128w2", 2)])
def test_staging_writes_match_fragments_and_swizzle(shape, epi):
    """For every consumer thread, chunk and write of the generated epilogue: the sums a lane
    writes are two of its own (the wgmma fragment layout: row ``16 (wm % 4) + gq + 8 h``,
    columns ``8 fn + 2 tq``, ``+ 1``), the PostLoop gets their output coordinates, and the
    address evaluated from the source is staging buffer ``c % epi`` of the thread's warpgroup
    plus ``epi_offset`` of their row and column in the chunk; every sum of the chunk is written
    once and the warpgroup's writes fill its 64 x 32 box; in each half-warp (the phases of 8-byte
    shared stores) no two lanes touch one bank; the box stored from buffer b goes to columns
    ``e1 + 32 c``."""
    spec = half_spec(W.gemm(1000, 520, 300))
    t = persistent_tile(spec, shape, epi=epi, stages=3 if epi == 4 else 4)
    p = epi_plan(spec, t)
    code = source(spec, t)[1]
    body = code[code.index("const int eg = warp >> 2;"):]
    top = int(re.search(r"const unsigned eb = sbase \+ (\d+) \+ eg \* (\d+);", body).group(1))
    assert top == p["top"]
    assert int(re.search(r"eg \* (\d+);", body).group(1)) == epi * EPI_BYTES
    chunks = body.split("merit_bulk_wait_read<")[1:]
    assert len(chunks) == p["chunks"]
    wm_n, wn_n = t.warps
    fn_n = t.frags[1]
    assert fn_n * 8 == EPI_COLS * p["chunks"]
    for c, text in enumerate(chunks):
        assert text.startswith(f"{epi - 1}>();")
        b = c % epi
        writes = _WRITE.findall(text)
        assert len(writes) == 8
        st = re.search(r"merit_tma_store2\(eb \+ (\d+), &tmo, e1 \+ (\d+), e0\)", text)
        assert int(st.group(1)) == b * EPI_BYTES and int(st.group(2)) == EPI_COLS * c
        for warp in range(wm_n * wn_n):
            wm = warp % wm_n
            eg = warp >> 2
            eb = top + eg * epi * EPI_BYTES
            done = set()
            for n, wr in enumerate(writes):
                fl_x, odd0, even0, odd1, even1, r0, c0, r1, c1, addr = wr
                slots = {}
                for lane in range(32):
                    gq, tq = lane >> 2, lane & 3
                    er = (wm & 3) * 16 + gq
                    env = dict(sbase=0, eb=eb, er=er, gq=gq, tq=tq, e0=0, e1=0)
                    env["fl"] = _eval(fl_x, env)
                    got = [_frag(odd0 if gq & 1 else even0), _frag(odd1 if gq & 1 else even1)]
                    (f0, x0), (f1, x1) = got
                    assert f0 == f1 and x1 == x0 + 1 and x0 % 2 == 0
                    assert f0 == 4 * c + env["fl"] and 0 <= env["fl"] < 4
                    h = x0 >> 1
                    row, col = er + 8 * h, 8 * env["fl"] + 2 * tq
                    assert (_eval(r0, env), _eval(c0, env)) == (row, EPI_COLS * c + col)
                    assert (_eval(r1, env), _eval(c1, env)) == (row, EPI_COLS * c + col + 1)
                    at = _eval(addr, env) - eb - b * EPI_BYTES
                    assert at == epi_offset(row, col), (c, warp, lane, n)
                    assert epi_offset(row, col + 1) == at + 4
                    assert (lane, f0, x0) not in done
                    done.add((lane, f0, x0))
                    for w4 in (at // 4, at // 4 + 1):
                        slots.setdefault(lane // 16, []).append(w4 % 32)
                for half, bl in slots.items():
                    assert sorted(bl) == list(range(32)), (c, warp, n, half)
            # each lane wrote each of its 16 sums of the chunk once (8 pairs)
            assert len(done) == 32 * 8
        # the warps of one warpgroup together write its whole box
        for eg in range(wm_n * wn_n // 4):
            rows = set()
            for warp in range(4 * eg, 4 * eg + 4):
                wm = warp % wm_n
                rows |= {(wm & 3) * 16 + gq + 8 * h for gq in range(8) for h in (0, 1)}
            assert rows == set(range(64))


def test_order_of_waits_barriers_and_stores():
    """Per chunk: the issuing thread's wait (at most epi - 1 bulk groups reading), the
    warpgroup's barrier, the writes, a proxy fence, the barrier again, then one bulk store and
    its commit by the issuing thread; after the tile loop, the wait for every bulk store."""
    spec = half_spec(W.gemm(4096, 4096, 4096))
    code = source(spec, persistent_tile(spec, "b128x256", epi=2))[1]
    body = code[code.index("const int eg = warp >> 2;"):]
    pat = re.compile(r"if \(\(tid & 127\) == 0\) merit_bulk_wait_read<1>\(\);\s*"
                     r"merit_epi_sync\(8 \+ eg\);(?:(?!merit_epi_sync).)*?merit_sts2.*?"
                     r"merit_proxy_fence\(\);\s*merit_epi_sync\(8 \+ eg\);\s*"
                     r"if \(\(tid & 127\) == 0\) \{ merit_tma_store2\(.*?\); "
                     r"merit_bulk_commit\(\); \}", re.S)
    assert len(pat.findall(body)) == 8
    tail = code[code.rindex("g0 += 64;"):]
    assert "merit_bulk_wait_all();" in tail
    assert "const __grid_constant__ MeritTmap tmo)" in code
    # the direct stores are gone from the staged form, and the plain form has no bulk stores
    assert "reinterpret_cast<float4*>(g_out0" not in code
    plain = source(spec, persistent_tile(spec, "b128x256", epi=0))[1]
    assert "merit_tma_store2" not in plain and "reinterpret_cast<float4*>(g_out0" in plain


def test_refusals():
    """No staged epilogue for a tile that is not persistent, A from registers (TF32 with the
    roles exchanged), a convolution (its output's columns are not innermost), rows of a
    number of columns that is no multiple of 4, a GEMM whose tile rows are its columns (the
    roles exchanged), or chunks that ``epi`` does not divide."""
    spec = half_spec(W.gemm(1000, 520, 300))
    with pytest.raises(ValueError, match="tile.epi"):
        persistent_tile(spec, "b128x256", persist=0)
    with pytest.raises(ValueError, match="tile.epi"):
        persistent_tile(spec, "b64x64", epi=4)   # 2 chunks
    odd = half_spec(W.gemm(1000, 522, 300))
    with pytest.raises(ValueError, match="tile.epi"):
        persistent_tile(odd, "b128x256")
    wide = half_spec(W.gemm(200, 1000, 300))   # rows of the tile: the GEMM's columns
    assert tuple(ldsm.tile_roles(wide, persistent_tile(wide, "b128x256", regs=(256, 128),
                                             epi=0)).rows) == (1,)
    with pytest.raises(ValueError, match="tile.epi"):
        persistent_tile(wide, "b128x256", regs=(256, 128))
    tf = spec_of(W.gemm(1000, 520, 300), "float32", "tf32")
    t = persistent_tile(tf, "b128x256", epi=0)
    a = ldsm.areg_variant(tf, t)
    assert a is not None and epi_plan(tf, dataclasses.replace(a, epi=2)) is None
    conv = half_spec(W.conv2d(2, 32, 8, 16, 64, 1))
    ct = check_tile(conv, dict(regs=(1, 64, 4, 16), warps=(4, 1), frags=(1, 8), mma="fp16",
                               ldsm=True, wgmma=True, chunk=64, stages=3, producer=True,
                               half=True, persist=4))
    assert epi_plan(conv, dataclasses.replace(ct, epi=2)) is None


def test_candidates(monkeypatch):
    """The staged forms (2 and 4 buffers where they fit) sit beside the persistent GEMM tiles,
    with the grid their shared memory leaves; none for a convolution or the areg tiles."""
    spec = half_spec(W.gemm(4096, 4096, 4096))
    tiles = rank(spec, count=TUNED + WG_TUNED, device=H100)
    labels = [t.label() for t in tiles]
    assert "fp16_b128x256_w8x1_f1x32_k64_wg_h4_mn_ws_tma_g132_e2" in labels
    assert "fp16_b128x256_w8x1_f1x32_k64_wg_h3_mn_ws_tma_g132_e4" in labels
    # 4 buffers of 48 KB leave no room for 4 staging buffers per warpgroup
    assert "fp16_b128x256_w8x1_f1x32_k64_wg_h4_mn_ws_tma_g132_e4" not in labels
    for t in tiles:
        if t.epi:
            assert smem_bytes(spec, t) <= H100.smem_block
            assert dataclasses.replace(t, epi=0, evict=0, persist=t.persist) in tiles or any(
                u.persist and not u.epi and dataclasses.replace(u, epi=t.epi, evict=t.evict,
                                                                persist=t.persist)
                == t for u in tiles)
    # the whole tile staged (tiling.EPI_WHOLE, off): 8 buffers a warpgroup fit beside 4 of
    # the ring only at BK 32, and 3 at BK 32 (BK 64 leaves no room)
    assert not any(t.epi == 8 for t in tiles)
    monkeypatch.setattr(tiling, "EPI_WHOLE", True)
    whole = [t for t in rank(spec, count=TUNED + WG_TUNED, device=H100) if t.epi == 8]
    labels = {t.label() for t in whole}
    assert "fp16_b128x256_w8x1_f1x32_k32_wg_h4_mn_ws_tma_g132_e8" in labels
    assert "fp16_b128x256_w8x1_f1x32_k32_wg_h3_mn_ws_tma_g132_e8" in labels
    assert all(t.chunk == 32 and t.persist == 132 for t in whole)
    assert all(smem_bytes(spec, t) <= H100.smem_block - 1024 for t in whole)
    assert max(smem_bytes(spec, t) for t in whole) == 231424
    vgg = half_spec(W.conv2d(16, 128, 56, 56, 256, 3, padding=1))
    assert not any(t.epi for t in rank(vgg, count=TUNED + WG_TUNED, device=H100))
    tf = spec_of(W.gemm(4096, 4096, 4096), "float32", "tf32")
    assert not any(t.epi and t.areg for t in rank(tf, count=TUNED + WG_TUNED, device=H100))


_DEVICE_CASES = [
    (W.gemm(333, 200, 1000), "b128x128", 4), (W.gemm(1000, 520, 200), "b128x128", 7),
    (W.gemm(300, 260, 520), "b128x256", 5), (W.gemm(300, 48, 312), "b64x64", 2),
    (W.fc(520, 312, 200), "b128x128w2", 3),
]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_device_test_tiles_compile_without_spills(tmp_path):
    """The tiles of the device test (FP16 and TF32, 2 and 4 buffers) build for sm_90a with no
    spill stores."""
    for problem, shape, grid in _DEVICE_CASES:
        for prec, kw in (("fp16", dict(chunk=32, stages=3, epi=2)),
                         ("tf32", dict(chunk=32, stages=3, epi=2))):
            spec = (half_spec(problem, prec) if prec != "tf32"
                    else spec_of(problem, "float32", "tf32"))
            t = persistent_tile(spec, shape, persist=grid,
                                mn=problem.name == "gemm" and prec != "tf32", **kw)
            assert_builds_without_spills(source(spec, t)[1], tmp_path, t.label())
