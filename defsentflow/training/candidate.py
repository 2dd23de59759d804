"""One unit of training work: plan a model, train it anywhere, file it. PST and DefSent both use it.

* :func:`plan_training` is the one place that decides a trained model's content key, catalog id,
  folder, checkpoint folder and record fields (:class:`TrainSpec`, frozen and small: paths and
  content keys, never the training set).
* :func:`train_candidate` trains one :class:`TrainSpec` on whatever process runs it (it never opens
  the catalog): it reads the definitions by reference, trains under an artifact lock with its own
  RNG state (resuming its checkpoint), writes the model folder with its complete
  ``defsentflow.json`` and, last, the on-disk artifact record, which it returns for the flow
  process to register.
* A PST candidate (:class:`CandidateSpec`) is a training spec (None for step 0, the untrained
  encoder) plus its selection figure's evaluation: :func:`run_candidate` trains it anywhere, then
  calls the one figure path (:func:`defsentflow.training.selection.score_candidate`);
  :func:`start_candidates` is a step's part in the flow process (candidates the catalog already
  holds are read back, the rest go through ``fan_out``, their records are registered in one
  transaction).

A finished candidate is idempotent: when its records are on disk (the flow was killed before
registering them, or Dask recomputed a finished task of a dead worker), they are returned as is.

Example:
    >>> spec = plan_training(section, data, method="defsent_plus", pooling="mean", lr=2e-5, seed=0, matrix=ref)
    >>> record = train_candidate(spec, root="storage", run_id="r1")
    >>> Catalog("storage").register_records([record])
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import random
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from defsentflow.encoders import resolve_model_path
from defsentflow.evaluation.config import EvalConfig
from defsentflow.fanout import (
    FanOut,
    kill_hook_steps,
    kill_this_worker,
    sequential,
    submit,
    worker_device,
    worker_threads,
)
from defsentflow.model.entry_matrix import EntryMatrix
from defsentflow.model.ids import ModelSlot, model_slot
from defsentflow.model.record import model_ref, read_model_record
from defsentflow.model.targets import single_token_entries
from defsentflow.storage import Catalog, data_root, hash_path
from defsentflow.storage.locks import artifact_lock
from defsentflow.storage.paths import from_root, to_root
from defsentflow.storage.records import make_record, read_record, write_record
from defsentflow.training.config import TrainConfig, paper_config
from defsentflow.training.data import TrainingData, TrainingDataRef
from defsentflow.training.keys import artifact_key, base_model_of, config_identity
from defsentflow.training.pst_config import DefSentSection, GridPoint, PstSection
from defsentflow.training.pst_records import Candidate, MatrixRef, SelectionPlan
from defsentflow.training.selection import score_candidate, selection_config, selection_inputs
from defsentflow.training.step_plan import base_name_or_path

__all__ = ["CandidateSpec", "TrainSpec", "plan_base_candidate",
           "PendingCandidates", "plan_candidate", "plan_training", "run_candidate", "run_candidates", "start_candidates",
           "train_candidate", "train_config_for"]

@dataclass(frozen=True)
class TrainSpec:
    """Everything one model's training needs, by reference (a few KB pickled)."""

    slot: ModelSlot
    config: TrainConfig
    base: str                   # the model training starts from: a name or a folder (absolute)
    base_name: str              # how the catalog names the base (``models.base_model``)
    data: TrainingDataRef
    entry_matrix: str | None    # the DefSent+ head's folder, relative to the data root
    record: dict[str, Any]      # the fields this run adds to the model's defsentflow.json (portable)

    @property
    def method(self) -> str:
        return self.slot.method


def train_config_for(section: PstSection | DefSentSection, *, method: str, pooling: str, lr: float, seed: int,
                     variant: str | None) -> TrainConfig:
    """The papers' settings for ``method`` (:func:`paper_config`), overridden by what the section sets.

    Settings the section leaves unset keep the paper's choice (e.g. DefSent+'s batch 32 on dataset
    variant a, 16 on b and c; DefSent's 10% warm-up and no clipping).
    """
    overrides = {k: getattr(section, k) for k in ("batch_size", "warmup_ratio", "epochs")
                 if getattr(section, k, None) is not None}
    return paper_config(method, variant=variant, pooling=pooling, lr=lr, seed=seed, use_pooler=section.use_pooler,
                        untrained_pooler=section.untrained_pooler, max_length=section.max_length, temperature=section.temperature,
                        normalize_logits=section.normalize_logits, autocast=section.autocast,
                        mlm_dense_from=section.mlm_dense_from,
                        negatives=section.negatives, checkpoint_every=section.checkpoint_every,
                        device=section.device, bucket_batches=1 if section.batching == "random" else 50, **overrides)


