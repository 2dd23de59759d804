"""Progress output: complete lines in logs, nothing with --quiet."""

import io
import sys

from defsentflow.progress import progress


def _run(monkeypatch, **env) -> str:
    buf = io.StringIO()  # not a terminal
    monkeypatch.setattr(sys, "stderr", buf)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    for _ in progress(range(5), desc="stage"):
        pass
    return buf.getvalue()


def test_log_output_is_whole_lines(monkeypatch):
    monkeypatch.delenv("DEFSENTFLOW_QUIET", raising=False)
    monkeypatch.delenv("DEFSENTFLOW_PROGRESS", raising=False)
    out = _run(monkeypatch, DEFSENTFLOW_PROGRESS_INTERVAL="0")
    assert "\r" not in out
    lines = out.splitlines()
    assert lines and all(line.startswith("stage:") for line in lines)
    assert "5/5" in lines[-1]


def test_quiet_silences(monkeypatch):
    assert _run(monkeypatch, DEFSENTFLOW_QUIET="1") == ""
