"""Every line of README's "After the demo" block runs as written, on the session's tiny finished run
(its run id and dictionary for the demo's; `serve` on a free port instead of 8000, which another
process may hold). The block's last line, `prefect deployment run 'pipeline/demo' --watch`, needs a
server and a worker: tests/integration/test_deployment_loopback.py runs it against real ones."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from tiny_pipeline_utils import catalog_rows, cli_env

from defsentflow.cli import main

README = Path(__file__).resolve().parents[2] / "README.md"

pytestmark = pytest.mark.slow


def _block() -> list[str]:
    text = README.read_text(encoding="utf-8")
    body = text[text.index("**After the demo**"):]
    body = body[body.index("```bash\n") + len("```bash\n"):]
    return [line for line in body[:body.index("```")].splitlines() if line.strip()]


def test_every_line_after_the_demo_runs_as_written(tiny_finished_root, tmp_path, monkeypatch, capsys):
    _, home, _ = tiny_finished_root
    (run_id,) = catalog_rows(home, "SELECT run_id FROM runs WHERE flow = 'pipeline'")[0]
    monkeypatch.setenv("DEFSENTFLOW_HOME", str(home))
    monkeypatch.setenv("DEFSENTFLOW_QUIET", "1")
    monkeypatch.chdir(tmp_path)  # a user's folder: sentences.txt and exported/ are written here
    lines = _block()
    assert lines[-1].startswith("prefect deployment run 'pipeline/demo'") and len(lines) >= 9
    said: dict[str, str] = {}
    for line in lines[:-1]:
        line = line.replace("demo-1a2b3c4d", run_id).replace("'sample'", "'tiny'")
        for command in line.split(" && "):
            argv = shlex.split(command, comments=True)
            if argv[0] != "defsentflow":  # shell: the block makes its own input
                subprocess.run(["bash", "-c", command], check=True, cwd=tmp_path)
            elif argv[1] == "serve":
                said["serve"] = _serve(home)
            else:
                capsys.readouterr()
                assert main(argv[1:]) == 0, (command, capsys.readouterr())
                said[argv[1]] = capsys.readouterr().out
    assert max(len(x) for x in said["leaderboard"].splitlines()) <= 120, said["leaderboard"]
    (chosen,) = catalog_rows(home, "SELECT model_id FROM model_names WHERE name = ?", [f"pst-{run_id}"])[0]
    assert chosen in said["leaderboard"], said["leaderboard"]  # the run's name is an alias of the model's own id
    assert (tmp_path / "exported" / "README.md").is_file() and (tmp_path / "vectors.parquet").is_file()
    assert re.search(r"wrote 2 vectors .*\(encoding [\d,]+ sentences/s; loading the model", said["encode"])
    assert "matched definition" in said["revdict"] and "train" in said["sql"] and run_id in said["runs"]
    assert "<td class=\"entry\">" in said["serve"]


def _serve(home: Path) -> str:
    """`defsentflow serve --port 0`: the page it serves at the port it says."""
    server = subprocess.Popen([sys.executable, "-m", "defsentflow.cli", "serve", "--port", "0"],
                              env=cli_env(home), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = server.stdout.readline()
        while line and "serving" not in line:
            line = server.stdout.readline()
        url = re.search(r"http://\S+/", line).group(0)
        with urllib.request.urlopen(f"{url}revdict", timeout=60) as page:
            return page.read().decode()
    finally:
        server.terminate()
        server.wait(timeout=20)
