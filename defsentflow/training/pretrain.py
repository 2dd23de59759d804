"""Masked-LM pretraining of a raw BERT encoder: the positive control for DefSent / DefSent+.

The DefSent papers' large gains are on raw pretrained encoders (BERT, RoBERTa). This stage builds
one here: a small BERT with random weights is trained by masked-language modelling on corpus
sentences (and, optionally, a dictionary's usage examples, never its glosses), then saved with
its MLM head (``BertForMaskedLM``, safetensors) plus the sentence-transformers files (mean
pooling), so ``AutoModelForMaskedLM``, ``AutoModel`` and ``SentenceTransformer`` all load it.

Masking is transformers' own 80/10/10 (``DataCollatorForLanguageModeling.torch_mask_tokens``,
on the global torch RNG, so the checkpoint's RNG state replays it exactly); the MLM head runs
only at the masked positions. Training reuses the project's one loop
(:func:`~defsentflow.training.loop.run_loop`): resumable mid-epoch checkpoints, progress bar.

The model lives under ``<data root>/models/pretrain/<key>``; the key hashes the corpus and
dictionary artifact keys, the tokenizer, the config and the code version, so an unchanged
re-run is skipped.

:func:`run_pretrain` is the stage's one sequencer. It takes its step executor as an argument
(:class:`PretrainSteps`): the CLI's local mode runs the library's functions, the ``pretrain`` flow
hands in the same functions wrapped as Prefect tasks, so both write the same catalog rows.

Example:
    >>> from defsentflow.training.pretrain_config import PretrainSection
    >>> section = PretrainSection(corpora=[{"name": "bbc", "paths": ["../shared/data/corpus/bbc"]}], max_steps=300)
    >>> out = run_pretrain(section)
    >>> out.model_id, out.final_loss
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from defsentflow.config_tools import resolve_path
from defsentflow.corpus import ingest_corpus, load_sentences, resolve_corpus
from defsentflow.dictionary import load_examples, resolve_dictionary
from defsentflow.encoders.encoding import pad_batch, tokenize_sorted
from defsentflow.encoders.loading import model_construction, model_content_hash, pick_device, resolve_model_path
from defsentflow.model.export import save_encoder
from defsentflow.model.ids import named_model_id
from defsentflow.model.record import read_model_record
from defsentflow.storage import Catalog, hash_path, root_place
from defsentflow.storage.locks import artifact_lock
from defsentflow.training.batching import length_bucketed_batches
from defsentflow.training.checkpoint import remove_checkpoint, seed_everything
from defsentflow.training.config import TrainConfig
from defsentflow.training.loop import build_optimizer, linear_schedule, run_loop
from defsentflow.training.pretrain_config import PretrainSection

__all__ = [
    "LOCAL",
    "PretrainOutcome",
    "PretrainResult",
    "PretrainSteps",
    "PretrainTexts",
    "build_mlm_model",
    "corpus_sources",
    "gather_texts",
    "ingest_corpus_step",
    "mask_batch",
    "mlm_loss",
    "pretrain_key",
    "pretrain_mlm",
    "run_pretrain",
    "train_or_find",
    "warmup_ratio",
]

log = logging.getLogger(__name__)

@dataclass
class PretrainResult:
    """What :func:`pretrain_mlm` did; ``model_dir`` holds the model only when ``completed``."""

    model_dir: Path
    steps: int
    total_steps: int
    final_loss: float
    first_loss: float
    losses: list[float]
    seconds: float  # this call's training time
    total_seconds: float  # across resumes
    completed: bool
    resumed_from: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)


# -- model, masking, loss --------------------------------------------------------------------------
def build_mlm_model(section: PretrainSection, tokenizer: Any) -> torch.nn.Module:
    """A randomly initialised ``BertForMaskedLM`` of ``section.architecture``, sized for ``tokenizer``
    (seed torch first)."""
    from transformers import (  # lazy: transformers takes seconds to load; only code that loads a model needs it
        BertConfig,
        BertForMaskedLM,
    )

    config = section.architecture
    cfg = BertConfig(vocab_size=len(tokenizer), hidden_size=config.hidden, num_hidden_layers=config.layers,
                     num_attention_heads=config.heads, intermediate_size=config.intermediate,
                     max_position_embeddings=config.max_position_embeddings, hidden_dropout_prob=config.dropout,
                     attention_probs_dropout_prob=config.dropout,
                     pad_token_id=tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0)
    with model_construction():
        return BertForMaskedLM(cfg)


def _masker(tokenizer: Any, mask_prob: float) -> Any:
    from transformers import (
        DataCollatorForLanguageModeling,  # lazy: transformers takes seconds to load; only code that loads a model needs it
    )

    # seed=None: masks come from the global torch RNG, which the checkpoint captures and restores.
    return DataCollatorForLanguageModeling(tokenizer=tokenizer, mlm=True, mlm_probability=mask_prob,
                                           mask_replace_prob=0.8, random_replace_prob=0.1, seed=None)


def warmup_ratio(warmup_steps: int, total_steps: int) -> float:
    """The warm-up share that makes :func:`~defsentflow.training.loop.linear_schedule` warm up over
    exactly ``warmup_steps`` steps: its ``W = total * ratio`` is then ``warmup_steps``, so steps
    0..W-1 rise from rate 0 (``step / W``) and step W is the first at the full rate, then linear decay
    to 0. (Until issue 42 this added 0.5 to W, a leftover of an earlier schedule that put step W at
    W / (W + 0.5) of the rate.)"""
    warmup = min(warmup_steps, total_steps)
    return warmup / total_steps if warmup and total_steps else 0.0


def mask_batch(masker: Any, seqs: Sequence[Sequence[int]], pad_id: int, special_ids: torch.Tensor,
               device: torch.device) -> dict[str, torch.Tensor]:
    """Pad ``seqs`` to their longest and mask them 80/10/10; ``labels`` is -100 off the masked positions.

    Special tokens ([CLS], [SEP], padding) are never masked.
    """
    batch = pad_batch(seqs, pad_id, torch.device("cpu"))
    special = torch.isin(batch["input_ids"], special_ids)
    input_ids, labels = masker.torch_mask_tokens(batch["input_ids"].clone(), special_tokens_mask=special)
    return {"input_ids": input_ids.to(device), "attention_mask": batch["attention_mask"].to(device),
            "labels": labels.to(device)}


def mlm_loss(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """Cross-entropy of the MLM head, computed only at the masked positions.

    A batch with no masked token (possible only for tiny batches) gives a zero loss that still
    reaches every parameter, so the loop's step stays well defined.
    """
    hidden = model.bert(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                        return_dict=True).last_hidden_state
    labels = batch["labels"]
    selected = labels != -100
    if not bool(selected.any()):
        return hidden.sum() * 0.0
    logits = model.cls(hidden[selected])
    return F.cross_entropy(logits.float(), labels[selected])


def _plan(lengths: np.ndarray, config: PretrainSection):
    """The per-epoch batch plan, cut so that the whole run has ``max_steps`` steps at most."""
    def full(epoch: int) -> list[np.ndarray]:
        return length_bucketed_batches(lengths, config.batch_size, seed=config.seed, epoch=epoch,
                                       chunk_batches=config.bucket_batches)

    per_epoch = len(full(0))  # the same for every epoch: only the order changes
    total = config.epochs * per_epoch
    if config.max_steps is not None:
        total = min(total, config.max_steps)
    epochs = math.ceil(total / per_epoch)

    def plan(epoch: int) -> list[np.ndarray]:
        return full(epoch)[: max(0, total - epoch * per_epoch)]

    return plan, epochs, total


def pretrain_mlm(config: PretrainSection, texts: Sequence[str], tokenizer: str | os.PathLike, *,
                 out_dir: str | os.PathLike, checkpoint_dir: str | os.PathLike, stop_after_steps: int | None = None,
                 meta: dict[str, Any] | None = None) -> PretrainResult:
    """Pretrain a fresh BERT by masked-LM on ``texts``; save it (MLM head kept) to ``out_dir``.

    Args:
        config: the section's architecture and optimisation (its corpora are not read here).
        texts: training sentences (one example each, truncated to ``config.architecture.max_length`` tokens).
        tokenizer: tokenizer directory, hub id or ``minilm`` (the bundled MiniLM tokenizer).
        out_dir: the final model (Hugging Face ``BertForMaskedLM`` + tokenizer + sentence-transformers
            modules with mean pooling + ``defsentflow.json``), written atomically.
        checkpoint_dir: resumable checkpoint (latest only); removed once the model is written.
        stop_after_steps: stop after this many optimizer steps (counted from the run's start),
            leaving a checkpoint and no model; call again to finish.
        meta: extra entries for ``defsentflow.json``.

    Example:
        >>> section = PretrainSection(corpora=[{"name": "bbc"}], max_steps=50,
        ...                           architecture={"hidden": 64, "layers": 2, "heads": 2, "intermediate": 128})
        >>> res = pretrain_mlm(section, sentences, "minilm", out_dir="raw", checkpoint_dir="ck")
    """
    from transformers import (
        AutoTokenizer,  # lazy: transformers takes seconds to load; only code that loads a model needs it
    )

    from defsentflow.storage.hashing import (  # lazy: a load-time import cycle or a name this module also defines
        code_version,
        combine_hashes,
        hash_config,
        hash_text,
    )

    texts = [t for t in texts if t and t.strip()]
    if not texts:
        raise ValueError("no training text")
    tok_path = resolve_model_path(tokenizer)
    tok = AutoTokenizer.from_pretrained(tok_path)
    if tok.mask_token_id is None:
        raise ValueError(f"tokenizer {tokenizer!r} has no mask token")
    device = pick_device(config.device)
    seed_everything(config.seed)
    model = build_mlm_model(config, tok).to(device)
    ids, _ = tokenize_sorted(tok, texts, config.architecture.max_length)
    lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))
    plan, epochs, total_steps = _plan(lengths, config)
    pad_id = tok.pad_token_id if tok.pad_token_id is not None else 0
    special = torch.as_tensor(sorted(set(tok.all_special_ids)), dtype=torch.long)
    masker = _masker(tok, config.mask_prob)

    # BERT's own optimizer, which is DefSent+'s: AdamW (eps 1e-6), no decay on biases and LayerNorm.
    optimizer = build_optimizer(TrainConfig(method="defsent_plus", lr=config.lr, weight_decay=config.weight_decay),
                                model)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, linear_schedule(total_steps, warmup_ratio(config.warmup_steps, total_steps), decay=True))
    fingerprint = combine_hashes(["pretrain", hash_config(config.identity()), model_content_hash(tok_path),
                                  hash_text("\x1e".join(texts))])
    outcome = run_loop(
        model, lambda batch: mlm_loss(model, batch), plan=plan,
        collate=lambda idx: mask_batch(masker, [ids[i] for i in idx], pad_id, special, device),
        optimizer=optimizer, scheduler=scheduler, epochs=epochs, device=device, checkpoint_dir=checkpoint_dir,
        checkpoint_every=config.checkpoint_every, grad_clip=config.grad_clip, autocast=config.autocast,  # type: ignore[arg-type]
        stop_after_steps=stop_after_steps, fingerprint=fingerprint, desc="pretrain")
    losses = outcome.losses
    tail = losses[-max(1, min(100, len(losses) // 10)):]
    head = losses[: max(1, min(100, len(losses) // 10))]
    final_loss = float(np.mean(tail)) if tail else float("nan")
    first_loss = float(np.mean(head)) if head else float("nan")
    info = {
        "method": "pretrain", "objective": "mlm", "pooling": "mean", "use_pooler": False, "pooler": None,
        "family": "bert", "tokenizer": str(tokenizer), "config": config.settings(),
        "n_texts": len(texts), "tokens": int(lengths.sum()), "steps": outcome.steps, "total_steps": total_steps,
        "epochs_run": epochs, "final_loss": final_loss, "first_loss": first_loss, "losses": losses,
        "train_seconds": outcome.total_seconds, "completed": outcome.completed, "code_version": code_version(),
        **(meta or {}),
    }
    if outcome.completed:
        model.eval()
        save_encoder(model, tok, out_dir, pooling="mean", meta=info)
        remove_checkpoint(checkpoint_dir)
    return PretrainResult(model_dir=Path(out_dir), steps=outcome.steps, total_steps=total_steps, final_loss=final_loss,
                          first_loss=first_loss, losses=losses, seconds=outcome.seconds,
                          total_seconds=outcome.total_seconds, completed=outcome.completed,
                          resumed_from=outcome.resumed_from, meta=info)


# -- inputs: corpora and usage examples ---------------------------------------------------------------
@dataclass(frozen=True)
class PretrainTexts:
    """The training text: de-duplicated, in source order, with per-source counts."""

    texts: list[str]
    counts: dict[str, int]
    duplicates: int


def corpus_sources(section: PretrainSection) -> list[tuple[str, list[Path]]]:
    """``(name, resolved paths)`` per corpus of a :class:`PretrainSection`; no paths: use the catalog's.

    Raises:
        FileNotFoundError: a path is missing (relative paths: cwd, then the repository root).
    """
    return [(c.name, [resolve_path(p) for p in c.paths]) for c in section.corpora]


def gather_texts(corpus_keys: Sequence[str], dictionary: str | None = None,
                 splits: Sequence[str] = ("train", "dev", "test"), *,
                 root: str | os.PathLike | None = None) -> PretrainTexts:
    """Every sentence of the corpora, then the dictionary's usage examples (never its definitions).

    Texts are stripped; empty ones and exact repeats are dropped (first occurrence kept).
    """
    seen: set[str] = set()
    texts: list[str] = []
    counts: dict[str, int] = {}
    duplicates = 0

    def add(source: str, items: Sequence[str]) -> None:
        nonlocal duplicates
        n = 0
        for t in items:
            t = (t or "").strip()
            if not t:
                continue
            if t in seen:
                duplicates += 1
                continue
            seen.add(t)
            texts.append(t)
            n += 1
        counts[source] = counts.get(source, 0) + n

    for key in corpus_keys:
        name = resolve_corpus(key, root)["name"]
        add(f"corpus:{name}", load_sentences(key, root=root).column("text").to_pylist())
    if dictionary is not None:
        import pyarrow as pa  # lazy: pyarrow loads only where it is used
        import pyarrow.compute as pc  # lazy: pyarrow loads only where it is used

        table = load_examples(dictionary, root=root)
        table = table.filter(pc.is_in(table.column("split"), value_set=pa.array(list(splits), pa.string())))
        add(f"examples:{dictionary}", table.column("example").to_pylist())
    return PretrainTexts(texts=texts, counts=counts, duplicates=duplicates)


def pretrain_key(corpus_keys: Sequence[str], dictionary_key: str | None, splits: Sequence[str], tokenizer_hash: str,
                 config: PretrainSection) -> str:
    """The model's content key: input artifact keys + tokenizer + config + code version."""
    from defsentflow.storage import (  # lazy: a load-time import cycle or a name this module also defines
        code_version,
        combine_hashes,
        hash_config,
    )

    return combine_hashes(["pretrain", *corpus_keys, dictionary_key or "-", ",".join(sorted(splits)) if dictionary_key else "-",
                           tokenizer_hash, hash_config(config.identity()), code_version()])


# -- the stage -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PretrainOutcome:
    """The stage's result: the registered model (``model_dir`` empty while not completed)."""

    model_id: str
    model_dir: str
    key: str
    cached: bool
    completed: bool
    steps: int
    total_steps: int
    final_loss: float
    first_loss: float
    seconds: float
    n_texts: int
    counts: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PretrainOutcome:
        return cls(**{f.name: d[f.name] for f in dataclasses.fields(cls) if f.name in d})


def _from_meta(model_id: str, path: Path, key: str, meta: dict[str, Any]) -> PretrainOutcome:
    return PretrainOutcome(model_id=model_id, model_dir=str(path), key=key, cached=True, completed=True,
                           steps=int(meta.get("steps", 0)), total_steps=int(meta.get("total_steps", 0)),
                           final_loss=float(meta.get("final_loss", float("nan"))),
                           first_loss=float(meta.get("first_loss", float("nan"))),
                           seconds=float(meta.get("train_seconds", 0.0)), n_texts=int(meta.get("n_texts", 0)),
                           counts=dict(meta.get("counts", {})))


def ingest_corpus_step(paths: Sequence[str | os.PathLike], name: str, *, root: str | os.PathLike | None = None,
                       run_id: str | None = None) -> str:
    """Ingest one corpus from its paths (a cache hit when unchanged); its artifact key."""
    return ingest_corpus(list(paths), name, root=root, run_id=run_id).key


def train_or_find(section: PretrainSection, corpus_keys: Sequence[str], dictionary_key: str | None, tokenizer_hash: str,
                  *, root: str | os.PathLike | None = None, run_id: str | None = None,
                  stop_after_steps: int | None = None) -> PretrainOutcome:
    """Pretrain the model of these inputs, or find it by its content key; register it in the catalog.

    A killed training resumes from its checkpoint; a model written but never registered is registered.
    """
    cat = Catalog(root)
    key = pretrain_key(corpus_keys, dictionary_key, section.dictionary_splits, tokenizer_hash, section)
    model_id = named_model_id(section.name, key)
    out = root_place(cat.root, "pretrain_models", key)
    ckpt = root_place(cat.root, "pretrain_checkpoints", key)
    with artifact_lock(key, root):  # a second run of the same key waits, then finds the model
        found = cat.artifact(key)
        if found is not None:
            cat.register_model(model_id, found["path"], base_model=None, method="pretrain", pooling="mean",
                               run_id=run_id, artifact_key=key, meta=found.get("meta"))
            return _from_meta(model_id, out, key, found.get("meta") or {})
        data = gather_texts(corpus_keys, section.dictionary, section.dictionary_splits, root=root)
        inputs = {"corpora": list(corpus_keys), "dictionary": dictionary_key, "tokenizer": tokenizer_hash}
        finished = read_model_record(out)
        if finished is not None:  # finished but never registered (killed in between)
            info = finished.to_dict()
            res = None
        else:
            res = pretrain_mlm(section, data.texts, section.tokenizer, out_dir=out, checkpoint_dir=ckpt,
                               stop_after_steps=stop_after_steps,
                               meta={"inputs": inputs, "counts": data.counts, "duplicates": data.duplicates,
                                     "model_id": model_id})
            info = res.meta
        if res is not None and not res.completed:
            return PretrainOutcome(model_id=model_id, model_dir="", key=key, cached=False, completed=False,
                                   steps=res.steps, total_steps=res.total_steps, final_loss=res.final_loss,
                                   first_loss=res.first_loss, seconds=res.seconds, n_texts=len(data.texts),
                                   counts=data.counts)
        small = {k: info[k] for k in ("steps", "total_steps", "final_loss", "first_loss", "train_seconds",
                                      "n_texts", "counts", "tokens") if k in info}
        with cat.transaction() as con:
            cat.register_artifact(key, "model", out, hash_path(out), name=model_id, input_hashes=inputs,
                                  config=section.model_dump(mode="json"), run_id=run_id, meta=small, con=con)
        cat.register_model(model_id, out, base_model=None, method="pretrain", pooling="mean", run_id=run_id,
                           artifact_key=key, meta=small)
        shutil.rmtree(ckpt, ignore_errors=True)
        return dataclasses.replace(_from_meta(model_id, out, key, small), cached=False,
                                   seconds=res.seconds if res is not None else 0.0)


@dataclass(frozen=True)
class PretrainSteps:
    """The stage's pieces, each a callable: the library's own functions here, Prefect tasks in the
    ``pretrain`` flow (``tasks/pretrain.py``). :func:`run_pretrain` calls them in its one order.

    Signatures: ``ingest_corpus(paths, name, *, root, run_id) -> corpus key``;
    ``train(section, corpus_keys, dictionary_key, tokenizer_hash, *, root, run_id, stop_after_steps)
    -> PretrainOutcome``.
    """

    ingest_corpus: Callable[..., str] = ingest_corpus_step
    train: Callable[..., PretrainOutcome] = train_or_find


LOCAL = PretrainSteps()


def run_pretrain(section: PretrainSection, *, run_id: str | None = None, root: str | os.PathLike | None = None,
                 stop_after_steps: int | None = None, steps: PretrainSteps = LOCAL) -> PretrainOutcome:
    """The pretraining stage's one sequencer: ingest the corpora if needed, pretrain (or find) the
    model, register it in the catalog.

    Args:
        section: the ``pretrain:`` config section.
        run_id: write a ``runs`` row under this id and, once the model exists, a ``pretrain`` stage
            row keyed by its artifact key (``best-model --stage pretrain`` follows it); None: the
            caller keeps the run record.
        stop_after_steps: leave a checkpoint after this many steps and return ``completed=False``.
        steps: the executor of the pieces (:class:`PretrainSteps`; the ``pretrain`` flow passes Prefect tasks).

    Returns:
        A :class:`PretrainOutcome`; ``cached`` when the model was already registered.
    """
    from defsentflow.storage import (  # lazy: a load-time import cycle or a name this module also defines
        Catalog,
        hash_config,
    )

    t0 = time.perf_counter()
    cat = Catalog(root)
    with cat.recorded_run("pretrain", run_id, config=section.model_dump(mode="json"),
                          config_hash=hash_config(section)) as run:
        dict_key = resolve_dictionary(section.dictionary, root)[0] if section.dictionary else None  # fail fast
        keys = [steps.ingest_corpus(paths, name, root=root, run_id=run_id) if paths
                else resolve_corpus(name, root)["artifact_key"] for name, paths in corpus_sources(section)]
        tok_hash = model_content_hash(resolve_model_path(section.tokenizer))
        outcome = steps.train(section, keys, dict_key, tok_hash, root=root, run_id=run_id,
                              stop_after_steps=stop_after_steps)
        if run_id is not None and outcome.completed:
            cat.record_stage(run_id, "pretrain", "cached" if outcome.cached else "completed", cache_key=outcome.key,
                             seconds=None if outcome.cached else outcome.seconds, note=outcome.model_id)
        run.status = "completed" if outcome.completed else "stopped"
        run.note = (f"pretrained {outcome.model_id}" if outcome.completed
                    else f"stopped at step {outcome.steps}/{outcome.total_steps}")
    log.info("pretrain %s: %s in %.1fs", outcome.model_id, "cached" if outcome.cached else f"{outcome.steps} steps",
             time.perf_counter() - t0)
    return outcome
