"""The package as a user installs it: ``python -m build`` gives a wheel and an sdist; the wheel,
installed into a fresh virtual environment, works from a directory outside the checkout (ingest,
the embedded demo, leaderboard, sql), with the data root chosen by the default rule."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_the_listed_packages_are_the_folders_with_an_init():
    setup = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapped = {v: k for k, v in setup["package-dir"].items()}  # flows -> defsentflow.flows
    found = set()
    for init in [*REPO.glob("defsentflow/**/__init__.py"), *REPO.glob("flows/__init__.py"), *REPO.glob("tasks/**/__init__.py")]:
        folder = init.parent.relative_to(REPO).as_posix()
        top = folder.split("/", 1)[0]
        found.add(folder.replace(top, mapped[top], 1).replace("/", ".") if top in mapped else folder.replace("/", "."))
    data = {p for p in setup["packages"] if p not in found}  # data folders listed so that setuptools keeps quiet
    assert all((REPO / p.replace(".", "/")).is_dir() for p in data), data
    assert found <= set(setup["packages"])


@pytest.fixture(scope="session")
def dist(tmp_path_factory) -> Path:
    """``python -m build`` of this checkout, once per session (no isolation: the build backend of the
    project's environment, no download)."""
    out = tmp_path_factory.mktemp("dist")
    res = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(REPO)],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return out


def _fresh_venv(path: Path, wheel: Path) -> Path:
    """A new virtual environment holding the wheel; its dependencies are the project environment's
    (a .pth line: installing torch and the rest again would take minutes)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    site = Path(subprocess.run([str(path / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    deps = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site / "project-dependencies.pth").write_text("\n".join(deps) + "\n")
    res = subprocess.run([str(path / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                          str(wheel)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-3000:]
    return site


@pytest.mark.slow
def test_the_wheel_works_outside_the_checkout(dist, tmp_path, tiny_bert_dir, prefect_test_harness):
    from prefect.settings import PREFECT_API_URL

    (wheel,) = dist.glob("defsentflow-*.whl")
    (sdist,) = dist.glob("defsentflow-*.tar.gz")
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("defsentflow/sql/001_core.sql", "defsentflow/sql/queries/leaderboard.sql", "defsentflow/configs/demo.yaml",
                   "defsentflow/sample/dictionary/oewn-sample.jsonl", "defsentflow/flows/pipeline.py",
                   "defsentflow/tasks/evaluation.py"):
        assert needed in names, needed
    assert not {n.split("/")[0] for n in names} & {"flows", "tasks", "sql", "tests"}  # no generic top-level names
    with tarfile.open(sdist) as tar:
        members = {m.split("/", 1)[1] for m in tar.getnames() if "/" in m}
    assert {"pyproject.toml", "flows/pipeline.py", "defsentflow/configs/demo.yaml", "defsentflow/sql/001_core.sql"} <= members

    site = _fresh_venv(tmp_path / "venv", wheel)
    bin_dir = tmp_path / "venv" / "bin"
    elsewhere = tmp_path / "elsewhere"  # the current directory: outside the checkout
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DEFSENTFLOW_", "PREFECT_", "PYTHON", "XDG_"))}
    env.update({"HOME": str(tmp_path / "user"), "PATH": f"{bin_dir}:{env['PATH']}", "DEFSENTFLOW_QUIET": "1",
                "PREFECT_API_URL": PREFECT_API_URL.value(), "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"})

    def cli(*args: str, timeout: float = 600) -> str:
        res = subprocess.run([str(bin_dir / "defsentflow"), *args], cwd=elsewhere, env=env, capture_output=True,
                             text=True, timeout=timeout)
        assert res.returncode == 0, f"defsentflow {' '.join(args)}:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
        stderr[:] = [res.stderr]
        return res.stdout

    stderr: list[str] = []  # the last command's (where the data-root line goes, first)

    where = subprocess.run([str(bin_dir / "python"), "-c", "import defsentflow, defsentflow.flows; print(defsentflow.__file__)"],
                           cwd=elsewhere, env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert Path(where).is_relative_to(site), where  # the wheel's copy, not the checkout's

    root = tmp_path / "user" / ".local" / "share" / "defsentflow"  # the default for an installed package
    words = tmp_path / "words.jsonl"
    words.write_text('{"entry": "cat", "definition": "a small animal"}\n{"entry": "dog", "definition": "an animal that barks"}\n')
    cli("ingest", "dictionary", "--source", "jsonl", str(words), "--name", "words")
    assert stderr[0].startswith(f"data root: {root} (new, the default; choose another with --home"), stderr[0]
    # the embedded demo, made small: the tiny model, one PST step, few entries and queries
    out = cli("run", "demo", "--set", f"pst.base_model={tiny_bert_dir}", "--set", "pst.steps=1",
              "--set", "pst.max_train_entries=40", "--set", "pst.batch_size=8", "--set", "pst.selection_max_queries=40",
              "--set", "eval.revdict_max_queries=40", "--set", "eval.revdict_modes=[cosine]", "--set", "pst.device=cpu")
    assert stderr[0].startswith(f"data root: {root} (default)") and "(completed, promoted)" in out, stderr[0][:300] + out  # the first run sets demo@champion
    run_id = next(line.split()[1] for line in out.splitlines() if line.startswith("run:"))
    assert (root / "logs" / f"{run_id}.log").is_file()
    selected = next(line.split()[1] for line in out.splitlines() if line.startswith("selected:"))
    board = cli("leaderboard")
    assert selected in board, board  # the model's own id (pst-<run> is an alias of it)
    counts = cli("sql", "SELECT dataset, count(*) AS n FROM definitions GROUP BY dataset ORDER BY dataset")
    rows = dict(line.split() for line in counts.splitlines()[2:])
    assert rows["words"] == "2" and int(rows["sample"]) > 7000, counts
