"""Progressive Separate Training (PST) of DefSent+ encoders, and single DefSent/DefSent+ runs.

PST, step by step:

* step 0: the untrained encoder is a candidate, scored like every other, so PST never returns a
  model worse on the selection metric than the one it started from;
* step 1: the entry matrix (the frozen prediction head) is built with the ORIGINAL encoder, and a
  fresh copy of the original weights is trained for every (grid point, seed); the grid point of
  the best candidate is kept for the later steps;
* step k > 1: the entry matrix is rebuilt with step k-1's best encoder and, again, fresh copies
  of the ORIGINAL weights are trained (a step never continues the previous encoder); the learning
  rate never grows from one step to the next; the final step may use the ICA-transformed space.

The selection metric is STS-B dev Spearman or reverse-dictionary dev MRR; without STS data the
run falls back to the latter and says so. ``steps: auto`` stops when a step does not improve on
the previous one. The run record names the winning step and why.

Every piece is a content-addressed artifact (inputs + config + code version -> key): entry
matrices, trained models, selection scores and whole steps. A piece whose artifact exists is
reused, so a second run with the same inputs recomputes nothing, and a killed run resumes
(training itself resumes from its checkpoint). The library never imports Prefect; the ``pst``
flow sequences the same functions as tasks.

Example:
    >>> from defsentflow.training.pst_config import PstSection
    >>> result = run_pst(PstSection(dictionary="sample", steps=2, seeds=[0]), run_id="demo")
    >>> result.winner.step, result.reason
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from defsentflow.training.pst_config import DefSentSection, GridPoint, PstSection, resolve_data_dir

__all__ = [
    "Candidate",
    "DefSentResult",
    "MatrixRef",
    "PstResult",
    "SelectionPlan",
    "StepPlan",
    "StepResult",
    "TrainingData",
    "base_candidates",
    "build_entry_matrix",
    "choose_best",
    "choose_winner",
    "finish_pst",
    "load_training_data",
    "plan_step",
    "record_step",
    "run_defsent",
    "run_pst",
    "run_step",
    "score_candidate",
    "selection_plan",
    "should_stop",
    "step_key",
    "train_candidate",
]

log = logging.getLogger(__name__)


# -- references passed between the pieces (small, JSON-friendly) -------------------------------------
class _Record:
    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Any:
        return cls(**d)


@dataclass(frozen=True)
class MatrixRef(_Record):
    """An entry matrix artifact: ``<dir>/matrix.npy`` (rows = ``TrainingData.entries``)."""

    key: str
    path: str
    encoder: str
    encoder_id: str
    encoding: str
    ica: bool
    n_entries: int
    dim: int
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def matrix_path(self) -> Path:
        return Path(self.path) / "matrix.npy"


@dataclass(frozen=True)
class Candidate(_Record):
    """A scored (or to-be-scored) model: step 0 is the untrained encoder."""

    step: int
    seed: int | None
    pooling: str
    entry_encoding: str | None
    lr: float | None
    model_id: str
    model_dir: str
    artifact_key: str
    use_pooler: bool
    entry_matrix_path: str | None = None
    metric: str | None = None
    score: float | None = None
    score_note: str | None = None

    @property
    def label(self) -> str:
        if self.step == 0:
            return f"untrained ({self.pooling})"
        return f"{self.pooling}-{self.entry_encoding}, seed {self.seed}"


@dataclass(frozen=True)
class StepResult(_Record):
    step: int
    candidates: tuple[Candidate, ...]
    best: Candidate
    key: str | None = None
    cached: bool = False
    seconds: float = 0.0
    lr: float | None = None
    entry_matrices: tuple[MatrixRef, ...] = ()

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StepResult:
        d = dict(d)
        d["candidates"] = tuple(Candidate.from_dict(c) for c in d["candidates"])
        d["best"] = Candidate.from_dict(d["best"])
        d["entry_matrices"] = tuple(MatrixRef.from_dict(m) for m in d.get("entry_matrices", ()))
        return cls(**d)


@dataclass(frozen=True)
class SelectionPlan(_Record):
    """Which metric ranks candidates, and why (``note`` says when it fell back)."""

    metric: str                 # "stsb-dev" | "revdict-mrr"
    data_dir: str | None
    data_hash: str              # STS-B dev file hash, or the dictionary hash for revdict
    note: str | None = None


@dataclass(frozen=True)
class StepPlan(_Record):
    step: int
    lr: float
    grid: tuple[GridPoint, ...]
    seeds: tuple[int, ...]
    ica: bool
    encoder: str                # builds this step's entry matrix
    encoder_id: str             # its content/artifact key

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["grid"] = [g.model_dump() for g in self.grid]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StepPlan:
        d = dict(d)
        d["grid"] = tuple(GridPoint.model_validate(g) for g in d["grid"])
        d["seeds"] = tuple(d["seeds"])
        return cls(**d)


@dataclass(frozen=True)
class PstResult(_Record):
    run_id: str
    selection: SelectionPlan
    steps: tuple[StepResult, ...]
    winner: Candidate
    reason: str
    stop_note: str
    model_id: str
    model_dir: str
    record_path: str
    seconds: float


# -- data ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TrainingData:
    """The training split as (definition, target entry) pairs; rows of the head = ``entries``."""

    dictionary: str
    dictionary_hash: str
    train_hash: str
    entries: list[str]
    definitions: list[str]
    targets: np.ndarray
    table: pa.Table = field(repr=False, compare=False)

    @property
    def definition_entries(self) -> list[str]:
        return [self.entries[t] for t in self.targets]


def load_training_data(dictionary: str | pa.Table, max_train_entries: int | None = None, *,
                       root: str | os.PathLike | None = None) -> TrainingData:
    """The dictionary's ``train`` split, optionally a deterministic subset of its entries.

    The subset keeps the entries with the smallest hash of their text, so it is the same on every
    machine and grows stably with ``max_train_entries``.
    """
    from defsentflow.evaluation.revdict import dictionary_content_hash, load_dictionary_table
    from defsentflow.storage import combine_hashes, hash_text

    table = load_dictionary_table(dictionary, root=root)
    missing = [c for c in ("entry", "definition", "split") if c not in table.column_names]
    if missing:
        name = dictionary if isinstance(dictionary, str) else "<table>"
        raise ValueError(f"dictionary {name} lacks columns {missing}")
    entry = table.column("entry").to_pylist()
    definition = table.column("definition").to_pylist()
    split = table.column("split").to_pylist()
    train = [i for i, s in enumerate(split) if s == "train"]
    entries = sorted({entry[i] for i in train})
    if max_train_entries is not None and len(entries) > max_train_entries:
        entries = sorted(sorted(entries, key=lambda e: hash_text(f"pst-subset\x1f{e}"))[:max_train_entries])
    index = {e: k for k, e in enumerate(entries)}
    rows = [i for i in train if entry[i] in index]
    if not rows:
        raise ValueError(f"dictionary {dictionary!r} has no training definitions (split == 'train')")
    defs = [definition[i] for i in rows]
    targets = np.fromiter((index[entry[i]] for i in rows), dtype=np.int64, count=len(rows))
    train_hash = combine_hashes([hash_text("\x1e".join(entries)), hash_text("\x1e".join(defs)),
                                 hash_text(targets.tobytes().hex())])
    name = dictionary if isinstance(dictionary, str) else "<table>"
    return TrainingData(dictionary=name, dictionary_hash=dictionary_content_hash(table), train_hash=train_hash,
                        entries=entries, definitions=defs, targets=targets, table=table)


# -- keys -----------------------------------------------------------------------------------------------
def _base(section: PstSection | DefSentSection) -> tuple[str, str]:
    """The base model's resolved path and content hash."""
    from defsentflow.encoders import model_content_hash, resolve_model_path

    path = resolve_model_path(section.base_model)
    return path, model_content_hash(path)


