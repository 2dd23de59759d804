"""The pieces PST and DefSent runs are made of: content keys, entry matrices, training one
candidate, selection scores, step plans and the catalog rows of a step.

Each piece is content-addressed (inputs + config + code version -> key) and skips its work when
its artifact exists. The order they run in is written once, in :mod:`defsentflow.training.pst`
(PST) and :mod:`defsentflow.training.defsent_run` (one DefSent / DefSent+ run).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from defsentflow.config_tools import resolve_data_dir
from defsentflow.encoders import load_encoder, model_content_hash, resolve_model_path
from defsentflow.entryspace import entry_space_stats, plot_entry_space, record_entry_space_stats
from defsentflow.storage import (
    Catalog,
    atomic_dir,
    code_version,
    combine_hashes,
    data_root,
    hash_config,
    hash_path,
    write_json,
    write_parquet,
)
from defsentflow.training.config import paper_config
from defsentflow.training.data import TrainingData
from defsentflow.training.entry_embeddings import IcaTransform
from defsentflow.training.pst_config import DefSentSection, GridPoint, PstSection
from defsentflow.training.pst_records import Candidate, MatrixRef, SelectionPlan, StepPlan, StepResult

__all__ = ["base_candidates", "build_entry_matrix", "choose_best", "choose_step", "entry_source", "group_means",
           "plan_step", "record_step", "selection_plan", "step_key", "train_model"]

log = logging.getLogger(__name__)


# -- keys -----------------------------------------------------------------------------------------------
def _base(section: PstSection | DefSentSection) -> tuple[str, str]:
    """The base model's resolved path and content hash."""
    path = resolve_model_path(section.base_model)
    return path, model_content_hash(path)


def _train_config(section: PstSection | DefSentSection, *, method: str, pooling: str, lr: float, seed: int,
                  variant: str | None) -> Any:
    """The papers' settings for ``method`` (:func:`paper_config`), overridden by what the section sets.

    Settings the section leaves unset keep the paper's choice (e.g. DefSent+'s batch 32 on dataset
    variant a, 16 on b and c; DefSent's 10% warm-up and no clipping).
    """
    overrides = {k: getattr(section, k) for k in ("batch_size", "warmup_ratio", "epochs")
                 if getattr(section, k, None) is not None}
    return paper_config(method, variant=variant, pooling=pooling, lr=lr, seed=seed, use_pooler=section.use_pooler,
                        untrained_pooler=section.untrained_pooler, max_length=section.max_length, temperature=section.temperature,
                        normalize_logits=section.normalize_logits, autocast=section.autocast,
                        negatives=section.negatives,
                        checkpoint_every=section.checkpoint_every, device=section.device,
                        bucket_batches=1 if getattr(section, "batching", "length") == "random" else 50, **overrides)


def _config_identity(cfg: Any) -> str:
    """Hash of the settings that change the trained weights (not where or how often it checkpoints)."""
    return hash_config(cfg.model_dump(exclude={"device", "checkpoint_every"}))


def _key(*parts: Any) -> str:
    return combine_hashes([*(str(p) for p in parts), code_version()])


# -- entry matrices -------------------------------------------------------------------------------------
def _entry_space_extras(matrix: np.ndarray, out_dir: Path, title: str) -> dict[str, Any]:
    """Entry-space statistics and a picture of the matrix."""
    stats = {k: (float(v) if isinstance(v, (np.floating, np.integer)) else v)
             for k, v in dict(entry_space_stats(matrix)).items()}
    plot_entry_space(matrix, out_dir / "entry_space.png", title)
    return stats


