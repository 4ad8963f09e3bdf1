"""ONNX's own conformance tests on merit.onnx.backend (the golden model).

* node tests: the generated test cases of the ops the front end maps
  (``onnx.backend.test.case.node.collect_testcases()``; the wheel ships the generators, not the
  data files), each run through ``backend.run_model`` against ONNX's expected outputs with the
  case's own tolerances;
* model tests: the ``pytorch-converted`` and ``pytorch-operator`` models that
  ``onnx.backend.test.BackendTest`` loads, ops outside the front end's list excluded by name.
"""

import warnings

import numpy as np
import pytest

pytest.importorskip("onnx")

import onnx.backend.test  # noqa: E402
from onnx.backend.test.case.node import collect_testcases  # noqa: E402

from merit.onnx import UnsupportedOp, backend  # noqa: E402

#: The ops of the front end (docs/onnx.md).
OPS = {"Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool", "Gemm", "MatMul",
       "BatchNormalization", "LRN", "Relu", "LeakyRelu", "Clip", "Sigmoid", "Add", "Sum", "Mul",
       "Concat", "Transpose", "Reshape", "Flatten", "Unsqueeze", "DepthToSpace", "Softmax",
       "Dropout"}

#: Node tests of those ops that the front end refuses, and why (training and argmax outputs).
NODE_REFUSED = {
    "test_batchnorm_example_training_mode": "training mode",
    "test_batchnorm_epsilon_training_mode": "training mode",
    "test_maxpool_with_argmax_2d_precomputed_pads": "Indices output",
    "test_maxpool_with_argmax_2d_precomputed_strides": "Indices output",
    **{f"test_training_dropout{s}": "training mode"
       for s in ("", "_mask", "_default", "_default_mask", "_zero_ratio", "_zero_ratio_mask")},
}

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    NODE_CASES = [c for c in collect_testcases()
                  if c.model.graph.node and {n.op_type for n in c.model.graph.node} <= OPS]


@pytest.mark.parametrize("case", NODE_CASES, ids=lambda c: c.name)
def test_node(case):
    if case.name in NODE_REFUSED:
        with pytest.raises(UnsupportedOp, match=r"node '.*': op \w+ \(attributes: .*\) cannot "
                                                 r"be mapped onto MERIT problems"):
            for inputs, _ in case.data_sets:
                backend.run_model(case.model, inputs)
        return
    for inputs, expected in case.data_sets:
        outputs = backend.run_model(case.model, inputs)
        assert len(outputs) == len(expected)
        for got, want in zip(outputs, expected, strict=True):
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_allclose(got, want, rtol=case.rtol, atol=case.atol)


def test_node_counts():
    """Every op of the list has node tests, and all of them pass but the refused ones."""
    ops = {n.op_type for c in NODE_CASES for n in c.model.graph.node}
    assert ops == OPS
    assert len(NODE_CASES) == 186
    assert len(NODE_CASES) - len(NODE_REFUSED) == 176


#: pytorch-converted / pytorch-operator models with an op outside the list (by that op).
MODEL_EXCLUDED = {
    "Pad": ["test_ConstantPad2d", "test_ReflectionPad2d", "test_ReplicationPad2d",
            "test_ZeroPad2d", "test_operator_pad"],
    "Elu / Selu / Softplus / Tanh / Exp / Sqrt / Pow / Abs / Neg / PRelu": [
        "test_ELU", "test_SELU", "test_operator_selu", "test_Softplus", "test_Tanh",
        "test_operator_basic", "test_operator_params", "test_operator_exp", "test_operator_sqrt",
        "test_operator_pow", "test_Softsign", "test_Softmin", "test_PoissonNLLLLoss_no_reduce",
        "test_operator_symbolic_override_nested", "test_PReLU_1d", "test_PReLU_1d_multiparam",
        "test_PReLU_2d", "test_PReLU_2d_multiparam", "test_PReLU_3d", "test_PReLU_3d_multiparam"],
    "Gather / Split / Slice / Tile / Max / Min": [
        "test_Embedding", "test_Embedding_sparse", "test_GLU", "test_GLU_dim",
        "test_operator_chunk", "test_operator_index", "test_operator_repeat",
        "test_operator_repeat_dim_overflow", "test_operator_max", "test_operator_min"],
    "LogSoftmax / ReduceMean / ReduceSum / InstanceNormalization": [
        "test_LogSoftmax", "test_log_softmax_dim3", "test_log_softmax_lastdim",
        "test_operator_reduced_mean", "test_operator_reduced_mean_keepdim",
        "test_operator_reduced_sum", "test_operator_reduced_sum_keepdim",
        "test_operator_symbolic_override"],
}
EXCLUDED_NAMES = [n for names in MODEL_EXCLUDED.values() for n in names]
MODEL_KINDS = ("OnnxBackendPyTorchConvertedModelTest", "OnnxBackendPyTorchOperatorModelTest")

_tests = onnx.backend.test.BackendTest(backend, __name__)
_tests.include(r"^test_.*_cpu$")
for _name in EXCLUDED_NAMES:
    _tests.exclude(rf"^{_name}_cpu$")
globals().update({k: v for k, v in _tests.test_cases.items() if k in MODEL_KINDS})


def test_model_counts():
    """117 CPU model tests in the two folders: 74 run here, 43 excluded by name."""
    names = {n for kind in MODEL_KINDS for n in dir(globals()[kind])
             if n.startswith("test_") and n.endswith("_cpu")}
    excluded = {f"{n}_cpu" for n in EXCLUDED_NAMES}
    assert len(names) == 117 and len(excluded) == 43 and excluded <= names