def _train_config(section: PstSection | DefSentSection, *, method: str, pooling: str, lr: float, seed: int,
                  n_examples: int) -> Any:
    """The papers' settings for ``method`` (:func:`paper_config`), overridden by what the section sets.

    Settings the section leaves unset keep the paper's choice (e.g. DefSent+'s batch 32, or 16
    for small dictionaries; DefSent's 10% warm-up and no clipping).
    """
    from defsentflow.training.config import paper_config

    overrides = {k: getattr(section, k) for k in ("batch_size", "warmup_ratio", "epochs")
                 if getattr(section, k, None) is not None}
    return paper_config(method, n_examples=n_examples, pooling=pooling, lr=lr, seed=seed, use_pooler=section.use_pooler,
                        max_length=section.max_length, temperature=section.temperature,
                        normalize_logits=section.normalize_logits, autocast=section.autocast,
                        checkpoint_every=section.checkpoint_every, device=section.device, **overrides)


def _config_identity(cfg: Any) -> str:
    """Hash of the settings that change the trained weights (not where or how often it checkpoints)."""
    from defsentflow.storage import hash_config

    d = dataclasses.asdict(cfg)
    d.pop("device", None), d.pop("checkpoint_every", None)
    return hash_config(d)


def _key(*parts: Any) -> str:
    from defsentflow.storage import code_version, combine_hashes

    return combine_hashes([*(str(p) for p in parts), code_version()])


