"""No process outlives a killed command: pool workers (and the resource tracker) die with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from defsentflow.storage.atomic import pid_alive

SCRIPT = r"""
import multiprocessing, os, sys, time
from multiprocessing import resource_tracker
from defsentflow.workers import die_with_parent, owner_initargs, process_pool

if __name__ == "__main__":
    kind = sys.argv[1]
    if kind == "executor":  # what the OEWN reader uses
        pool = process_pool(2, "spawn")
        futures = [pool.submit(time.sleep, 120) for _ in range(2)]
        while len(pool._processes) < 2:
            time.sleep(0.05)
        pids = list(pool._processes)
    else:  # what sentence segmentation uses
        pool = multiprocessing.get_context("forkserver").Pool(2, initializer=die_with_parent, initargs=owner_initargs())
        pool.map_async(time.sleep, [120, 120])
        pids = [p.pid for p in pool._pool]
    time.sleep(1.0)  # the workers are running their initializer's watcher
    from multiprocessing import forkserver
    helpers = [resource_tracker._resource_tracker._pid, getattr(forkserver._forkserver, "_forkserver_pid", None)]
    print(" ".join(str(p) for p in pids + [h for h in helpers if h]), flush=True)
    time.sleep(120)
"""


@pytest.mark.parametrize("kind", ["executor", "forkserver-pool"])
def test_kill_9_leaves_no_worker_or_tracker(tmp_path, kind):
    script = tmp_path / "pool.py"
    script.write_text(SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script), kind], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert len(pids) >= 3 and all(pid_alive(p) for p in pids)  # workers + tracker (+ forkserver)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 10
        while any(pid_alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [p for p in pids if pid_alive(p)] == []
    finally:
        if proc.poll() is None:
            proc.kill()
