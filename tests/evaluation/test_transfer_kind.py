"""The transfer kind (evaluation/kinds/transfer.py) through ``defsentflow eval``: SentEval-format MR and
TREC files the test writes, a tiny random model, SentEval's validation schemes, reuse by the figure key."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import duckdb
import pytest

from defsentflow.eval_tasks import TASKS, metric_column, registry_ddl
from defsentflow.evaluation import transfer_data
from defsentflow.evaluation.config import EvalConfig
from defsentflow.evaluation.figures import figure_key
from defsentflow.evaluation.kinds import kind_of
from tests.integration.tiny_pipeline_utils import cli_here

CUE = {"ABBR": "stand", "DESC": "why", "ENTY": "which", "HUM": "who", "LOC": "where", "NUM": "many"}


def _write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(("\n".join(lines) + "\n").encode("latin-1"))


@pytest.fixture
def senteval_dir(tmp_path) -> Path:
    """SentEval's own layout (``data/downstream/<TASK>/``): MR (20 lines a polarity), TREC (10 a class: 10 folds)."""
    root = tmp_path / "data"
    se = root / "downstream"
    _write(se / "MR" / "rt-polarity.pos", [f"a great film number {i} ." for i in range(20)])
    _write(se / "MR" / "rt-polarity.neg", [f"a dull plot , take {i}" for i in range(20)])
    _write(se / "TREC" / "train_5500.label", [f"{c}:x {w} is thing {i} ?" for c, w in CUE.items() for i in range(10)])
    _write(se / "TREC" / "TREC_10.label", [f"{c}:x {w} was it ?" for c, w in CUE.items()])
    return root


@pytest.fixture
def one_blas_thread():
    """The probe's 600-odd tiny fits on one BLAS thread: 3 ms each, 20 times less than on a contended pool."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        yield


def test_eval_runs_mr_and_trec_with_sentevals_schemes_and_reuses(home, tiny_bert_dir, senteval_dir, one_blas_thread):
    args = ["eval", tiny_bert_dir, "--tasks", "mr,trec", "--data-dir", senteval_dir, "--model-id", "tiny"]
    first = cli_here(args)
    assert first.returncode == 0, first.stderr
    table = {tuple(line.split()[:3]) for line in first.stdout.splitlines()}
    # MR: train only, inner 10-fold (the outer folds' figure is its test one); TREC: train / test, 10-fold on train
    assert {("mr", "all", "acc"), ("mr-dev", "all", "acc"), ("trec", "all", "acc"), ("trec-dev", "all", "acc")} <= table
    assert "reused" not in first.stdout
    second = cli_here(args)
    assert second.returncode == 0 and "reused the stored figures" in second.stdout
    assert [ln.split()[:4] for ln in second.stdout.splitlines()[:6]] == [ln.split()[:4] for ln in first.stdout.splitlines()[:6]]
    # the group: every transfer task whose files are there, and the same two figures, read back
    group = cli_here(["eval", tiny_bert_dir, "--tasks", "transfer", "--data-dir", senteval_dir, "--model-id", "tiny"])
    assert group.returncode == 0 and "reused the stored figures" in group.stdout
    missing = cli_here(["eval", tiny_bert_dir, "--tasks", "cr", "--data-dir", senteval_dir, "--no-record"])
    assert missing.returncode == 2
    (line,) = missing.stderr.strip().splitlines()
    assert line.startswith("defsentflow: error: cr: missing custrev.neg, custrev.pos (looked in ") and "downstream/CR" in line


def test_a_changed_protocol_changes_the_figure_key(senteval_dir, monkeypatch):
    cfg = EvalConfig(tasks=("mr",), data_dir=str(senteval_dir))
    kind = kind_of("mr")

    def key() -> str:
        return figure_key("model-hash", kind, "mr", cfg, "mean", kind.inputs("mr", cfg))

    before = key()
    for change in ({"kfold": 5}, {"grid": (-1, 0, 1)}, {"seed": 7}, {"pairs": True}):
        monkeypatch.setitem(transfer_data.TASKS, "mr", replace(transfer_data.TASKS["mr"], **change))
        assert key() != before, change
        monkeypatch.undo()
    assert key() == before
    (senteval_dir / "downstream" / "MR" / "rt-polarity.pos").write_text("a new line\n")
    assert key() != before  # the inputs' content


def test_registry_rows_name_the_cores_files_and_dev_figures():
    rows = [t for t in TASKS.values() if t.kind == "transfer" and t.name != "transfer"]
    assert {t.name for t in rows} == set(transfer_data.TASKS)
    for meta in rows:
        core = transfer_data.TASKS[meta.name]
        assert meta.main_metric == core.main_score
        if core.folder:
            assert meta.files == tuple(f"{core.folder}/{f}" for _, f in core.files)
    assert metric_column("sick-e-dev", "all", "acc") != metric_column("sick-e", "all", "acc")
    assert kind_of("sick-e").owner("sick-e-dev+len64", ("sick-e",)) == "sick-e"
    con = duckdb.connect()
    con.execute(registry_ddl())
    shown = {(t, m): con.execute("SELECT is_headline(?, 'all', ?)", [t, m]).fetchone()[0] for t, m in (
        ("stsb-sup-dev", "pearson"), ("sickr-sup", "spearman"), ("stsb-dev", "spearman"), ("stsb-dev", "pearson"))}
    # a transfer task in an STS family's name (stsb-sup) shows its own headline, STS-B keeps Spearman's
    assert shown == {("stsb-sup-dev", "pearson"): True, ("sickr-sup", "spearman"): True,
                     ("stsb-dev", "spearman"): True, ("stsb-dev", "pearson"): False}


def test_rows_name_dev_and_test_figures_and_a_seed_protocols_sd():
    from defsentflow.evaluation.kinds.transfer import _rows
    from defsentflow.evaluation.transfer import TransferResult

    def res(task, scores, n):
        return TransferResult(task, "h", scores, (), n, 0)

    sick = _rows("sick-e", [res("sick-e", {"dev_acc": 80.0, "test_acc": 81.0}, {"train": 10, "dev": 5, "test": 6})],
                 ("len64",), "mean")
    assert [(r["task"], r["metric"], r["value"], r["n"]) for r in sick] == [
        ("sick-e-dev+len64", "acc", 80.0, 5), ("sick-e+len64", "acc", 81.0, 6)]
    sts = _rows("stsb-sup", [res("stsb-sup", {"dev_pearson": 83.0}, {"train": 10, "dev": 5})], (), "cls")
    assert [(r["task"], r["metric"]) for r in sts] == [("stsb-sup-dev", "pearson")]  # no test file: no test figure
    bbc = _rows("bbc-topics", [res("bbc-topics", {"test_acc": a}, {"train": 40}) for a in (86.0, 88.0)], (), "mean")
    assert [(r["task"], r["metric"], r["value"], r["n"]) for r in bbc] == [
        ("bbc-topics", "acc", 87.0, 40), ("bbc-topics", "acc_sd", 1.41, 2)]