def plan_training(section: PstSection | DefSentSection, data: TrainingData, *, method: str, pooling: str, lr: float,
                  seed: int, matrix: MatrixRef | None = None, start: str | None = None, start_id: str | None = None,
                  step: int | None = None, root: str | os.PathLike | None = None) -> TrainSpec:
    """The spec of one model: a fresh copy of the base model (or ``start``, content key ``start_id``,
    when PST continues the previous step's encoder), trained with ``method`` against ``matrix``
    (DefSent+) or the base model's word-prediction layer (DefSent)."""
    home = data_root(root)
    base, base_hash = base_model_of(section)
    base_ref = base_name_or_path(section)
    if start is not None:
        base, base_hash, base_ref = start, start_id or start, start
    cfg = train_config_for(section, method=method, pooling=pooling, lr=lr, seed=seed, variant=data.variant)
    if method == "defsent_plus":
        if matrix is None:
            raise ValueError("DefSent+ trains against an entry matrix: pass matrix=")
        key = artifact_key("pst_model", base_hash, matrix.key, data.train_hash, config_identity(cfg))
    else:
        key = artifact_key("defsent_model", base_hash, data.train_hash, config_identity(cfg))
    slot = model_slot(method, key)
    folder = home / slot.folder
    record: dict[str, Any] = {"dictionary": section.dictionary, "train_splits": list(data.splits),
                              "base_model": model_ref(base_ref, folder, home), "base_model_hash": base_hash}
    if matrix is not None:
        record.update(entry_encoder=model_ref(matrix.encoder, folder, home), entry_encoding=matrix.encoding,
                      ica=matrix.ica, normalize_logits=section.normalize_logits,
                      entry_matrix=model_ref(matrix.path, folder, home), entry_matrix_key=matrix.key)
    if step is not None:
        record["pst_step"] = step
    if start is not None:
        record["started_from"] = model_ref(start, folder, home)
    return TrainSpec(slot=slot, config=cfg, base=base, base_name=section.base_model, data=data.ref(home),
                     entry_matrix=to_root(home, matrix.path) if matrix is not None else None, record=record)


# -- training, anywhere -------------------------------------------------------------------------------------
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


def _single_token_pairs(base: str, data: TrainingData) -> tuple[list[str], list[int]]:
    """DefSent's training pairs: definitions of single-token entries, targets = vocabulary ids."""
    mask, ids = single_token_entries(base, data.entries)
    keep = [i for i, t in enumerate(data.targets) if mask[t]]
    if not keep:
        raise ValueError(f"no training entry of {data.dictionary!r} is a single token of {base}'s vocabulary")
    return [data.definitions[i] for i in keep], [int(ids[data.targets[i]]) for i in keep]