def build_entry_matrix(section: PstSection | DefSentSection, data: TrainingData, *, encoder: str, encoder_id: str,
                       encoding: str, ica: bool, step: int = 1, root: str | os.PathLike | None = None,
                       run_id: str | None = None, fan_out: Any = None) -> MatrixRef:
    """Build (or reuse) the frozen entry matrix of the training entries with ``encoder``.

    Row i is the mean over entry i's training definitions of the encoder's CLS (``ac``) or
    mean-pooled (``amp``) vector, FastICA-transformed when ``ica``. Stored atomically under
    ``<root>/pst/entry_matrices/<key>/`` with ``entries.parquet``, ``stats.json`` and a plot.
    The definitions are encoded in shards through ``fan_out`` (as many as its ``shards``
    attribute says, e.g. the Dask workers; one in this process otherwise): the matrix is
    bit-identical whatever the shard count (:mod:`defsentflow.training.entry_shards`).
    """
    ica_fit = [hash_config(section.ica_fit)] if ica else []  # plain matrices keep their keys
    key = _key("pst_entry_matrix", encoder_id, data.train_hash, encoding, ica, section.max_length, section.autocast,
               *ica_fit)
    cat = Catalog(root)
    found = cat.artifact(key)
    if found is not None:
        return MatrixRef.from_dict(found["meta"])

    enc = load_encoder(encoder, device=section.device)
    from defsentflow.training.entry_shards import (
        build_entry_matrix_sharded,  # lazy: looked up at call time, so tests can replace it on its own module
    )

    names, sums = build_entry_matrix_sharded(enc, data.definition_entries, data.definitions, encoding,
                                             shards=max(1, int(getattr(fan_out, "shards", 1) or 1)), fan_out=fan_out,
                                             cache_dir=data_root(root) / "cache" / "entry-shards",
                                             batch_size=section.entry_batch_size, max_length=section.max_length,
                                             autocast=section.autocast, device=section.device)
    row = {e: i for i, e in enumerate(names)}
    matrix = np.asarray(sums, dtype=np.float32)[[row[e] for e in data.entries]]
    transform = None
    if ica:  # fitted once here and saved: evaluation and serving reuse this map, never refit it
        f = section.ica_fit
        transform = IcaTransform.fit(matrix, max_iter=f.max_iter, random_state=f.random_state, scale=f.scale,
                                     standardize=f.standardize)
        matrix = np.asarray(transform(matrix), dtype=np.float32)
    final = data_root(root) / "pst" / "entry_matrices" / key
    with atomic_dir(final) as tmp:
        np.save(tmp / "matrix.npy", matrix)
        if transform is not None:
            transform.save(tmp)
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
def train_model(cfg: Any, base: str, definitions: Sequence[str], targets: Sequence[int], *, key: str,
                 entry_matrix_path: str | None, extra_meta: dict[str, Any], method: str, base_name: str,
                 root: str | os.PathLike | None, run_id: str | None) -> tuple[str, str]:
    """Train (or reuse) one model under its content key; return (model_id, model_dir)."""
    cat = Catalog(root)
    model_id = f"{'dsp' if method == 'defsent_plus' else method}-{key[:12]}"
    found = cat.artifact(key)
    if found is not None:
        return model_id, found["path"]
    out = data_root(root) / "models" / "pst" / key
    ckpt = data_root(root) / "checkpoints" / "pst" / key
    if not (out / "defsentflow.json").is_file():  # a finished but unregistered model is kept
        from defsentflow.training.loop import (
            train_encoder,  # lazy: looked up at call time, so tests can replace it on its own module
        )

        matrix = np.load(entry_matrix_path, mmap_mode="r") if entry_matrix_path else None  # one copy: the prepared head
        train_encoder(cfg, base, list(definitions), list(map(int, targets)), out_dir=out, checkpoint_dir=ckpt,
                      entry_matrix=matrix)
    meta_file = out / "defsentflow.json"
    meta = json.loads(meta_file.read_text()) if meta_file.is_file() else {}
    meta.update(extra_meta)
    meta.setdefault("train_splits", ["train"])  # what the reverse dictionary's unseen protocol excludes (extra_meta
    # sets it from the training data's splits)
    write_json(meta, meta_file)
    with cat.transaction() as con:
        cat.register_artifact(key, "model", out, hash_path(out), name=model_id, config=cfg.model_dump(),
                              run_id=run_id, meta=extra_meta, con=con)
    cat.register_model(model_id, out, base_model=base_name, method=method, pooling=cfg.pooling, run_id=run_id,
                       artifact_key=key, meta=extra_meta)
    shutil.rmtree(ckpt, ignore_errors=True)
    return model_id, str(out)