# -- entry matrices -------------------------------------------------------------------------------------
def _entry_space_extras(matrix: np.ndarray, out_dir: Path, title: str) -> dict[str, Any]:
    """Entry-space statistics and a picture (the evaluation package's functions, when present)."""
    stats: dict[str, Any] = {}
    try:
        from defsentflow.report.isotropy import entry_space_stats
    except ImportError:
        log.info("defsentflow.report.isotropy is not available: no entry-space statistics")
    else:
        stats = {k: (float(v) if isinstance(v, (np.floating, np.integer)) else v)
                 for k, v in dict(entry_space_stats(matrix)).items()}
    try:
        from defsentflow.report.plots import plot_entry_space
    except ImportError:
        log.info("defsentflow.report.plots is not available: no entry-space plot")
    else:
        plot_entry_space(matrix, out_dir / "entry_space.png", title)
    return stats


def build_entry_matrix(section: PstSection | DefSentSection, data: TrainingData, *, encoder: str, encoder_id: str,
                       encoding: str, ica: bool, step: int = 1, root: str | os.PathLike | None = None,
                       run_id: str | None = None) -> MatrixRef:
    """Build (or reuse) the frozen entry matrix of the training entries with ``encoder``.

    Row i is the mean over entry i's training definitions of the encoder's CLS (``ac``) or
    mean-pooled (``amp``) vector, FastICA-transformed when ``ica``. Stored atomically under
    ``<root>/pst/entry_matrices/<key>/`` with ``entries.parquet``, ``stats.json`` and a plot.
    """
    from defsentflow.encoders import load_encoder
    from defsentflow.storage import Catalog, atomic_dir, data_root, hash_path, write_parquet

    key = _key("pst_entry_matrix", encoder_id, data.train_hash, encoding, ica, section.max_length, section.autocast)
    cat = Catalog(root)
    found = cat.artifact(key)
    if found is not None:
        return MatrixRef.from_dict(found["meta"])
    from defsentflow.training.entry_embeddings import build_entry_embeddings, ica_transform

    enc = load_encoder(encoder, device=section.device)
    em = build_entry_embeddings(enc, data.definition_entries, data.definitions, encoding,
                                batch_size=section.entry_batch_size, max_length=section.max_length,
                                autocast=section.autocast, cache=str(data_root(root)))
    row = {e: i for i, e in enumerate(em.entries)}
    matrix = np.asarray(em.matrix, dtype=np.float32)[[row[e] for e in data.entries]]
    if ica:
        matrix = np.asarray(ica_transform(matrix), dtype=np.float32)
    final = data_root(root) / "pst" / "entry_matrices" / key
    with atomic_dir(final) as tmp:
        np.save(tmp / "matrix.npy", matrix)
        write_parquet(pa.table({"entry": pa.array(data.entries, pa.string())}), tmp / "entries.parquet")
        source = f"base {section.base_model}" if encoder_id == _base(section)[1] else f"step {step - 1}'s best"
        title = f"PST step {step}: {encoding.upper()}{' + ICA' if ica else ''} entries by {source}"
        stats = _entry_space_extras(matrix, tmp, title)
        (tmp / "stats.json").write_text(json.dumps(stats, indent=2, sort_keys=True, default=str))
    ref = MatrixRef(key=key, path=str(final), encoder=str(encoder), encoder_id=encoder_id, encoding=encoding, ica=ica,
                    n_entries=int(matrix.shape[0]), dim=int(matrix.shape[1]), stats=stats)
    cat.register_artifact(key, "entry_matrix", final, hash_path(final), name=f"pst-step{step}-{encoding}",
                          input_hashes={"encoder": encoder_id, "train": data.train_hash},
                          config={"encoding": encoding, "ica": ica, "max_length": section.max_length},
                          run_id=run_id, meta=ref.to_dict())
    return ref


