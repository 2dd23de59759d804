"""PST candidates as independent, fan-out-able calls: planned in the flow process, run anywhere.

A step's candidates (grid point x ICA x seed; step 0's untrained encoder per pooling) are planned
by :func:`plan_candidate` / :func:`plan_base_candidate` in the process that owns the catalog: each
becomes a spec holding every input the candidate needs (base model and entry-matrix paths, the
training definitions and rows, the scoring request) and its content keys. :func:`run_candidate`
runs one spec on any worker: it never opens the catalog. It trains (under an artifact lock, with
its own RNG state, thread count and device), scores with the scorer it is handed, writes its
artifacts and, last, their on-disk records; it returns the scored candidate and the records.
:func:`run_candidates` is the step's part: candidates already in the catalog are read back, the
rest go through ``fan_out``, and their records are registered in one transaction.

A finished candidate is idempotent: when both its records are on disk (the flow was killed before
registering them, or Dask recomputed a finished task of a dead worker), it returns them as is.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import random
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from defsentflow.fanout import (
    FanOut,
    kill_hook_steps,
    kill_this_worker,
    sequential,
    submit,
    worker_device,
    worker_threads,
)
from defsentflow.storage import Catalog, data_root, hash_path, write_json
from defsentflow.storage.locks import artifact_lock
from defsentflow.storage.records import make_record, read_record, write_record
from defsentflow.training.config import TrainConfig
from defsentflow.training.data import TrainingData
from defsentflow.training.pst_config import GridPoint, PstSection
from defsentflow.training.pst_records import Candidate, MatrixRef, ScoreRequest, SelectionPlan
from defsentflow.training.pst_steps import _base, _config_identity, _key, _train_config

__all__ = ["Scorer", "plan_base_candidate", "plan_candidate", "run_candidate", "run_candidates", "start_candidates"]

Scorer = Callable[[ScoreRequest], "tuple[float, list[dict[str, Any]]]"]
"""``scorer(request) -> (value, metric rows)``: the selection score of ``request.candidate``."""


def _request(section: PstSection, data: TrainingData, cand: Candidate, plan: SelectionPlan, root: str) -> ScoreRequest:
    pooling = section.selection_pooling or cand.pooling
    return ScoreRequest(candidate=cand, metric=plan.metric, pooling=pooling, data_dir=plan.data_dir,
                        max_length=section.max_length, autocast=section.autocast, device=section.device,
                        revdict_mode=section.selection_revdict_mode, max_queries=section.selection_max_queries,
                        batch_size=section.entry_batch_size,
                        table=data.table if plan.metric == "revdict-mrr" else None, root=root)


def _score_key(section: PstSection, cand: Candidate, plan: SelectionPlan) -> str:
    pooling = section.selection_pooling or cand.pooling
    return _key("pst_score", cand.artifact_key, plan.metric, plan.data_hash, pooling, section.max_length)


def plan_candidate(section: PstSection, data: TrainingData, plan: SelectionPlan, *, step: int, seed: int,
                   grid: GridPoint, lr: float, matrix: MatrixRef, start: str | None = None,
                   start_id: str | None = None, root: str | os.PathLike | None = None, run_id: str | None = None,
                   threads: int | None = None) -> dict[str, Any]:
    """The spec of one trained candidate: a fresh copy of the ORIGINAL base model (or ``start``,
    content key ``start_id``, when the run continues the previous step's encoder) trained against
    ``matrix``, then scored."""
    base, base_hash = _base(section)
    if start is not None:
        base, base_hash = start, start_id or start
    cfg = _train_config(section, method="defsent_plus", pooling=grid.pooling, lr=lr, seed=seed, variant=data.variant)
    key = _key("pst_model", base_hash, matrix.key, data.train_hash, _config_identity(cfg))
    home = str(data_root(root))
    model_id = f"dsp-{key[:12]}"
    extra = {"entry_encoder": matrix.encoder, "entry_encoding": grid.entry_encoding, "ica": matrix.ica,
             "normalize_logits": section.normalize_logits, "entry_matrix": str(matrix.matrix_path),
             "pst_step": step, "dictionary": section.dictionary, "train_splits": list(data.splits),
             **({"started_from": start} if start is not None else {})}
    cand = Candidate(step=step, seed=seed, pooling=grid.pooling, entry_encoding=grid.entry_encoding, lr=lr,
                     model_id=model_id, model_dir=str(Path(home) / "models" / "pst" / key), artifact_key=key,
                     use_pooler=section.use_pooler, entry_matrix_path=str(matrix.matrix_path), ica=matrix.ica)
    train = {"config": cfg.model_dump(), "base": base, "definitions": list(data.definitions),
             "targets": [int(t) for t in data.targets], "entry_matrix_path": str(matrix.matrix_path),
             "extra_meta": extra, "base_name": section.base_model}
    return {"label": f"step {step} {cand.label}", "root": home, "run_id": run_id, "threads": threads,
            "candidate": cand, "train": train, "score_key": _score_key(section, cand, plan),
            "request": _request(section, data, cand, plan, home), "note": plan.note, "data_hash": plan.data_hash}


def plan_base_candidate(section: PstSection, data: TrainingData, plan: SelectionPlan, cand: Candidate, *,
                        root: str | os.PathLike | None = None, run_id: str | None = None,
                        threads: int | None = None) -> dict[str, Any]:
    """The spec of a step-0 candidate (the untrained encoder): scoring only."""
    home = str(data_root(root))
    return {"label": f"step 0 {cand.label}", "root": home, "run_id": run_id, "threads": threads, "candidate": cand,
            "train": None, "score_key": _score_key(section, cand, plan),
            "request": _request(section, data, cand, plan, home), "note": plan.note, "data_hash": plan.data_hash}


# -- on the worker ----------------------------------------------------------------------------------------
def _score_path(spec: dict[str, Any]) -> Path:
    return Path(spec["root"]) / "pst" / "scores" / f"{spec['score_key']}.json"


def _scored(spec: dict[str, Any], rec: dict[str, Any]) -> Candidate:
    return dataclasses.replace(spec["candidate"], metric=rec["metric"], score=float(rec["value"]),
                               score_note=spec["note"])


def _finished(spec: dict[str, Any]) -> dict[str, Any] | None:
    """Both records of a finished candidate, as written (None when any is missing)."""
    score = read_record(_score_path(spec))
    model = read_record(spec["candidate"].model_dir) if spec["train"] is not None else None
    if score is None or (spec["train"] is not None and model is None):
        return None
    rec = json.loads(_score_path(spec).read_text())
    return {"candidate": _scored(spec, rec), "records": [r for r in (model, score) if r is not None]}


@contextlib.contextmanager
def _own_rng() -> Any:
    """The candidate's RNG state is its own: seeded by its training, restored afterwards (python,
    numpy and torch), so whatever ran before in this worker process changes nothing."""
    import torch  # lazy: torch takes seconds to load; only code that trains or encodes needs it

    py, npy = random.getstate(), np.random.get_state()
    with torch.random.fork_rng(devices=list(range(torch.cuda.device_count())) if torch.cuda.is_initialized() else []):
        try:
            yield
        finally:
            random.setstate(py)
            np.random.set_state(npy)


def _train(spec: dict[str, Any]) -> dict[str, Any]:
    """Train the candidate's model (resuming its checkpoint) unless it is finished; its record."""
    from defsentflow.training.loop import (
        train_encoder,  # lazy: looked up at call time, so tests can replace it on its own module
    )

    t, cand, root = spec["train"], spec["candidate"], Path(spec["root"])
    cfg = TrainConfig.model_validate(t["config"])
    cfg = cfg.model_copy(update={"device": worker_device(cfg.device)})  # device is not part of any key
    out = Path(cand.model_dir)
    ckpt = root / "checkpoints" / "pst" / cand.artifact_key
    if not (out / "defsentflow.json").is_file():  # a finished but unrecorded model is kept
        matrix = np.load(t["entry_matrix_path"])
        kill_after = kill_hook_steps()
        with _own_rng():
            if kill_after is not None:  # fault test: checkpoint after N steps, then die as a lost worker would
                train_encoder(cfg, t["base"], t["definitions"], t["targets"], out_dir=out, checkpoint_dir=ckpt,
                              entry_matrix=matrix, stop_after_steps=kill_after)
                kill_this_worker()
            train_encoder(cfg, t["base"], t["definitions"], t["targets"], out_dir=out, checkpoint_dir=ckpt,
                          entry_matrix=matrix)
    meta_file = out / "defsentflow.json"
    meta = json.loads(meta_file.read_text()) if meta_file.is_file() else {}
    meta.update(t["extra_meta"])
    meta.setdefault("train_splits", ["train"])
    write_json(meta, meta_file)
    shutil.rmtree(ckpt, ignore_errors=True)
    model = {"model_id": cand.model_id, "path": str(out),
             "base_model": t["base_name"], "method": "defsent_plus", "pooling": cfg.pooling,
             "run_id": spec["run_id"], "artifact_key": cand.artifact_key, "meta": t["extra_meta"]}
    return make_record(root, key=cand.artifact_key, kind="model", path=out, content_hash=hash_path(out),
                       name=cand.model_id, config=cfg.model_dump(), run_id=spec["run_id"], meta=t["extra_meta"],
                       model=model)


