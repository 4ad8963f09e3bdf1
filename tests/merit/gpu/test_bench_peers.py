"""The bench's peer timing (``bench.gpu.time_peer``), without a GPU: a cuDNN peer is timed once
in each of ``PEER_TRIES`` fresh threads and the fastest kept; any other peer once, here."""

import threading

import pytest

from bench.gpu import PEER_TRIES, time_peer


def _clock(times):
    """A stand-in for ``runtime.time_launch``: the next of ``times`` per call, and the thread
    each call ran in."""
    seen = []

    def time_launch(fn):
        seen.append(threading.current_thread())
        fn()
        return times[len(seen) - 1]

    return time_launch, seen


def test_cudnn_peer_fastest_of_fresh_threads():
    time_launch, seen = _clock([0.033, 0.026, 0.027])
    ms, tries = time_peer("cuDNN fp32 (torch)", lambda: None, time_launch)
    assert PEER_TRIES == 3 and ms == 0.026 and tries == [0.033, 0.026, 0.027]
    assert len({id(t) for t in seen}) == 3 and threading.current_thread() not in seen


def test_other_peers_timed_once_here():
    time_launch, seen = _clock([0.5, 0.1])
    assert time_peer("cuBLAS SGEMM (torch)", lambda: None, time_launch) == (0.5, None)
    assert seen == [threading.current_thread()]


def test_a_failing_try_is_raised_in_the_caller():
    def boom():
        raise RuntimeError("no algorithm")

    time_launch, _ = _clock([1.0, 1.0, 1.0])
    with pytest.raises(RuntimeError, match="no algorithm"):
        time_peer("cuDNN fp16 (torch)", boom, time_launch)