# -- training -------------------------------------------------------------------------------------------
def _train_model(cfg: Any, base: str, definitions: Sequence[str], targets: Sequence[int], *, key: str,
                 entry_matrix_path: str | None, extra_meta: dict[str, Any], method: str, base_name: str,
                 root: str | os.PathLike | None, run_id: str | None) -> tuple[str, str]:
    """Train (or reuse) one model under its content key; return (model_id, model_dir)."""
    from defsentflow.storage import Catalog, data_root, hash_path, write_json

    cat = Catalog(root)
    model_id = f"{'dsp' if method == 'defsent_plus' else method}-{key[:12]}"
    found = cat.artifact(key)
    if found is not None:
        return model_id, found["path"]
    out = data_root(root) / "models" / "pst" / key
    ckpt = data_root(root) / "checkpoints" / "pst" / key
    if not (out / "defsentflow.json").is_file():  # a finished but unregistered model is kept
        from defsentflow.training.loop import train_encoder

        matrix = np.load(entry_matrix_path) if entry_matrix_path else None
        train_encoder(cfg, base, list(definitions), list(map(int, targets)), out_dir=out, checkpoint_dir=ckpt,
                      entry_matrix=matrix)
    meta_file = out / "defsentflow.json"
    meta = json.loads(meta_file.read_text()) if meta_file.is_file() else {}
    meta.update(extra_meta)
    write_json(meta, meta_file)
    with cat.transaction() as con:
        cat.register_artifact(key, "model", out, hash_path(out), name=model_id, config=dataclasses.asdict(cfg),
                              run_id=run_id, meta=extra_meta, con=con)
    cat.register_model(model_id, out, base_model=base_name, method=method, pooling=cfg.pooling, run_id=run_id,
                       artifact_key=key, meta=extra_meta)
    shutil.rmtree(ckpt, ignore_errors=True)
    return model_id, str(out)


def train_candidate(section: PstSection, data: TrainingData, *, step: int, seed: int, grid: GridPoint, lr: float,
                    matrix: MatrixRef, root: str | os.PathLike | None = None, run_id: str | None = None) -> Candidate:
    """Train a fresh copy of the ORIGINAL base model against ``matrix`` (one PST candidate)."""
    base, base_hash = _base(section)
    cfg = _train_config(section, method="defsent_plus", pooling=grid.pooling, lr=lr, seed=seed,
                        n_examples=len(data.definitions))
    key = _key("pst_model", base_hash, matrix.key, data.train_hash, _config_identity(cfg))
    extra = {"entry_encoder": matrix.encoder, "entry_encoding": grid.entry_encoding, "ica": matrix.ica,
             "normalize_logits": section.normalize_logits, "entry_matrix": str(matrix.matrix_path),
             "pst_step": step, "dictionary": section.dictionary}
    model_id, model_dir = _train_model(cfg, base, data.definitions, data.targets, key=key,
                                       entry_matrix_path=str(matrix.matrix_path), extra_meta=extra,
                                       method="defsent_plus", base_name=section.base_model, root=root, run_id=run_id)
    return Candidate(step=step, seed=seed, pooling=grid.pooling, entry_encoding=grid.entry_encoding, lr=lr,
                     model_id=model_id, model_dir=model_dir, artifact_key=key, use_pooler=section.use_pooler,
                     entry_matrix_path=str(matrix.matrix_path))


# -- selection ------------------------------------------------------------------------------------------
def _stsb_dev_file(data_dir: Path) -> Path | None:
    for p in (data_dir / "sts" / "STSBenchmark" / "sts-dev.csv", data_dir / "STSBenchmark" / "sts-dev.csv"):
        if p.is_file():
            return p
    return None


def selection_plan(section: PstSection, data: TrainingData) -> SelectionPlan:
    """STS-B dev when asked for and available; otherwise reverse-dictionary dev MRR, with the reason."""
    from defsentflow.storage import hash_path

    revdict_hash = f"{data.dictionary_hash}:{section.selection_revdict_mode}:{section.selection_max_queries}"
    revdict = SelectionPlan(metric="revdict-mrr", data_dir=None, data_hash=revdict_hash)
    if section.selection == "revdict-mrr":
        return revdict
    data_dir = resolve_data_dir(section.data_dir)
    if data_dir is None:
        why = f"data_dir {section.data_dir!r} not found"
    else:
        try:
            from defsentflow.evaluation.sts import evaluate_sts  # noqa: F401
            from defsentflow.evaluation.sts_data import available_tasks
        except ImportError:
            why = "the STS evaluation module is not available"
        else:
            stsb = _stsb_dev_file(data_dir)
            if "stsb-dev" in available_tasks(data_dir):
                return SelectionPlan(metric="stsb-dev", data_dir=str(data_dir),
                                     data_hash=hash_path(stsb) if stsb else f"dir:{data_dir}")
            why = f"no STS-B dev set under {data_dir}"
    note = f"{why}: selecting by reverse-dictionary dev MRR ({section.selection_revdict_mode}) instead of STS-B dev"
    log.warning(note)
    return dataclasses.replace(revdict, note=note)