def run_candidate(spec: dict[str, Any], scorer: Scorer) -> dict[str, Any]:
    """Train (when the spec trains) and score one candidate; write its artifacts and records.

    Opens no catalog. Returns ``{"candidate": the scored Candidate, "records": [model record,
    score record]}`` for the flow process to register. Idempotent: a candidate whose records are
    on disk is returned as is, and two copies of one candidate never train into one directory
    (an artifact lock on the model key; the second finds the first's work done).
    """
    done = _finished(spec)
    if done is not None:
        return done
    cand, root = spec["candidate"], Path(spec["root"])
    with artifact_lock(cand.artifact_key if spec["train"] else spec["score_key"], root), \
            worker_threads(spec["threads"]):
        done = _finished(spec)
        if done is not None:
            return done
        records = []
        if spec["train"] is not None:
            model_record = _train(spec)
            write_record(cand.model_dir, model_record)
            records.append(model_record)
        req: ScoreRequest = spec["request"]
        req = dataclasses.replace(req, device=worker_device(req.device) or req.device)
        with _own_rng():
            value, rows = scorer(req)
        rows = [{**r, "model_id": cand.model_id} for r in rows]
        rec = {"metric": req.metric, "value": float(value), "pooling": req.pooling, "rows": rows,
               "note": spec["note"]}
        path = _score_path(spec)
        write_json(rec, path)
        score_record = make_record(root, key=spec["score_key"], kind="selection_score", path=path,
                                   content_hash=hash_path(path), name=cand.model_id,
                                   input_hashes={"model": cand.artifact_key, "data": spec["data_hash"]},
                                   config={"metric": req.metric, "pooling": req.pooling}, run_id=spec["run_id"],
                                   metrics=rows)
        write_record(path, score_record)
        records.append(score_record)
    return {"candidate": _scored(spec, rec), "records": records}