def train_candidate(spec: TrainSpec, *, root: str | os.PathLike, run_id: str | None = None) -> dict[str, Any]:
    """Train (or find) one model; write its folder and on-disk record; return the record.

    Opens no catalog. A folder with its record already on disk is returned as is; two processes
    given the same spec never train into one folder (an artifact lock on the key; the second finds
    the first's work done).
    """
    from defsentflow.training.loop import (
        train_encoder,  # lazy: looked up at call time, so tests can replace it on its own module
    )

    root = Path(root)
    slot = spec.slot
    out, ckpt = root / slot.folder, root / slot.checkpoint
    done = read_record(out)
    if done is not None:
        return done
    with artifact_lock(slot.key, root):
        done = read_record(out)
        if done is not None:
            return done
        cfg = spec.config.model_copy(update={"device": worker_device(spec.config.device)})  # device: in no key
        if read_model_record(out) is None:  # a finished model whose record was not written yet is kept
            data = spec.data.load(root)
            base = resolve_model_path(spec.base)
            definitions, targets = data.definitions, [int(t) for t in data.targets]
            if spec.method == "defsent":
                definitions, targets = _single_token_pairs(base, data)
            matrix = EntryMatrix.load(from_root(root, spec.entry_matrix), mmap=True).matrix if spec.entry_matrix \
                else None
            kill_after = kill_hook_steps()
            with _own_rng():
                if kill_after is not None:  # fault test: checkpoint after N steps, then die as a lost worker would
                    train_encoder(cfg, base, definitions, targets, out_dir=out, checkpoint_dir=ckpt,
                                  entry_matrix=matrix, record=spec.record, stop_after_steps=kill_after)
                    kill_this_worker()
                train_encoder(cfg, base, definitions, targets, out_dir=out, checkpoint_dir=ckpt, entry_matrix=matrix,
                              record=spec.record)
        shutil.rmtree(ckpt, ignore_errors=True)
        model = {"model_id": slot.model_id, "path": str(out), "base_model": spec.base_name, "method": slot.method,
                 "pooling": cfg.pooling, "run_id": run_id, "artifact_key": slot.key, "meta": spec.record}
        record = make_record(root, key=slot.key, kind="model", path=out, content_hash=hash_path(out),
                             name=slot.model_id, config=cfg.model_dump(), run_id=run_id, meta=spec.record, model=model)
        write_record(out, record)
    return record


# -- PST candidates -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CandidateSpec:
    """One PST candidate, planned in the flow process and run anywhere: its training (None: step 0,
    the untrained encoder) and the evaluation its selection figure is (with its inputs' content)."""

    label: str
    root: str
    run_id: str | None
    threads: int | None
    candidate: Candidate
    train: TrainSpec | None
    metric: str                 # the selection metric: "stsb-dev" | "revdict-mrr"
    mode: str                   # the reverse dictionary's selection mode
    selection: EvalConfig
    inputs: dict[str, str]
    dictionary: str | None      # revdict-mrr: the dictionary artifact's folder, relative to ``root``
    note: str | None


def _spec(section: PstSection, data: TrainingData, cand: Candidate, plan: SelectionPlan, home: Path, *,
          label: str, run_id: str | None, threads: int | None, train: TrainSpec | None) -> CandidateSpec:
    dictionary = to_root(home, data.source) if plan.metric == "revdict-mrr" and data.source else None
    config = selection_config(section, plan.metric, pooling=section.selection_pooling or cand.pooling,
                              data_dir=plan.data_dir, dictionary=dictionary)
    return CandidateSpec(label=label, root=str(home), run_id=run_id, threads=threads, candidate=cand, train=train,
                         metric=plan.metric, mode=section.selection_revdict_mode, selection=config,
                         inputs=selection_inputs(config), dictionary=dictionary, note=plan.note)


def plan_candidate(section: PstSection, data: TrainingData, plan: SelectionPlan, *, step: int, seed: int,
                   grid: GridPoint, lr: float, matrix: MatrixRef, start: str | None = None,
                   start_id: str | None = None, root: str | os.PathLike | None = None, run_id: str | None = None,
                   threads: int | None = None, lr_searched: bool = False) -> CandidateSpec:
    """The spec of one trained candidate (:func:`plan_training`), then scored (``lr_searched``: one of
    the step's searched rates, part of the candidate's group)."""
    home = data_root(root)
    train = plan_training(section, data, method="defsent_plus", pooling=grid.pooling, lr=lr, seed=seed, matrix=matrix,
                          start=start, start_id=start_id, step=step, root=home)
    cand = Candidate(step=step, seed=seed, pooling=grid.pooling, entry_encoding=grid.entry_encoding, lr=lr,
                     model_id=train.slot.model_id, model_dir=str(home / train.slot.folder), artifact_key=train.slot.key,
                     use_pooler=section.use_pooler, entry_matrix_path=matrix.path,
                     ica=matrix.ica, lr_searched=lr_searched)
    return _spec(section, data, cand, plan, home, label=f"step {step} {cand.label}", run_id=run_id, threads=threads,
                 train=train)