def score_candidate(section: PstSection, data: TrainingData, cand: Candidate, plan: SelectionPlan, *,
                    root: str | os.PathLike | None = None, run_id: str | None = None) -> Candidate:
    """Score ``cand`` on the selection metric (cached by model key + metric + data + pooling)."""
    from defsentflow.storage import Catalog, data_root, hash_path, write_json

    pooling = section.selection_pooling or cand.pooling
    key = _key("pst_score", cand.artifact_key, plan.metric, plan.data_hash, pooling, section.max_length)
    cat = Catalog(root)
    found = cat.artifact(key)
    if found is not None:
        rec = json.loads(Path(found["path"]).read_text())
    else:
        if plan.metric == "stsb-dev":
            from defsentflow.evaluation.sts import evaluate_sts

            rows = evaluate_sts(cand.model_dir, ["stsb-dev"], data_dir=plan.data_dir, pooling=pooling,
                                autocast=section.autocast)
            value = next(r["value"] for r in rows
                         if r["task"] == "stsb-dev" and r["setting"] == "all" and r["metric"] == "spearman")
        else:
            from defsentflow.evaluation.revdict import evaluate_revdict

            mode = section.selection_revdict_mode
            res = evaluate_revdict(cand.model_dir, data.table, split="dev", modes=(mode,), pooling=pooling,
                                   entry_encoding=cand.entry_encoding, max_queries=section.selection_max_queries,
                                   batch_size=section.entry_batch_size, max_length=section.max_length,
                                   autocast=section.autocast, device=section.device, root=root)
            rows, value = res["rows"], res["modes"][mode]["mrr"]
        rec = {"metric": plan.metric, "value": float(value), "pooling": pooling, "rows": rows, "note": plan.note}
        final = data_root(root) / "pst" / "scores" / f"{key}.json"
        write_json(rec, final)
        cat.register_artifact(key, "selection_score", final, hash_path(final), name=cand.model_id,
                              input_hashes={"model": cand.artifact_key, "data": plan.data_hash},
                              config={"metric": plan.metric, "pooling": pooling}, run_id=run_id)
    cat.record_metrics(cand.model_id, rec["rows"], run_id=run_id)
    return dataclasses.replace(cand, metric=plan.metric, score=float(rec["value"]), score_note=plan.note)


def choose_best(candidates: Sequence[Candidate]) -> Candidate:
    """The highest-scoring candidate; ties go to the earliest (the order candidates were made in)."""
    if not candidates:
        raise ValueError("no candidates to choose from")
    best = candidates[0]
    for c in candidates[1:]:
        if c.score is not None and (best.score is None or c.score > best.score):
            best = c
    return best


# -- steps ----------------------------------------------------------------------------------------------
def base_candidates(section: PstSection, *, root: str | os.PathLike | None = None,
                    run_id: str | None = None) -> list[Candidate]:
    """Step 0: the untrained base model, once per pooling the later steps are scored with."""
    from defsentflow.storage import Catalog

    base, base_hash = _base(section)
    model_id = f"base-{base_hash[:12]}"
    Catalog(root).register_model(model_id, base, base_model=section.base_model, method="base", run_id=run_id)
    poolings = ([section.selection_pooling] if section.selection_pooling
                else list(dict.fromkeys(g.pooling for g in section.grid)))
    return [Candidate(step=0, seed=None, pooling=p, entry_encoding=None, lr=None, model_id=model_id, model_dir=base,
                      artifact_key=f"base:{base_hash}", use_pooler=section.use_pooler) for p in poolings]


def plan_step(section: PstSection, step: int, previous: StepResult | None) -> StepPlan:
    """What step ``step`` trains: the entry encoder, the grid, the seeds and the learning rate."""
    if step == 1:
        base, base_hash = _base(section)
        return StepPlan(step=1, lr=section.lr_for_step(1), grid=tuple(section.grid), seeds=tuple(section.seeds),
                        ica=section.ica_last_step and section.total_steps == 1, encoder=base, encoder_id=base_hash)
    if previous is None or previous.step != step - 1 or previous.best.step < 1:
        raise ValueError(f"step {step} needs step {step - 1}'s best trained encoder")
    best = previous.best
    grid = (GridPoint(pooling=best.pooling, entry_encoding=best.entry_encoding),)
    return StepPlan(step=step, lr=section.lr_for_step(step), grid=grid, seeds=tuple(section.seeds),
                    ica=section.ica_last_step and step == section.total_steps, encoder=best.model_dir,
                    encoder_id=best.artifact_key)


