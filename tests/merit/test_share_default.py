"""``compile_problem``'s default operand sharing: on more than one TAU it keeps the 2-D kernel
(two shared slots, the block walk) where ``merit.perf`` predicts it MARGIN faster than the 1-D
one, else the 1-D kernel; ``share_dims=1`` / ``2`` are overrides."""

import dataclasses

import pytest

from merit import workloads as W
from merit.compile import MARGIN, compile_problem, share_plans
from merit.perf import predict

SMALL = dict(lanes=8, rp_bytes=(2048, 1024), cp_bytes=2048)


def _cycles(kernel, taus):
    return predict(kernel, taus=taus, rp_bytes=SMALL["rp_bytes"]).cycles


def _two_slots(kernel):
    return kernel.sharing is not None and len(kernel.sharing) == 2


def _conv():
    return W.conv2d(1, 3, 9, 13, 4, 3, padding=1)


def _gemm():
    return W.gemm(36, 24, 16)


def test_the_default_shares_two_operands_where_the_model_finds_it_faster():
    one = compile_problem(_conv(), taus=8, share_dims=1, **SMALL)
    two = compile_problem(_conv(), taus=8, share_dims=2, share_counts=(2,), **SMALL)
    chosen = compile_problem(_conv(), taus=8, **SMALL)
    assert _two_slots(two) and _cycles(two, 8) < (1 - MARGIN) * _cycles(one, 8)
    assert _two_slots(chosen)
    assert chosen.tiling == two.tiling
    assert (chosen.config["share_log2"], chosen.config["share2_log2"]) == \
        tuple(v for _, v in chosen.sharing)
    assert _cycles(chosen, 8) <= _cycles(two, 8)


def test_the_default_keeps_1d_where_2d_is_not_faster():
    one = compile_problem(_gemm(), taus=8, share_dims=1, **SMALL)
    two = compile_problem(_gemm(), taus=8, share_dims=2, share_counts=(2,), **SMALL)
    assert _two_slots(two)
    # the premise: no two-slot plan on the 2-D kernel's tiles is MARGIN faster than 1-D
    for plan in share_plans(two.config, len(two.problem.p_shape), 8):
        cfg = dict(two.config)
        (cfg["share_slot"], cfg["share_log2"]), (cfg["share2_slot"], cfg["share2_log2"]) = plan
        other = dataclasses.replace(two, config=cfg, sharing=plan)
        assert _cycles(other, 8) >= (1 - MARGIN) * _cycles(one, 8)
    chosen = compile_problem(_gemm(), taus=8, **SMALL)
    assert chosen.sharing is None and chosen.config["share2_log2"] == 0
    assert chosen.tiling == one.tiling and chosen.config == one.config


def test_the_default_picks_the_fastest_plan_on_its_tiles():
    chosen = compile_problem(_conv(), taus=8, **SMALL)
    plans = share_plans(chosen.config, len(chosen.problem.p_shape), 8)
    assert chosen.sharing in plans and len(plans) > 1
    for plan in plans:
        cfg = dict(chosen.config)
        (cfg["share_slot"], cfg["share_log2"]), (cfg["share2_slot"], cfg["share2_log2"]) = plan
        other = dataclasses.replace(chosen, config=cfg, sharing=plan)
        assert _cycles(chosen, 8) <= _cycles(other, 8)
    # every plan is one the processor deals: two slots in different RPs, blocks within 8 TAUs
    for (a, la), (b, lb) in plans:
        ports = [p for p in (0, 1) for _ in chosen.config[f"rp{p}"]]
        assert ports[a] != ports[b] and la >= 1 and lb >= 1 and la + lb <= 3


def test_explicit_sharing_is_honoured():
    one = compile_problem(_conv(), taus=8, share_dims=1, **SMALL)
    assert one.sharing is None and one.config["share2_log2"] == 0 and one.config["share_log2"]
    two = compile_problem(_gemm(), taus=8, share_dims=2, share_counts=(2,), **SMALL)
    assert _two_slots(two)
    assert (two.config["share2_slot"], two.config["share2_log2"]) == two.sharing[1]


def test_one_tau_shares_nothing_by_default():
    k = compile_problem(_conv(), taus=1, **SMALL)
    assert k.sharing is None and k.config["share_log2"] == 0 and k.config["share2_log2"] == 0


def test_share_dims_none_is_the_default_and_others_are_refused():
    with pytest.raises(ValueError, match="share_dims must be None, 1 or 2, not True"):
        compile_problem(_gemm(), taus=4, share_dims=True, **SMALL)
