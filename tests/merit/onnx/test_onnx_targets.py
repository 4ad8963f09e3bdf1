"""Fixed point, the MERIT-z performance table, the GPU path and `merit run`, on a tiny model."""

import json

import numpy as np
import pytest

pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from merit import isa  # noqa: E402
from merit.cli import main  # noqa: E402
from merit.onnx import load  # noqa: E402
from merit.onnx.quant import fixed_point, frac_for, quantize  # noqa: E402
from merit.onnx.targets import gpu_runner, overall, predict_network, simulate_layers  # noqa: E402


def tiny_model(path=None, seed=3):
    """Conv (bias) + Relu, MaxPool, grouped Conv + Relu, Flatten, Gemm, Softmax."""
    rng = np.random.default_rng(seed)

    def init(name, *shape, scale=0.3):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32),
                                       name)
    inits = [init("w1", 8, 4, 3, 3), init("b1", 8), init("w2", 8, 4, 3, 3), init("b2", 8),
             init("fc", 10, 8 * 4 * 4), init("fcb", 10)]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2],
                         name="pool1"),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], group=2,
                         name="conv2"),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("Flatten", ["r2"], ["f"], name="flat"),
        helper.make_node("Gemm", ["f", "fc", "fcb"], ["y"], transB=1, name="fc"),
        helper.make_node("Softmax", ["y"], ["prob"], axis=1, name="softmax"),
    ]
    graph = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [1, 4, 8, 8])], [helper.make_tensor_value_info(
            "prob", TensorProto.FLOAT, [1, 10])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    if path is not None:
        import onnx
        onnx.save(model, str(path))
    return model


def inputs(k, seed=10):
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal((1, 4, 8, 8)).astype(np.float32)] for _ in range(k)]


def test_frac_for():
    assert frac_for(1.0) == 14 and frac_for(0.9) == 15 and frac_for(100.0) == 8
    assert frac_for(1.0, 32) == 30


@pytest.fixture(scope="module")
def quantized():
    net = load(tiny_model())
    return net, quantize(net, inputs(4))


def test_fixed_point_layers_equal_the_isa_interpreter(quantized):
    """The fast fixed-point model of every MERIT-z kernel equals merit.isa.run bit for bit."""
    net, qnet = quantized
    _, q = qnet.run(inputs(1, seed=99)[0], keep=True)
    checked = 0
    for ql in qnet.layers:
        if not ql.meritz:
            continue
        for part, shift, consts in zip(ql.layer.parts, ql.shifts, ql.consts, strict=True):
            arrays = [consts[t.name] if t.name in consts else
                      np.asarray(q[part.bind[t.name][1]]).reshape(t.shape)
                      for t in part.problem.tensors]
            fast = fixed_point(part.problem, arrays, shift)
            exact = isa.run(part.problem, *arrays, shift=shift)
            np.testing.assert_array_equal(fast, exact)
            checked += 1
    assert checked == 4
    assert [ql.layer.op for ql in qnet.layers if ql.meritz] == ["Conv+Relu", "MaxPool",
                                                                "Conv+Relu", "Gemm"]


def test_fixed_point_accuracy(quantized):
    net, qnet = quantized
    errors, agree = [], 0
    for feeds in inputs(20, seed=50):
        (f,), (q,) = net.run(feeds), qnet.run(feeds)
        errors.append(np.abs(f - q).max())
        agree += int(f.argmax() == q.argmax())
    assert max(errors) < 2e-3 and agree >= 19


def test_fixed_point_kernels_compile(quantized):
    _, qnet = quantized
    kernels = qnet.kernels(lanes=8)
    assert [name for name, _, _ in kernels] == ["conv1", "pool1", "conv2", "fc"]
    conv2 = kernels[2][2]
    assert conv2.problem.p_shape == (1, 4, 4, 4)       # one group: a kernel per group