def plan_base_candidate(section: PstSection, data: TrainingData, plan: SelectionPlan, cand: Candidate, *,
                        root: str | os.PathLike | None = None, run_id: str | None = None,
                        threads: int | None = None) -> CandidateSpec:
    """The spec of a step-0 candidate (the untrained encoder): scoring only."""
    return _spec(section, data, cand, plan, data_root(root), label=f"step 0 {cand.label}", run_id=run_id,
                 threads=threads, train=None)


def _scored(spec: CandidateSpec, model_dir: str, *, compute: bool, device: str | None = None,
            ) -> tuple[Candidate, list[dict[str, Any]]] | None:
    """The candidate with its selection score, and the figures' records (None: not stored and ``compute`` off)."""
    config = spec.selection if device is None else spec.selection.model_copy(update={"device": device})
    scored = score_candidate(model_dir, config, spec.metric, spec.mode, root=spec.root,
                             model_id=spec.candidate.model_id, inputs=spec.inputs, dictionary=spec.dictionary,
                             run_id=spec.run_id, compute=compute)
    if scored is None:
        return None
    value, column, figs = scored
    cand = dataclasses.replace(spec.candidate, model_dir=model_dir, metric=spec.metric, score=value,
                               score_note=spec.note, column=column)
    return cand, list(figs.records)


def run_candidate(spec: CandidateSpec) -> dict[str, Any]:
    """Train (when the spec trains) and score one candidate by the one figure path; write its artifacts
    and records.

    Opens no catalog. Returns ``{"candidate": the scored Candidate, "records": [model record, figure
    records]}`` for the flow process to register. Idempotent: a model or figure on disk is read back.
    """
    with worker_threads(spec.threads):
        records = []
        if spec.train is not None:
            records.append(train_candidate(spec.train, root=spec.root, run_id=spec.run_id))
        device = worker_device(spec.selection.device) or spec.selection.device
        with _own_rng():
            cand, figures = _scored(spec, spec.candidate.model_dir, compute=True, device=device)
    return {"candidate": cand, "records": records + figures}


# -- in the flow process ----------------------------------------------------------------------------------
def _registered(cat: Any, spec: CandidateSpec) -> Candidate | None:
    """The scored candidate when its model is registered and its selection figure stored, else None."""
    model_dir = spec.candidate.model_dir
    if spec.train is not None:
        with cat.session(read_only=True):
            model = cat.artifact(spec.candidate.artifact_key)
        if model is None:
            return None
        model_dir = model["path"]
    found = _scored(spec, model_dir, compute=False)
    return None if found is None else found[0]


def run_candidates(specs: Sequence[CandidateSpec], *, fan_out: FanOut = sequential,
                   root: str | os.PathLike | None = None) -> list[Candidate]:
    """Score (and train) a step's candidates; in spec order (see :func:`start_candidates`)."""
    return start_candidates(specs, fan_out=fan_out, root=root)()


class PendingCandidates:
    """The second half of :func:`start_candidates`: calling it waits for the calls, registers their
    records and returns the candidates; ``computed`` is how many calls were started (0: every
    candidate was found in the catalog)."""

    def __init__(self, finish: Callable[[], list[Candidate]], computed: int):
        self._finish, self.computed = finish, computed

    def __call__(self) -> list[Candidate]:
        return self._finish()


def start_candidates(specs: Sequence[CandidateSpec], *, fan_out: FanOut = sequential,
                     root: str | os.PathLike | None = None) -> PendingCandidates:
    """A step's candidates in two halves: the calls start now where ``fan_out`` can run them beside
    this process (:func:`~defsentflow.fanout.submit`); the returned :class:`PendingCandidates` waits
    for them, registers their records and returns the candidates. Candidates the catalog already
    holds are read back without a call."""
    cat = Catalog(root)
    out: list[Candidate | None] = [_registered(cat, s) for s in specs]
    todo = [i for i, c in enumerate(out) if c is None]
    wait = submit(fan_out, run_candidate, [(specs[i],) for i in todo]) if todo else None

    def finish() -> list[Candidate]:
        if wait is not None:
            results = wait()
            cat.register_records([r for res in results for r in res["records"]])
            for i, res in zip(todo, results):
                out[i] = res["candidate"]
        return [c for c in out if c is not None]

    return PendingCandidates(finish, len(todo))
