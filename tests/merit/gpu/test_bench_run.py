"""How ``bench.gpu`` splits and describes a run, without a GPU: each row's data seeded by its key,
the header of a run measured in several calls or stopped with rows left."""

import numpy as np

from bench.gpu import _calls, row_rng


def test_row_data_depend_on_the_key_alone():
    a = row_rng("gemm").standard_normal(4)
    row_rng("conv_3+1").standard_normal(100)          # another row drawn in between
    assert np.array_equal(row_rng("gemm").standard_normal(4), a)
    assert not np.array_equal(row_rng("gemm@fp16").standard_normal(4), a)


def test_header_names_each_call_and_the_rows_left():
    one = {"date": "d1", "device": "NVIDIA H200 sm_90", "wall_s": 500.0, "rows": 40, "jobs": 12}
    assert _calls({"calls": [one]}) == []             # one call: the usual header alone
    two = dict(one, date="d2", wall_s=120.4, rows=29)
    lines = _calls({"calls": [one, two]})
    assert len(lines) == 1 and "2 calls" in lines[0] and "--resume" in lines[0]
    assert "d1, 40 rows, 500 s" in lines[0] and "d2, 29 rows, 120 s" in lines[0]
    left = _calls({"calls": [one], "pending": ["rand4_gemm_odd", "q_conv"]})
    assert len(left) == 1 and "2 rows not yet measured (rand4_gemm_odd, q_conv)" in left[0]
