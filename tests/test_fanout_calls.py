"""defsentflow/fanout.py, what a fanned-out call runs under (tests/flows/test_fanout.py: the flows' fan-out on a cluster):
the same threads on every executor, a GPU it asked for or a clear error."""

from __future__ import annotations

import pytest
import torch

from defsentflow.fanout import CallSettings, GpuMissingError, Sequential, in_turn, run_call, sequential, worker_device


def _threads() -> int:
    return torch.get_num_threads()


def test_calls_run_at_the_settings_threads_and_the_process_keeps_its_own():
    before = torch.get_num_threads()
    assert sequential(_threads, [()]) == [1] and Sequential(3)(_threads, [(), ()]) == [3, 3]
    assert run_call(_threads, (), CallSettings(threads=None)) == before  # None: the process's own
    assert in_turn(_threads, [()]) == [before]  # points and arms: nothing set around the whole run
    assert torch.get_num_threads() == before


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_a_call_that_asked_for_a_gpu_refuses_the_cpu():
    with pytest.raises(GpuMissingError, match=r"^asked for a GPU \(compute.gpus_per_candidate: 1\) but would run on cpu"):
        run_call(worker_device, ("auto",), CallSettings(gpus=1))
    assert run_call(worker_device, ("auto",), CallSettings(gpus=0)) == "auto"