# -- in the flow process ----------------------------------------------------------------------------------
def _registered(cat: Any, spec: dict[str, Any]) -> Candidate | None:
    """The scored candidate when the catalog holds its score (and model) artifacts, else None."""
    found = cat.artifact(spec["score_key"])
    if found is None:
        return None
    if spec["train"] is not None:
        model = cat.artifact(spec["candidate"].artifact_key)
        if model is None:
            return None
        spec = {**spec, "candidate": dataclasses.replace(spec["candidate"], model_dir=model["path"])}
    return _scored(spec, json.loads(Path(found["path"]).read_text()))


def run_candidates(specs: Sequence[dict[str, Any]], *, scorer: Scorer | None, fan_out: FanOut = sequential,
                   root: str | os.PathLike | None = None) -> list[Candidate]:
    """Score (and train) a step's candidates; in spec order.

    Candidates the catalog already holds are read back; the others go through ``fan_out`` (one
    :func:`run_candidate` call each) and their records are registered here, in one transaction.
    """
    return start_candidates(specs, scorer=scorer, fan_out=fan_out, root=root)()


def start_candidates(specs: Sequence[dict[str, Any]], *, scorer: Scorer | None, fan_out: FanOut = sequential,
                     root: str | os.PathLike | None = None) -> Callable[[], list[Candidate]]:
    """:func:`run_candidates` in two halves: the calls start now where ``fan_out`` can run them beside
    this process (:func:`~defsentflow.fanout.submit`); the returned function waits for them, registers
    their records and returns the candidates."""
    cat = Catalog(root)
    out: list[Candidate | None] = [_registered(cat, s) for s in specs]
    todo = [i for i, c in enumerate(out) if c is None]
    if todo and scorer is None:
        raise ValueError("PST needs a selection scorer: pass PstSteps(scorer=...), e.g. "
                         "defsentflow.evaluation.selection.selection_score")
    wait = submit(fan_out, run_candidate, [(specs[i], scorer) for i in todo]) if todo else None

    def finish() -> list[Candidate]:
        if wait is not None:
            results = wait()
            cat.register_records([r for res in results for r in res["records"]])
            for i, res in zip(todo, results):
                out[i] = res["candidate"]
        return [c for c in out if c is not None]

    return finish