def test_meritz_table():
    net = load(tiny_model())
    rows = predict_network(net, lanes=8, taus=1)
    where = {r.name: r.where for r in rows}
    assert where == {"conv1": "meritz", "pool1": "meritz", "conv2": "meritz", "flat": "view",
                     "fc": "meritz", "softmax": "host"}
    conv2 = next(r for r in rows if r.name == "conv2")
    assert conv2.kernels == 2 and conv2.useful_ops > conv2.macs
    for r in rows:
        if r.where == "meritz":
            assert 0 < r.utilization <= 1 and r.read_bytes > 0 and r.write_bytes > 0
    total = overall(rows, lanes=8, taus=1)
    assert total["cycles"] == sum(r.cycles for r in rows if r.where == "meritz")
    assert 0 < total["utilization"] < 1


def test_gpu_path_without_a_gpu(monkeypatch):
    """The GPU runner hands every problem to merit.gpu.run with float32 arrays and brings the
    result back; here merit.gpu.run is replaced by the golden model (no GPU on this machine)."""
    import merit.gpu as mg
    calls = []

    class Device:
        def __init__(self, value):
            self.value = value

        def get(self):
            return self.value

    def fake_run(problem, *arrays, **kwargs):
        calls.append(problem.name)
        assert all(a.dtype == np.float32 for a in arrays)
        return Device(problem.run(*arrays))

    monkeypatch.setattr(mg, "run", fake_run)
    net = load(tiny_model())
    x = inputs(1)[0]
    np.testing.assert_allclose(net.run(x, runner=gpu_runner())[0], net.run(x)[0], rtol=1e-6)
    assert calls == ["conv", "max_pool", "conv", "gemm", "softmax"]
    for ly in net.layers:
        for p in ly.problems:
            assert "__global__" in mg.kernel_source(p)


def test_merit_run_cli(tmp_path, capsys):
    path = tmp_path / "tiny.onnx"
    tiny_model(path)
    assert main(["run", str(path), "--check"]) == 0
    out = capsys.readouterr().out
    assert "conv1            Conv+Relu" in out and "onnxruntime: max relative difference" in out
    record = tmp_path / "m.json"
    assert main(["run", str(path), "--on", "meritz", "--lanes", "8", "--taus", "1",
                 "--json", str(record), "--png", str(tmp_path / "m.png")]) == 0
    out = capsys.readouterr().out
    assert "16-bit fixed point" in out and "top-1 agrees" in out
    assert "softmax          Softmax                    host" in out
    data = json.loads(record.read_text())
    assert data["overall"]["layers"] == 4 and (tmp_path / "m.png").stat().st_size > 1000
    assert main(["run", str(tmp_path / "none.onnx")]) == 2
    assert "no ONNX model at" in capsys.readouterr().err
    assert main(["run", str(path), "--on", "gpu"]) == 2
    assert "--on gpu needs CuPy and a CUDA GPU" in capsys.readouterr().err


def test_rtl_layer_names_are_checked(quantized):
    _, qnet = quantized
    with pytest.raises(ValueError, match="no layer 'conv9'; layers: conv1, pool1, conv2"):
        simulate_layers(qnet, ["conv9"], simulate=lambda *a, **k: None)
    with pytest.raises(ValueError, match=r"layer 'softmax' \(Softmax\) has no MERIT-z program"):
        simulate_layers(qnet, ["softmax"], simulate=lambda *a, **k: None)


@pytest.mark.sim
@pytest.mark.xdist_group("tau_n8")      # the guide's 8-lane TAU build
def test_merit_run_rtl_is_bit_exact(tmp_path, capsys):
    """--rtl: a named layer on the Verilator model of an 8-lane TAU (the simulation compares
    every output with the golden ISA model and fails otherwise). conv2 is grouped: one kernel
    per group, with its bias and ReLU."""
    path = tmp_path / "tiny.onnx"
    tiny_model(path)
    assert main(["run", str(path), "--on", "meritz", "--lanes", "8", "--taus", "1",
                 "--rtl", "conv2"]) == 0
    out = capsys.readouterr().out
    assert "RTL conv2 (kernel 0):" in out
    assert out.count("bit-exact against the golden ISA model") == 1