def step_key(section: PstSection, data: TrainingData, plan: StepPlan, selection: SelectionPlan) -> str:
    from defsentflow.storage import hash_config

    _, base_hash = _base(section)
    training = section.model_dump(mode="json", include={"use_pooler", "batch_size", "max_length", "autocast",
                                                         "temperature", "normalize_logits", "selection_pooling"})
    plan_fields = {k: v for k, v in plan.to_dict().items() if k != "encoder"}  # encoder_id names it by content
    return _key("pst_step", base_hash, data.train_hash, hash_config(plan_fields), hash_config(training),
                selection.metric, selection.data_hash)


def record_step(run_id: str, result: StepResult, *, root: str | os.PathLike | None = None) -> None:
    """Replace this run's ``pst_steps`` rows of one step (one row per candidate)."""
    from defsentflow.storage import Catalog

    with Catalog(root).transaction() as con:
        con.execute("DELETE FROM pst_steps WHERE run_id = ? AND step = ?", [run_id, result.step])
        for c in result.candidates:
            chosen = c.model_id == result.best.model_id and c.pooling == result.best.pooling
            note = c.score_note if c.step else "untrained encoder (step 0)"
            con.execute(
                "INSERT INTO pst_steps (run_id, step, seed, model_id, selection_metric, selection_score, chosen, "
                "entry_matrix_path, lr, pooling, entry_encoding, use_pooler, note) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [run_id, c.step, c.seed, c.model_id, c.metric, c.score, chosen, c.entry_matrix_path, c.lr,
                 c.pooling, c.entry_encoding, c.use_pooler, note],
            )
    _record_entry_space(run_id, result, root)


def _record_entry_space(run_id: str, result: StepResult, root: str | os.PathLike | None) -> None:
    """One ``entry_space_stats`` row per entry matrix of the step (read by the ``pst_progress`` view)."""
    try:
        from defsentflow.report.entry_space import record_entry_space_stats
    except ImportError:
        return
    for m in result.entry_matrices:
        if m.stats:
            plot = Path(m.path) / "entry_space.png"
            record_entry_space_stats(run_id, result.step, m.key, m.stats, root=root, matrix_path=str(m.matrix_path),
                                     plot_path=str(plot) if plot.is_file() else None)


def run_step0(section: PstSection, data: TrainingData, selection: SelectionPlan, *,
              root: str | os.PathLike | None = None, run_id: str | None = None) -> StepResult:
    t0 = time.perf_counter()
    cands = [score_candidate(section, data, c, selection, root=root, run_id=run_id)
             for c in base_candidates(section, root=root, run_id=run_id)]
    return StepResult(step=0, candidates=tuple(cands), best=choose_best(cands), seconds=time.perf_counter() - t0)


def run_step(section: PstSection, data: TrainingData, plan: StepPlan, selection: SelectionPlan, *,
             root: str | os.PathLike | None = None, run_id: str | None = None) -> StepResult:
    """Build the step's entry matrices, train and score every (grid point, seed), pick the best.

    A step whose artifact exists is returned as recorded (``cached=True``) without any work.
    """
    from defsentflow.storage import Catalog, data_root, hash_path, write_json

    t0 = time.perf_counter()
    key = step_key(section, data, plan, selection)
    cat = Catalog(root)
    found = cat.artifact(key)
    if found is not None:
        done = StepResult.from_dict(json.loads(Path(found["path"]).read_text()))
        paths = [c.model_dir for c in done.candidates] + [m.path for m in done.entry_matrices]
        if all(Path(p).exists() for p in paths):  # else rebuild what is gone (the rest is found by key)
            return dataclasses.replace(done, cached=True, seconds=time.perf_counter() - t0)
    matrices = {enc: build_entry_matrix(section, data, encoder=plan.encoder, encoder_id=plan.encoder_id, encoding=enc,
                                        ica=plan.ica, step=plan.step, root=root, run_id=run_id)
                for enc in dict.fromkeys(g.entry_encoding for g in plan.grid)}
    cands = []
    for g in plan.grid:
        for seed in plan.seeds:
            c = train_candidate(section, data, step=plan.step, seed=seed, grid=g, lr=plan.lr,
                                matrix=matrices[g.entry_encoding], root=root, run_id=run_id)
            cands.append(score_candidate(section, data, c, selection, root=root, run_id=run_id))
    result = StepResult(step=plan.step, candidates=tuple(cands), best=choose_best(cands), key=key,
                        seconds=time.perf_counter() - t0, lr=plan.lr, entry_matrices=tuple(matrices.values()))
    final = data_root(root) / "pst" / "steps" / f"{key}.json"
    write_json(result.to_dict(), final)
    cat.register_artifact(key, "pst_step", final, hash_path(final), name=f"step{plan.step}", run_id=run_id,
                          config=plan.to_dict())
    return result


