"""merit.onnx.load: fusion, folding, errors, the host fallback, and whole networks against
onnxruntime (float32)."""

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from merit import strategies as S  # noqa: E402
from merit.onnx import UnsupportedOp, load  # noqa: E402
from merit.onnx.models import LIGHT, light_model  # noqa: E402

#: Whole networks: golden model vs onnxruntime, |ours - ort| <= RTOL * |ort| elementwise.
RTOL = 1e-4


def onnxruntime(model, feeds):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def small_cnn(rng):
    """Conv -> BatchNormalization -> Relu -> MaxPool -> Flatten -> Gemm -> Softmax."""
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    bn = [rng.standard_normal(4).astype(np.float32) for _ in range(3)]
    var = (np.abs(rng.standard_normal(4)) + 0.5).astype(np.float32)
    fc = rng.standard_normal((10, 4 * 4 * 4)).astype(np.float32)
    inits = [numpy_helper.from_array(v, n) for v, n in
             [(w, "w"), (b, "b"), (bn[0], "g"), (bn[1], "beta"), (bn[2], "mean"), (var, "var"),
              (fc, "fc")]]
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("BatchNormalization", ["c", "g", "beta", "mean", "var"], ["n"],
                         name="bn"),
        helper.make_node("Relu", ["n"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2],
                         name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flat"),
        helper.make_node("Gemm", ["f", "fc"], ["y"], transB=1, name="fc"),
        helper.make_node("Softmax", ["y"], ["prob"], axis=1, name="softmax"),
    ]
    graph = helper.make_graph(nodes, "small", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [2, 3, 8, 8])], [helper.make_tensor_value_info(
            "prob", TensorProto.FLOAT, [2, 10])], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_small_cnn_fuses_and_matches_onnxruntime():
    rng = np.random.default_rng(1)
    model = small_cnn(rng)
    net = load(model)
    assert [ly.op for ly in net.layers] == ["Conv+BatchNormalization+Relu", "MaxPool", "Flatten",
                                            "Gemm", "Softmax"]
    conv = net.layers[0]
    assert isinstance(conv.problems[0].strategy, S.DotResidual) and conv.problems[0].strategy.relu
    assert conv.nodes == ("conv", "bn", "relu") and "bn" in net.folded
    assert net.layers[2].kind == "view"
    x = rng.standard_normal((2, 3, 8, 8)).astype(np.float32)
    (ours,) = net.run([x])
    (ref,) = onnxruntime(model, {"x": x})
    np.testing.assert_allclose(ours, ref, rtol=RTOL, atol=1e-6)
    unfused = load(model, fuse=False)
    assert [ly.op for ly in unfused.layers][:3] == ["Conv", "BatchNormalization", "Relu"]
    np.testing.assert_allclose(unfused.run([x])[0], ref, rtol=RTOL, atol=1e-6)


def tanh_model():
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="act"),
             helper.make_node("Tanh", ["r"], ["y"], name="squash")]
    graph = helper.make_graph(nodes, "t", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [2, 3])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, [2, 3])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_unmappable_op_is_an_error_naming_node_op_and_attributes():
    with pytest.raises(UnsupportedOp, match=r"node 'squash': op Tanh \(attributes: none; inputs "
                                            r"\[\(2, 3\)\]\) cannot be mapped onto MERIT "
                                            r"problems: the op has no MERIT mapping; "
                                            r"load\(\.\.\., fallback=True\) runs it on the host"):
        load(tanh_model())
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2], name="mp")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [1, 1, 4, 4])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, None), helper.make_tensor_value_info(
            "i", TensorProto.INT64, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(UnsupportedOp, match=r"node 'mp': op MaxPool \(attributes: "
                                            r"kernel_shape=\[2, 2\]; .* the Indices output"):
        load(model)


def test_host_fallback_runs_and_is_reported():
    net = load(tanh_model(), fallback=True)
    assert [ly.name for ly in net.host_layers] == ["squash"]
    assert net.layers[0].kind == "merit"
    x = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_allclose(net.run([x])[0], np.tanh(np.maximum(x, 0)), rtol=1e-6)


def test_input_errors():
    net = load(tanh_model(), fallback=True)
    with pytest.raises(ValueError, match=r"input 'x' has shape \(3, 3\), the network was loaded "
                                         r"for \(2, 3\)"):
        net.run([np.zeros((3, 3), np.float32)])
    with pytest.raises(ValueError, match=r"input_shapes names \['z'\], which are not graph "
                                         r"inputs \(x\)"):
        load(tanh_model(), input_shapes={"z": (1,)})


def run_light(name, seed=0):
    model = light_model(name, seed=seed)
    net = load(model)
    (input_name, (shape, _)), = net.inputs.items()
    x = np.random.default_rng(seed + 1).standard_normal(shape).astype(np.float32)
    (ours,) = net.run([x])
    (ref,) = onnxruntime(model, {input_name: x})
    return net, ours, ref


def test_alexnet_matches_onnxruntime():
    net, ours, ref = run_light("bvlc_alexnet")
    assert [ly.op for ly in net.layers][:3] == ["Conv+Relu", "LRN", "MaxPool"]
    assert not net.host_layers
    np.testing.assert_allclose(ours, ref, rtol=RTOL, atol=0)
    assert ours.argmax() == ref.argmax()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["vgg19", "zfnet512", "resnet50", "squeezenet", "shufflenet",
                                  "inception_v1", "densenet121"])
def test_light_network_matches_onnxruntime(name):
    assert name in LIGHT
    _, ours, ref = run_light(name)
    np.testing.assert_allclose(ours, ref, rtol=RTOL, atol=0)
