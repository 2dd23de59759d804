"""The surrogate encoder: a Siamese sentence encoder whose cosine regresses the harvested labels.

sentence-transformers does the work: a ``SentenceTransformer`` (transformer + mean pooling over
the last layer) trained by its own ``SentenceTransformerTrainer`` with one of its pair-score losses
(``loss``): ``CosineSimilarityLoss`` (MSE between ``cos(u, v)`` and the pair's score, the
default), ``CoSENTLoss`` or ``AnglELoss`` (both rank the pairs of a batch by their scores, so only
the labels' order counts). ``labels`` rescales the harvested scores first: ``minmax`` maps them
onto [0, 1], ``rank`` replaces them by their rank quantiles in [0, 1] (a labeller's scale, e.g.
centred cosines around 0.2, is not the cosine scale the MSE loss regresses to).
``shuffle_labels`` permutes the labels (seeded) before training: a deliberately broken variant
for the positive control (``tests/integration/test_surrogate_control.py``), never for real use.

Checkpoints go to a work directory every ``save_steps`` steps; a run that finds one there resumes
from the last. The finished model is written atomically and loads with ``SentenceTransformer(path)``.

Example:
    >>> res = train_surrogate("storage/parquet/harvest/bbc/<key>/pairs.parquet", "out/surrogate",
    ...                       SurrogateSection(base_encoder="minilm", epochs=1))
    >>> SentenceTransformer(str(res.path)).encode(["a sentence"]).shape
    (1, 384)
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from defsentflow.encoders import (
    model_construction,
    model_content_hash,
    pick_device,
    require_safetensors,
    resolve_model_path,
)
from defsentflow.model.ids import named_model_id
from defsentflow.model.record import model_ref, write_model_record
from defsentflow.progress import live
from defsentflow.scoring.config import SurrogateSection, resolve_input_path
from defsentflow.scoring.pair_file import read_scored_pairs
from defsentflow.scoring.stages import run_harvest
from defsentflow.storage import (
    Catalog,
    atomic_dir,
    code_version,
    combine_hashes,
    data_root,
    hash_config,
    hash_path,
    root_place,
    write_parquet,
)

__all__ = ["LABEL_SCALINGS", "SURROGATE_LOSSES", "SurrogateResult", "build_surrogate_model",
           "load_pair_dataset", "scale_labels", "train_surrogate", "run_supervised", "run_surrogate",
           "run_surrogate_config"]

log = logging.getLogger(__name__)

SURROGATE_LOSSES = ("cosine", "cosent", "angle")
LABEL_SCALINGS = ("none", "minmax", "rank")


@dataclass(frozen=True)
class SurrogateResult:
    path: Path
    n_pairs: int
    steps: int
    seconds: float
    train_loss: float | None
    resumed_from: str | None


def build_surrogate_model(base_encoder: str, *, max_seq_length: int = 128, device: str | None = None):
    """A ``SentenceTransformer`` over ``base_encoder`` with mean pooling over the last layer.

    A sentence-transformers directory keeps its modules when it already pools by mean (the
    bundled MiniLM: Transformer, mean Pooling, Normalize); anything else (a plain Hugging Face
    model, or CLS pooling) gets ``Transformer + Pooling("mean")``.
    """
    from sentence_transformers import (  # lazy: sentence-transformers loads torch; only training and encoding need it
        SentenceTransformer,
        models,
    )

    path = require_safetensors(base_encoder)
    safe = {"use_safetensors": True}
    with model_construction():
        if (Path(path) / "modules.json").exists():
            model = SentenceTransformer(path, device=device, model_kwargs=safe)
            pools = [m for m in model if isinstance(m, models.Pooling)]
            if pools and _pooling_mode(pools[0]) == "mean":
                model.max_seq_length = max_seq_length
                return model
        word = models.Transformer(path, max_seq_length=max_seq_length, model_kwargs=safe)
        pool = models.Pooling(word.get_embedding_dimension(), pooling_mode="mean")
        return SentenceTransformer(modules=[word, pool], device=device)


def _pooling_mode(pooling) -> str:
    mode = pooling.get_config_dict().get("pooling_mode")
    return mode[0] if isinstance(mode, (list, tuple)) and len(mode) == 1 else str(mode)


def scale_labels(scores: np.ndarray, how: str) -> np.ndarray:
    """``none``: as they are; ``minmax``: onto [0, 1]; ``rank``: average-rank quantiles in [0, 1].

    Example:
        >>> scale_labels(np.array([0.1, 0.5, 0.3]), "rank").tolist()
        [0.0, 1.0, 0.5]
    """
    s = np.asarray(scores, dtype=np.float64)
    if how == "none" or len(s) < 2:
        return s.astype(np.float32)
    if how == "minmax":
        span = s.max() - s.min()
        return ((s - s.min()) / span if span > 0 else np.full_like(s, 0.5)).astype(np.float32)
    if how == "rank":
        from scipy.stats import rankdata  # lazy: scipy loads only where it is used

        return ((rankdata(s) - 1) / (len(s) - 1)).astype(np.float32)
    raise ValueError(f"label scaling {how!r} is not one of {', '.join(LABEL_SCALINGS)}")


def load_pair_dataset(pairs_path: str | os.PathLike, *, max_pairs: int | None = None, seed: int = 0,
                      labels: str = "none", shuffle_labels: bool = False):
    """``datasets.Dataset`` with ``sentence1``, ``sentence2``, ``score`` from a harvest's pairs Parquet.

    ``labels`` rescales the scores (:func:`scale_labels`) after the ``max_pairs`` sample is drawn;
    ``shuffle_labels`` then permutes them among the pairs (seeded by ``seed``).
    """
    import datasets  # lazy: datasets loads only where it is used
    import pyarrow.parquet as pq  # lazy: pyarrow loads only where it is used

    path = Path(pairs_path)
    if not path.is_file():
        raise FileNotFoundError(f"pairs file not found: {path}")
    t = pq.read_table(path, columns=["s1", "s2", "score"])
    if t.num_rows == 0:
        raise ValueError(f"{path}: no pairs")
    idx = np.arange(t.num_rows)
    if max_pairs is not None and max_pairs < t.num_rows:
        idx = np.sort(np.random.default_rng(seed).permutation(t.num_rows)[:max_pairs])
    t = t.take(idx)
    scores = t.column("score").to_numpy().astype(np.float32)
    if not np.isfinite(scores).all():
        bad = int(np.flatnonzero(~np.isfinite(scores))[0])
        raise ValueError(f"{path}: non-finite score at row {int(idx[bad])}")
    return datasets.Dataset.from_dict({"sentence1": t.column("s1").to_pylist(), "sentence2": t.column("s2").to_pylist(),
                                       "score": _shuffled(scale_labels(scores, labels), shuffle_labels, seed).tolist()})


def _shuffled(scores: np.ndarray, shuffle: bool, seed: int) -> np.ndarray:
    return np.random.default_rng([seed, 1]).permutation(scores) if shuffle else scores


def _loss(model, name: str):
    from sentence_transformers import (
        losses,  # lazy: sentence-transformers loads torch; only training and encoding need it
    )

    return {"cosine": losses.CosineSimilarityLoss, "cosent": losses.CoSENTLoss, "angle": losses.AnglELoss}[name](model)


def _last_checkpoint(work_dir: Path) -> str | None:
    from transformers.trainer_utils import (
        get_last_checkpoint,  # lazy: transformers takes seconds to load; only code that loads a model needs it
    )

    return get_last_checkpoint(str(work_dir)) if work_dir.is_dir() else None


def train_surrogate(pairs_path: str | os.PathLike, out_dir: str | os.PathLike, config: SurrogateSection, *,
                    work_dir: str | os.PathLike | None = None) -> SurrogateResult:
    """Train on the pairs and save the model to ``out_dir`` (atomically); resume from ``work_dir``'s last checkpoint.

    Args:
        pairs_path: a harvest's ``pairs.parquet`` (columns ``s1``, ``s2``, ``score``).
        out_dir: where the finished ``SentenceTransformer`` goes.
        config: the ``surrogate:`` section of the harvest config (its ``name`` plays no part in training).
        work_dir: checkpoints (default ``<out_dir>.checkpoints``); removed after success.
    """
    import torch  # lazy: torch takes seconds to load; only code that trains or encodes needs it
    from sentence_transformers import (  # lazy: sentence-transformers loads torch; only training and encoding need it
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )

    t0 = time.perf_counter()
    out_dir = Path(out_dir)
    work = Path(work_dir) if work_dir else out_dir.with_name(out_dir.name + ".checkpoints")
    device = pick_device(config.device)
    if config.threads:
        torch.set_num_threads(config.threads)
    data = load_pair_dataset(pairs_path, max_pairs=config.max_pairs, seed=config.seed, labels=config.labels,
                             shuffle_labels=config.shuffle_labels)
    torch.manual_seed(config.seed)
    model = build_surrogate_model(config.base_encoder, max_seq_length=config.max_seq_length, device=str(device))
    args = SentenceTransformerTrainingArguments(
        output_dir=str(work), num_train_epochs=config.epochs, per_device_train_batch_size=config.batch_size,
        learning_rate=config.lr, warmup_steps=float(config.warmup_ratio), seed=config.seed, data_seed=config.seed,
        save_strategy="steps", save_steps=config.save_steps, save_total_limit=2, logging_steps=50,
        # In a log file the trainer prints its loss lines every logging_steps instead of a bar.
        report_to="none", disable_tqdm=not live(), use_cpu=device.type == "cpu",
    )
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=data,
                                         loss=_loss(model, config.loss))
    resume = _last_checkpoint(work)
    if resume:
        log.info("surrogate: resuming from %s", resume)
    out = trainer.train(resume_from_checkpoint=resume)
    with atomic_dir(out_dir) as tmp:
        model.save(str(tmp))
        write_model_record(tmp, {"method": "surrogate", "pooling": "mean", "config": _settings(config),
                                 "pairs": model_ref(Path(pairs_path).resolve(), out_dir, data_root())})
    shutil.rmtree(work, ignore_errors=True)
    return SurrogateResult(out_dir, len(data), int(out.global_step), time.perf_counter() - t0,
                           float(out.training_loss) if out.training_loss is not None else None, resume)


def _settings(section: SurrogateSection) -> dict:
    """What trains the surrogate: the section without its catalog ``name`` (nor the supervised step after it)."""
    return section.model_dump(mode="json", exclude={"name", "supervised"})


def run_supervised(cfg, surrogate: dict, *, run_id: str | None = None) -> dict:
    """Sun et al.'s supervised row (their Table 2): fine-tune the trained surrogate on ``surrogate.supervised``'s
    gold-scored pairs (STS-B train) with ``CosineSimilarityLoss`` on score / ``score_max``, as
    sentence-transformers' STS-B example; registered as ``<name>-supervised`` (method 'surrogate').

    Args:
        cfg: a :class:`~defsentflow.scoring.config.HarvestConfig` whose surrogate has a ``supervised`` section.
        surrogate: :func:`run_surrogate`'s result (its ``key`` and ``path``).
    """
    sup, scfg = cfg.surrogate.supervised, cfg.surrogate
    cat = Catalog(cfg.root)
    gold_file = resolve_input_path(sup.file, "surrogate.supervised.file")
    settings = sup.model_dump(mode="json")
    key = combine_hashes(["surrogate-supervised", surrogate["key"], hash_path(gold_file), hash_config(settings),
                          code_version()])
    model_id = named_model_id(f"{scfg.name}-supervised", key)
    final = root_place(cat.root, "surrogate_models", key)
    art = cat.artifact(key)
    if art is not None:
        return {"model_id": model_id, "key": key, "path": str(final), "cached": True, **(art.get("meta") or {})}
    s1, s2, scores = read_scored_pairs(gold_file, columns=sup.file_columns, score_column=sup.score_column)
    pairs = write_parquet(pa.table({"s1": s1, "s2": s2, "score": (scores / sup.score_max).astype(np.float32)}),
                          root_place(cat.root, "surrogate_checkpoints", f"{key}.gold-pairs.parquet"))
    config = SurrogateSection.model_validate({**_settings(scfg), "name": scfg.name, "base_encoder": surrogate["path"],
                                              "loss": "cosine", "labels": "none", "shuffle_labels": False,
                                              "max_pairs": None, "epochs": sup.epochs, "batch_size": sup.batch_size,
                                              "lr": sup.lr, "warmup_ratio": sup.warmup_ratio})
    res = train_surrogate(pairs, final, config, work_dir=root_place(cat.root, "surrogate_checkpoints", key))
    meta = {"n_pairs": res.n_pairs, "steps": res.steps, "seconds": res.seconds, "train_loss": res.train_loss,
            "surrogate": surrogate["model_id"], "gold_file": str(gold_file)}
    with cat.transaction() as con:
        cat.register_artifact(key, "model", final, hash_path(final), name=model_id,
                              input_hashes={"surrogate": surrogate["key"]}, config=settings, run_id=run_id, meta=meta,
                              con=con)
    cat.register_model(model_id, final, base_model=surrogate["path"], method="surrogate", pooling="mean",
                       run_id=run_id, artifact_key=key, meta=meta)
    return {"model_id": model_id, "key": key, "path": str(final), "cached": False, **meta}


def run_surrogate(cfg, pairs: dict, *, run_id: str | None = None) -> dict:
    """Train (or find) the surrogate for a harvest's pairs and register it (catalog ``models``, method 'surrogate').

    Args:
        cfg: a :class:`~defsentflow.scoring.config.HarvestConfig`.
        pairs: the harvest's reference (``{"key", "path", ...}``).
    """
    scfg = cfg.surrogate
    cat = Catalog(cfg.root)
    key = combine_hashes(["surrogate", pairs["key"], model_content_hash(resolve_model_path(scfg.base_encoder)),
                          hash_config(_settings(scfg)), code_version()])
    model_id = named_model_id(cfg.surrogate.name, key)
    final = root_place(cat.root, "surrogate_models", key)
    art = cat.artifact(key)
    if art is not None:
        out = {"model_id": model_id, "key": key, "path": str(final), "cached": True, **(art.get("meta") or {})}
        return {**out, "supervised": run_supervised(cfg, out, run_id=run_id)} if scfg.supervised else out
    res = train_surrogate(pairs["path"], final, scfg, work_dir=root_place(cat.root, "surrogate_checkpoints", key))
    meta = {"n_pairs": res.n_pairs, "steps": res.steps, "seconds": res.seconds, "train_loss": res.train_loss,
            "resumed_from": res.resumed_from, "pairs_key": pairs["key"]}
    with cat.transaction() as con:
        cat.register_artifact(key, "model", final, hash_path(final), name=model_id, input_hashes={"pairs": pairs["key"]},
                              config=_settings(scfg), run_id=run_id, meta=meta, con=con)
    cat.register_model(model_id, final, base_model=scfg.base_encoder, method="surrogate", pooling="mean", run_id=run_id,
                       artifact_key=key, meta=meta)
    out = {"model_id": model_id, "key": key, "path": str(final), "cached": False, **meta}
    return {**out, "supervised": run_supervised(cfg, out, run_id=run_id)} if scfg.supervised else out


def run_surrogate_config(cfg, *, run_id: str | None = None) -> dict:
    """Make sure the config's harvest exists (cached stages return at once), then train the surrogate."""
    harvest = run_harvest(cfg, run_id=run_id)
    return run_surrogate(cfg, {"key": harvest["key"], "path": harvest["path"]}, run_id=run_id)