# -- selection ------------------------------------------------------------------------------------------
def _stsb_dev_file(data_dir: Path) -> Path | None:
    for p in (data_dir / "sts" / "STSBenchmark" / "sts-dev.csv", data_dir / "STSBenchmark" / "sts-dev.csv"):
        if p.is_file():
            return p
    return None


def selection_plan(section: PstSection, data: TrainingData) -> SelectionPlan:
    """STS-B dev when asked for and available; otherwise reverse-dictionary dev MRR, with the reason."""
    revdict_hash = f"{data.dictionary_hash}:{section.selection_revdict_mode}:{section.selection_max_queries}"
    revdict = SelectionPlan(metric="revdict-mrr", data_dir=None, data_hash=revdict_hash)
    if section.selection == "revdict-mrr":
        return revdict
    data_dir = resolve_data_dir(section.data_dir)
    if data_dir is None:
        why = f"data_dir {section.data_dir!r} not found"
    else:
        stsb = _stsb_dev_file(data_dir)
        if stsb is not None:
            return SelectionPlan(metric="stsb-dev", data_dir=str(data_dir),
                                 data_hash=hash_path(stsb) if stsb else f"dir:{data_dir}")
        why = f"no STS-B dev set under {data_dir}"
    note = f"{why}: selecting by reverse-dictionary dev MRR ({section.selection_revdict_mode}) instead of STS-B dev"
    log.warning(note)
    return dataclasses.replace(revdict, note=note)


def choose_best(candidates: Sequence[Candidate]) -> Candidate:
    """The highest-scoring candidate; ties go to the earliest (the order candidates were made in)."""
    if not candidates:
        raise ValueError("no candidates to choose from")
    best = candidates[0]
    for c in candidates[1:]:
        if c.score is not None and (best.score is None or c.score > best.score):
            best = c
    return best


def group_means(candidates: Sequence[Candidate]) -> dict[str, float]:
    """The mean score over seeds of every combination (:attr:`Candidate.group`), in candidate order."""
    groups: dict[str, list[float]] = {}
    for c in candidates:
        if c.score is not None:
            groups.setdefault(c.group, []).append(c.score)
    return {g: float(np.mean(v)) for g, v in groups.items()}


def choose_step(candidates: Sequence[Candidate], rule: str) -> tuple[Candidate, float | None, dict[str, float]]:
    """A step's choice under ``rule``: (the chosen candidate, the figure the step is compared by,
    every combination's mean over seeds).

    ``best_seed``: the best single candidate; its score is the figure. ``mean_over_seeds`` (the
    DefSent+ paper compares combinations by their mean over runs, its Table 8): the combination with
    the best mean (ties: the earliest), then its best seed; the mean is the figure.
    """
    means = group_means(candidates)
    if rule == "best_seed":
        best = choose_best(candidates)
        return best, best.score, means
    if rule != "mean_over_seeds":
        raise ValueError(f"selection_rule must be 'best_seed' or 'mean_over_seeds', got {rule!r}")
    if not means:
        best = choose_best(candidates)
        return best, None, means
    top = max(means, key=means.__getitem__)  # max keeps the first of equal means
    return choose_best([c for c in candidates if c.group == top]), means[top], means


# -- steps ----------------------------------------------------------------------------------------------
def base_candidates(section: PstSection, *, root: str | os.PathLike | None = None,
                    run_id: str | None = None) -> list[Candidate]:
    """Step 0: the untrained base model, once per pooling the later steps are scored with."""
    base, base_hash = _base(section)
    model_id = f"base-{base_hash[:12]}"
    Catalog(root).register_model(model_id, base, base_model=section.base_model, method="base", run_id=run_id)
    poolings = ([section.selection_pooling] if section.selection_pooling
                else list(dict.fromkeys(g.pooling for g in section.grid)))
    return [Candidate(step=0, seed=None, pooling=p, entry_encoding=None, lr=None, model_id=model_id, model_dir=base,
                      artifact_key=f"base:{base_hash}", use_pooler=section.use_pooler) for p in poolings]