def should_stop(section: PstSection, history: Sequence[StepResult]) -> str | None:
    """Why to stop after the last step of ``history`` (None: go on). ``history[0]`` is step 0."""
    last = history[-1]
    if section.steps == "auto" and last.step >= 1:
        prev = history[-2].best
        if not (last.best.score is not None and prev.score is not None and last.best.score > prev.score):
            return (f"auto: stopped after step {last.step}: {last.best.metric} {_fmt(last.best.score)} did not "
                    f"improve on step {last.step - 1}'s {_fmt(prev.score)}")
    if last.step >= section.total_steps:
        if section.steps == "auto":
            return f"auto: reached max_steps={section.max_steps}"
        return f"ran all {last.step} steps"
    return None


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.4g}"


def choose_winner(history: Sequence[StepResult]) -> tuple[Candidate, str]:
    """The best candidate over all steps (step 0 included; ties go to the earlier step), and why."""
    winner = choose_best([s.best for s in history])
    per_step = ", ".join(f"step {s.step}: {_fmt(s.best.score)}" for s in history)
    reason = (f"step {winner.step} ({winner.label}) has the best {winner.metric or 'score'} "
              f"{_fmt(winner.score)} (best per step: {per_step})")
    if winner.step == 0:
        reason += "; no trained encoder beat the untrained one, so the untrained encoder is returned"
    return winner, reason


def finish_pst(section: PstSection, run_id: str, history: Sequence[StepResult], selection: SelectionPlan,
               stop_note: str, *, root: str | os.PathLike | None = None, seconds: float = 0.0) -> PstResult:
    """Pick the winner, write the run record, register the chosen encoder as ``pst-<run_id>``."""
    from defsentflow.storage import Catalog, check_identifier, data_root, hash_path, under_root, write_json

    winner, reason = choose_winner(history)
    notes = "; ".join(n for n in (selection.note, stop_note) if n)
    model_id = f"pst-{run_id}"
    record_path = under_root(data_root(root), "pst", "runs", f"{check_identifier(run_id, 'run id')}.json")
    result = PstResult(run_id=run_id, selection=selection, steps=tuple(history), winner=winner, reason=reason,
                       stop_note=stop_note, model_id=model_id, model_dir=winner.model_dir, record_path=str(record_path),
                       seconds=seconds)
    write_json({**result.to_dict(), "config": section.model_dump(mode="json")}, record_path)
    key = _key("pst_result", *(s.key or s.best.artifact_key for s in history), winner.artifact_key, winner.pooling)
    cat = Catalog(root)
    meta = {"winner_step": winner.step, "winner_model_id": winner.model_id, "pooling": winner.pooling,
            "selection_metric": winner.metric, "selection_score": winner.score, "reason": reason, "note": notes}
    with cat.transaction() as con:
        cat.register_artifact(key, "pst_result", record_path, hash_path(record_path), name=model_id, run_id=run_id,
                              meta=meta, con=con)
        con.execute("DELETE FROM pst_runs WHERE run_id = ?", [run_id])
        con.execute(
            "INSERT INTO pst_runs (run_id, base_model, dictionary, steps_run, winner_step, winner_model_id, "
            "model_id, selection_metric, selection_score, reason, note, record_path, seconds) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [run_id, section.base_model, section.dictionary, history[-1].step, winner.step, winner.model_id, model_id,
             winner.metric, winner.score, reason, notes, str(record_path), seconds],
        )
    cat.register_model(model_id, winner.model_dir, base_model=section.base_model, method="pst", pooling=winner.pooling,
                       run_id=run_id, artifact_key=key, meta=meta)
    return result


def run_pst(section: PstSection, *, run_id: str, root: str | os.PathLike | None = None,
            on_step: Callable[[StepResult], None] | None = None) -> PstResult:
    """Run PST end to end (no Prefect); resumable and cached piece by piece.

    Args:
        section: the validated ``pst:`` settings.
        run_id: this run's id in the catalog (``runs``, ``pst_steps``, ``pst_runs``).
        root: data root (default ``$DEFSENTFLOW_HOME`` or ``./storage``).
        on_step: called with each finished step (step 0 first), e.g. to print progress.
    """
    from defsentflow.storage import Catalog, hash_config

    t0 = time.perf_counter()
    cat = Catalog(root)
    cat.start_run("pst", config=section.model_dump(mode="json"), config_hash=hash_config(section), run_id=run_id)
    try:
        data = load_training_data(section.dictionary, section.max_train_entries, root=root)
        selection = selection_plan(section, data)
        history: list[StepResult] = []
        stop_note = ""
        for step in range(0, section.total_steps + 1):
            if step == 0:
                result = run_step0(section, data, selection, root=root, run_id=run_id)
            else:
                plan = plan_step(section, step, history[-1] if step > 1 else None)
                result = run_step(section, data, plan, selection, root=root, run_id=run_id)
            record_step(run_id, result, root=root)
            cat.record_stage(run_id, f"pst-step-{step}", "cached" if result.cached else "completed",
                             cache_key=result.key, seconds=result.seconds)
            history.append(result)
            if on_step is not None:
                on_step(result)
            if step >= 1:
                stop_note = should_stop(section, history) or ""
                if stop_note:
                    break
        out = finish_pst(section, run_id, history, selection, stop_note, root=root, seconds=time.perf_counter() - t0)
    except BaseException as exc:
        cat.end_run(run_id, "failed", note=f"{type(exc).__name__}: {exc}"[:500])
        raise
    cat.end_run(run_id, "completed", note=out.reason)
    return out