def entry_source(section: PstSection, history: Sequence[StepResult]) -> StepResult:
    """The step whose best encoder builds the next step's entry matrix.

    The last step, when it is step 1, a transition step (``transition_steps``) or scores at least
    as well as every earlier trained step; otherwise the best earlier trained step (a step that
    made things worse is not built on unless it is declared a transition, as the paper's step 2).
    """
    trained = [h for h in history if h.step >= 1]
    if not trained:
        raise ValueError("the next step needs a trained step before it")
    last = trained[-1]
    if last.step == 1 or last.step in section.transition_steps:
        return last
    best = trained[0]
    for h in trained[1:]:
        if h.figure is not None and (best.figure is None or h.figure >= best.figure):
            best = h
    return best


def plan_step(section: PstSection, step: int, history: Sequence[StepResult]) -> StepPlan:
    """What step ``step`` trains: the entry encoder, the grid, the seeds, the learning rate, whether
    the ICA matrix is a candidate too, and the model training starts from.

    ``history``: the finished steps, step 0 first. Step 1 builds entries with the base model and
    searches the grid; step k > 1 builds them with :func:`entry_source`'s best encoder and keeps
    that candidate's grid point.
    """
    ica = section.ica_step == step
    if step == 1:
        base, base_hash = _base(section)
        return StepPlan(step=1, lr=section.lr_for_step(1), grid=tuple(section.grid), seeds=tuple(section.seeds),
                        ica=ica, encoder=base, encoder_id=base_hash, source_step=0)
    if not history or history[-1].step != step - 1:
        raise ValueError(f"step {step} needs step {step - 1}'s result")
    source = entry_source(section, history)
    best = source.best
    grid = (GridPoint(pooling=best.pooling, entry_encoding=best.entry_encoding),)
    start = {} if section.separate else {"start": best.model_dir, "start_id": best.artifact_key}
    return StepPlan(step=step, lr=section.lr_for_step(step), grid=grid, seeds=tuple(section.seeds), ica=ica,
                    encoder=best.model_dir, encoder_id=best.artifact_key, source_step=source.step, **start)


def step_key(section: PstSection, data: TrainingData, plan: StepPlan, selection: SelectionPlan) -> str:
    _, base_hash = _base(section)
    training = section.model_dump(mode="json", include={"use_pooler", "batch_size", "max_length", "autocast",
                                                         "temperature", "normalize_logits", "selection_pooling"})
    if section.batching != "length":  # the default keeps earlier keys (and their cached steps) valid
        training["batching"] = section.batching
    if plan.ica:
        training["ica_fit"] = section.ica_fit.model_dump(mode="json")
    plan_fields = {k: v for k, v in plan.to_dict().items() if k not in ("encoder", "start")}  # *_id name them
    rule = section.selection_rule
    return _key("pst_step", base_hash, data.train_hash, hash_config(plan_fields), hash_config(training),
                selection.metric, selection.data_hash, rule)


def record_step(run_id: str, result: StepResult, *, root: str | os.PathLike | None = None) -> None:
    """Replace this run's ``pst_steps`` rows of one step (one row per candidate)."""
    with Catalog(root).transaction() as con:
        con.execute("DELETE FROM pst_steps WHERE run_id = ? AND step = ?", [run_id, result.step])
        for c in result.candidates:
            chosen = c.model_id == result.best.model_id and c.pooling == result.best.pooling
            note = c.score_note if c.step else "untrained encoder (step 0)"
            con.execute(
                "INSERT INTO pst_steps (run_id, step, seed, model_id, selection_metric, selection_score, chosen, "
                "entry_matrix_path, lr, pooling, entry_encoding, use_pooler, note, ica, selection_rule, group_mean) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [run_id, c.step, c.seed, c.model_id, c.metric, c.score, chosen, c.entry_matrix_path, c.lr,
                 c.pooling, c.entry_encoding, c.use_pooler, note, c.ica, result.rule,
                 result.group_means.get(c.group)],
            )
    _record_entry_space(run_id, result, root)


def _record_entry_space(run_id: str, result: StepResult, root: str | os.PathLike | None) -> None:
    """One ``entry_space_stats`` row per entry matrix of the step (read by the ``pst_progress`` view)."""
    for m in result.entry_matrices:
        if m.stats:
            plot = Path(m.path) / "entry_space.png"
            record_entry_space_stats(run_id, result.step, m.key, m.stats, root=root, matrix_path=str(m.matrix_path),
                                     plot_path=str(plot) if plot.is_file() else None)