# -- single DefSent / DefSent+ runs --------------------------------------------------------------------
@dataclass(frozen=True)
class DefSentResult(_Record):
    run_id: str
    model_id: str
    model_dir: str
    method: str
    n_definitions: int
    entry_matrix_path: str | None
    seconds: float


def run_defsent(section: DefSentSection, *, run_id: str | None, root: str | os.PathLike | None = None) -> DefSentResult:
    """Train one DefSent (word prediction) or DefSent+ (entry prediction) model; cached by content key.

    DefSent keeps only training definitions whose entry is a single vocabulary token (the frozen
    word-prediction layer can only predict those). With ``run_id`` None no run row is written
    (the caller, e.g. a flow, keeps the run record).
    """
    from defsentflow.storage import Catalog, hash_config

    t0 = time.perf_counter()
    cat = Catalog(root)
    if run_id is not None:
        cat.start_run(f"train-{section.method.replace('_', '-')}", config=section.model_dump(mode="json"),
                      config_hash=hash_config(section), run_id=run_id)
    try:
        data = load_training_data(section.dictionary, section.max_train_entries, root=root)
        base, base_hash = _base(section)
        matrix_path = None
        extra: dict[str, Any] = {"dictionary": section.dictionary}
        if section.method == "defsent_plus":
            cfg = _train_config(section, method=section.method, pooling=section.pooling, lr=section.lr,
                                seed=section.seed, n_examples=len(data.definitions))
            matrix = build_entry_matrix(section, data, encoder=base, encoder_id=base_hash,
                                        encoding=section.entry_encoding, ica=section.ica, root=root, run_id=run_id)
            definitions, targets, matrix_path = data.definitions, data.targets, str(matrix.matrix_path)
            key = _key("pst_model", base_hash, matrix.key, data.train_hash, _config_identity(cfg))
            extra.update(entry_encoder=base, entry_encoding=section.entry_encoding, ica=section.ica,
                         normalize_logits=section.normalize_logits, entry_matrix=matrix_path)
        else:
            definitions, targets = _single_token_pairs(base, data)
            cfg = _train_config(section, method=section.method, pooling=section.pooling, lr=section.lr,
                                seed=section.seed, n_examples=len(definitions))
            key = _key("defsent_model", base_hash, data.train_hash, _config_identity(cfg))
        model_id, model_dir = _train_model(cfg, base, definitions, targets, key=key, entry_matrix_path=matrix_path,
                                           extra_meta=extra, method=section.method, base_name=section.base_model,
                                           root=root, run_id=run_id)
    except BaseException as exc:
        if run_id is not None:
            cat.end_run(run_id, "failed", note=f"{type(exc).__name__}: {exc}"[:500])
        raise
    if run_id is not None:
        cat.end_run(run_id, "completed", note=f"trained {model_id}")
    return DefSentResult(run_id=run_id or "", model_id=model_id, model_dir=model_dir, method=section.method,
                         n_definitions=len(definitions), entry_matrix_path=matrix_path,
                         seconds=time.perf_counter() - t0)


def _single_token_pairs(base: str, data: TrainingData) -> tuple[list[str], list[int]]:
    """DefSent's training pairs: definitions of single-token entries, targets = vocabulary ids."""
    from transformers import AutoTokenizer

    from defsentflow.training.targets import single_token_targets

    tokenizer = AutoTokenizer.from_pretrained(base)
    mask, ids = single_token_targets(tokenizer, data.entries)
    keep = [i for i, t in enumerate(data.targets) if mask[t]]
    if not keep:
        raise ValueError(f"no training entry of {data.dictionary!r} is a single token of {base}'s vocabulary")
    return [data.definitions[i] for i in keep], [int(ids[data.targets[i]]) for i in keep]
