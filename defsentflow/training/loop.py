"""The one training loop (:func:`run_loop`) and the DefSent/DefSent+ entry point (:func:`train_encoder`).

:func:`run_loop` knows nothing about definitions: it takes a module to checkpoint, a loss
function, a per-epoch batch plan and a collate function, so a masked-LM pretraining stage can
reuse it unchanged. It checkpoints every ``checkpoint_every`` optimizer steps (and when told to
stop early); a run killed at any point and called again resumes from the latest checkpoint and
ends with exactly the weights of an uninterrupted run.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from defsentflow.encoders.loading import autocast_context, model_content_hash, pick_device
from defsentflow.fanout import at_checkpoint
from defsentflow.model.adapters import prepare_backbone
from defsentflow.model.export import base_has_normalize, save_encoder
from defsentflow.progress import progress
from defsentflow.storage.hashing import code_version, combine_hashes, hash_bytes, hash_config, hash_text
from defsentflow.training.batching import length_bucketed_batches, tokenize_examples
from defsentflow.training.checkpoint import (
    capture_rng,
    load_checkpoint,
    remove_checkpoint,
    restore_rng,
    save_checkpoint,
    seed_everything,
)
from defsentflow.training.config import TrainConfig, sampled_negatives
from defsentflow.training.heads import DefinitionClassifier

__all__ = ["LoopOutcome", "TrainResult", "build_optimizer", "clip_gradients", "defsent_tokenizer", "linear_schedule",
           "run_loop", "train_encoder"]

log = logging.getLogger(__name__)

# Settings that do not change the numbers a run computes: a checkpoint stays valid across them.
_RESUME_NEUTRAL = ("checkpoint_every", "device")


@dataclass
class LoopOutcome:
    """What :func:`run_loop` did. ``steps`` and ``losses`` count from the run's start, across resumes."""

    steps: int
    losses: list[float]
    examples: int  # examples processed by this call
    seconds: float  # wall time of this call's steps
    total_seconds: float  # across all calls of this run
    completed: bool
    resumed_from: int | None = None


@dataclass
class TrainResult:
    """The result of :func:`train_encoder`; ``model_dir`` holds the model only when ``meta['completed']``."""

    model_dir: Path
    steps: int
    final_loss: float
    seconds: float
    definitions_per_s: float
    meta: dict[str, Any] = field(default_factory=dict)


def linear_schedule(total_steps: int, warmup_ratio: float, decay: bool) -> Callable[[int], float]:
    """Learning-rate factor: linear warm-up from 0 over ``warmup_ratio`` of the steps (``step / W``
    with ``W = total_steps * warmup_ratio``, as DefSent's reference ``lr_scheduler.py``: the first step
    has rate 0), then linear decay to 0 or constant."""
    warmup = total_steps * warmup_ratio

    def factor(step: int) -> float:
        if step < warmup:
            return float(step) / max(1.0, warmup)
        if not decay:
            return 1.0
        return max(0.0, float(total_steps - step) / float(max(1.0, total_steps - warmup)))

    return factor


def build_optimizer(config: TrainConfig, model: nn.Module) -> torch.optim.Optimizer:
    """Adam for DefSent (as the paper), AdamW with eps 1e-6 for DefSent+; frozen parameters are left out.

    With ``weight_decay`` > 0, biases and LayerNorm weights are not decayed.
    """
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (no_decay if name.endswith("bias") or "LayerNorm" in name or "layer_norm" in name else decay).append(p)
    groups = [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    # The fused kernels update each parameter in one pass instead of ~10 (a tenth of a MiniLM
    # step on a CPU); they exist for CPU and CUDA tensors.
    params = decay + no_decay
    fused = bool(params) and all(p.device.type in ("cpu", "cuda") and p.is_floating_point() for p in params)
    if config.method == "defsent":
        return torch.optim.Adam(groups, lr=config.lr, fused=fused or None)
    return torch.optim.AdamW(groups, lr=config.lr, eps=1e-6, fused=fused or None)


def clip_gradients(params: list[torch.Tensor], max_norm: float) -> None:
    """``clip_grad_norm_`` with the same result, minus its multiply-by-one when nothing is clipped.

    torch multiplies every gradient by the clamped coefficient to avoid a device sync; on a CPU
    there is no sync to avoid, and the multiply is a pass over all gradients (the word-embedding
    gradient alone is half a MiniLM) that changes nothing when the coefficient is 1.
    """
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return
    if grads[0].device.type != "cpu":
        torch.nn.utils.clip_grad_norm_(params, max_norm)
        return
    total = torch.nn.utils.get_total_norm(grads, 2.0)
    if float(max_norm / (total + 1e-6)) < 1.0:
        torch.nn.utils.clip_grads_with_norm_(params, max_norm, total)


def run_loop(model: nn.Module, loss_fn: Callable[[dict[str, torch.Tensor]], torch.Tensor], *,
             plan: Callable[[int], list[np.ndarray]], collate: Callable[[np.ndarray], dict[str, torch.Tensor]],
             optimizer: torch.optim.Optimizer, scheduler: torch.optim.lr_scheduler.LRScheduler, epochs: int,
             device: torch.device, checkpoint_dir: str | os.PathLike, checkpoint_every: int,
             grad_clip: float | None = None, autocast: str = "none", stop_after_steps: int | None = None,
             fingerprint: str = "", desc: str = "training") -> LoopOutcome:
    """Train ``model`` for ``epochs`` epochs, resuming from ``checkpoint_dir`` when a checkpoint is there.

    Args:
        model: the module whose state is checkpointed (its trainable parameters are in ``optimizer``).
        loss_fn: batch -> scalar loss; it may use modules outside ``model`` (frozen heads).
        plan: epoch -> the epoch's batches as index arrays; must be deterministic.
        collate: index array -> batch of tensors on ``device``.
        stop_after_steps: stop (after writing a checkpoint) once this many optimizer steps are done.
        fingerprint: identifies the run; a checkpoint with another fingerprint is an error.
    """
    epoch, position, step, losses, prior_seconds = 0, 0, 0, [], 0.0
    resumed_from = None
    ckpt = load_checkpoint(checkpoint_dir, map_location=device)
    if ckpt is not None:
        if ckpt.get("fingerprint") != fingerprint:
            raise ValueError(f"{Path(checkpoint_dir)}: the checkpoint belongs to another run (different config, "
                             "model or data); remove it or use another checkpoint directory")
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        scheduler.load_state_dict(ckpt["scheduler"])
        restore_rng(ckpt["rng"])
        epoch, position, step = int(ckpt["epoch"]), int(ckpt["position"]), int(ckpt["step"])
        losses, prior_seconds = list(ckpt["losses"]), float(ckpt["seconds"])
        resumed_from = step
        log.info("resuming at step %d (epoch %d, batch %d)", step, epoch, position)
    scaler = torch.amp.GradScaler(device.type, enabled=autocast == "fp16" and device.type == "cuda")
    if ckpt is not None and "scaler" in ckpt:
        scaler.load_state_dict(ckpt["scaler"])
    params = [p for g in optimizer.param_groups for p in g["params"]]
    total_steps = sum(len(plan(e)) for e in range(epochs))
    examples, elapsed = 0, 0.0

    def checkpoint(epoch_: int, position_: int) -> None:
        save_checkpoint(checkpoint_dir, {
            "fingerprint": fingerprint, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(), "scaler": scaler.state_dict(), "rng": capture_rng(),
            "epoch": epoch_, "position": position_, "step": step, "losses": losses,
            "seconds": prior_seconds + elapsed,
        })

    model.train()
    bar = progress(total=total_steps, initial=step, desc=desc, unit="step")
    stopped = False
    while epoch < epochs and not stopped:
        batches = plan(epoch)
        while position < len(batches):
            if stop_after_steps is not None and step >= stop_after_steps:
                stopped = True
                break
            t0 = time.perf_counter()
            idx = batches[position]
            batch = collate(idx)
            with autocast_context(device, autocast):  # type: ignore[arg-type]
                loss = loss_fn(batch)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            if grad_clip is not None:
                scaler.unscale_(optimizer)
                clip_gradients(params, grad_clip)
            scaler.step(optimizer)
            scaler.update()
            scheduler.step()
            losses.append(float(loss.detach()))
            step, position = step + 1, position + 1
            examples += len(idx)
            elapsed += time.perf_counter() - t0
            bar.update(1)
            bar.set_postfix(loss=f"{losses[-1]:.3f}", refresh=False)
            if position == len(batches):
                epoch, position = epoch + 1, 0
            if step % checkpoint_every == 0:
                checkpoint(epoch, position)
                at_checkpoint(step)  # a cancelled command's call stops here; the next one resumes from it
            if position == 0:
                break
    bar.close()
    if stopped:
        checkpoint(epoch, position)
    return LoopOutcome(steps=step, losses=losses, examples=examples, seconds=elapsed,
                       total_seconds=prior_seconds + elapsed, completed=epoch >= epochs, resumed_from=resumed_from)


def _matrix_dtype(config: TrainConfig, device: torch.device) -> torch.dtype:
    """The dtype the entry-matrix product runs in under the run's autocast (so nothing is cast per step)."""
    if config.autocast == "bf16":
        return torch.bfloat16
    return torch.float16 if config.autocast == "fp16" and device.type == "cuda" else torch.float32


def _fingerprint(config: TrainConfig, base_model: str, definitions: Sequence[str], targets: np.ndarray,
                 entry_matrix: np.ndarray | None) -> str:
    cfg = {k: v for k, v in config.model_dump().items() if k not in _RESUME_NEUTRAL}
    parts = [hash_config(cfg), model_content_hash(base_model), hash_text("\x1e".join(definitions)),
             hash_bytes(np.ascontiguousarray(targets, dtype=np.int64).tobytes())]
    if entry_matrix is not None:
        # the buffer itself (a memory map stays one): the same hash as its bytes, without copying them
        parts.append(hash_bytes(np.ascontiguousarray(entry_matrix, dtype=np.float32)))
    return combine_hashes(parts)


def defsent_tokenizer(tokenizer, path: str | os.PathLike):
    """The tokenizer DefSent trains (and saves) with: DefSent's reference loads every tokenizer with
    ``add_prefix_space=True`` (``experiments/configs/tokenizer/default.yaml``), so a byte-level BPE
    (RoBERTa) reads a definition's first word with its leading space (``Ġword``), as its targets
    (:func:`~defsentflow.training.targets.single_token_targets`); WordPiece has no such option."""
    if getattr(tokenizer, "add_prefix_space", None) is not False or tokenizer.tokenize(" a") == tokenizer.tokenize("a"):
        return tokenizer  # already reads a leading space, or ignores one (WordPiece, SentencePiece)
    from transformers import AutoTokenizer  # lazy: transformers takes seconds to load

    return AutoTokenizer.from_pretrained(path, add_prefix_space=True)


def train_encoder(config: TrainConfig, base_model: str | os.PathLike, definitions: Sequence[str],
                  targets: Sequence[int], *, out_dir: str | os.PathLike, checkpoint_dir: str | os.PathLike,
                  entry_matrix: np.ndarray | None = None, stop_after_steps: int | None = None,
                  record: dict[str, Any] | None = None) -> TrainResult:
    """Train a sentence encoder with DefSent or DefSent+ and save it to ``out_dir``.

    Args:
        config: hyper-parameters; ``config.method`` picks the head.
        base_model: checkpoint to start from (directory, hub id or ``minilm``).
        definitions: one text per training example.
        targets: DefSent: vocabulary ids of single-token entries (see
            :func:`~defsentflow.model.targets.single_token_targets`); DefSent+: rows of
            ``entry_matrix``.
        out_dir: where the final model goes (Hugging Face + sentence-transformers layout,
            pooler kept, ``defsentflow.json`` with the run's metadata), written atomically.
        checkpoint_dir: resumable checkpoint; a run finds and resumes its own checkpoint there
            and removes it once the final model is written.
        entry_matrix: DefSent+'s frozen head ``[n_entries, hidden]``; None for DefSent.
        stop_after_steps: stop after this many optimizer steps (counted from the run's start),
            leaving a checkpoint and no model; call again to finish.
        record: fields of the model record (``defsentflow.json``) the caller decides, portable
            references included (:func:`~defsentflow.training.candidate.plan_training`); they
            override what training records (``base_model`` above all: the name, not the path).

    Example:
        >>> cfg = paper_config("defsent_plus", variant="a")
        >>> res = train_encoder(cfg, "minilm", defs, rows, out_dir="m", checkpoint_dir="ck", entry_matrix=em.matrix)
    """
    definitions = list(definitions)
    labels = np.asarray(targets, dtype=np.int64)
    if not definitions:
        raise ValueError("no training examples")
    if len(labels) != len(definitions):
        raise ValueError(f"{len(definitions)} definitions but {len(labels)} targets")
    defsent = config.method == "defsent"
    if defsent and entry_matrix is not None:
        raise ValueError("DefSent predicts vocabulary ids: pass entry_matrix=None")
    if not defsent and entry_matrix is None:
        raise ValueError("DefSent+ needs entry_matrix (see encode_entry_matrix)")
    if entry_matrix is not None and not isinstance(entry_matrix, np.ndarray):
        entry_matrix = np.asarray(entry_matrix, dtype=np.float32)
    use_pooler = config.use_pooler and not defsent  # DefSent feeds the pooled vector straight to the MLM head
    device = pick_device(config.device)
    base = str(base_model)
    seed_everything(config.seed)
    prepared = prepare_backbone(base, device=device, word_head=defsent, use_pooler=use_pooler,
                                untrained_pooler=config.untrained_pooler, mlm_dense_from=config.mlm_dense_from)
    backbone, tokenizer = prepared.backbone, prepared.encoder.tokenizer
    if defsent:
        tokenizer = defsent_tokenizer(tokenizer, prepared.encoder.path)
    frozen: list[str] = []
    if defsent and getattr(backbone, "embeddings", None) is not None:
        # As the DefSent reference code: the token embeddings stay frozen with the prediction layer.
        backbone.embeddings.requires_grad_(False)
        frozen.append("embeddings")
    if defsent:
        n_targets = int(prepared.word_head(torch.zeros(1, prepared.encoder.hidden_size, device=device)).shape[-1])
        matrix = None
    else:
        shape = tuple(entry_matrix.shape)
        if len(shape) != 2 or shape[1] != prepared.encoder.hidden_size:
            raise ValueError(f"entry_matrix must be [n_entries, {prepared.encoder.hidden_size}], got {shape}")
        n_targets, matrix = shape[0], entry_matrix  # prepared (normalised, compute dtype) once by the classifier
    bad = np.flatnonzero((labels < 0) | (labels >= n_targets))
    if len(bad):
        raise ValueError(f"target {labels[bad[0]]} (record {bad[0]}) is outside [0, {n_targets}); "
                         f"{len(bad)} bad targets in all")
    classifier = DefinitionClassifier(
        backbone, pooling=config.pooling, pooler_dense=prepared.pooler_dense() if use_pooler else None,
        activation=prepared.pooler_activation, word_head=prepared.word_head, matrix=matrix,
        temperature=config.temperature, normalize=config.normalize_logits, matrix_dtype=_matrix_dtype(config, device),
        sampled=None if defsent else sampled_negatives(config.negatives),
        generator=torch.Generator().manual_seed(config.seed))
    examples = tokenize_examples(tokenizer, definitions, labels, config.max_length)
    lengths = examples.lengths

    def plan(epoch: int) -> list[np.ndarray]:
        return length_bucketed_batches(lengths, config.batch_size, seed=config.seed, epoch=epoch,
                                       chunk_batches=config.bucket_batches)

    total_steps = config.epochs * len(plan(0))
    optimizer = build_optimizer(config, backbone)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, linear_schedule(total_steps, config.warmup_ratio, config.resolved_lr_decay == "linear"))
    outcome = run_loop(
        backbone, classifier.loss, plan=plan, collate=lambda idx: examples.collate(idx, device),
        optimizer=optimizer, scheduler=scheduler, epochs=config.epochs, device=device,
        checkpoint_dir=checkpoint_dir, checkpoint_every=config.checkpoint_every, grad_clip=config.grad_clip,
        autocast=config.autocast, stop_after_steps=stop_after_steps,
        fingerprint=_fingerprint(config, base, definitions, labels, entry_matrix), desc=config.method)
    tail = outcome.losses[-max(1, min(100, len(outcome.losses) // 10)):]
    final_loss = float(np.mean(tail)) if tail else float("nan")
    meta = {
        "method": config.method, "pooling": config.pooling, "use_pooler": use_pooler,
        "decoder": prepared.decoder if defsent else "entry_matrix",
        "pooler_activation": prepared.pooler_activation, "pooler_source": prepared.pooler_source,
        "frozen": frozen, "family": prepared.encoder.family, "base_model": base,
        "base_model_hash": model_content_hash(base), "config": config.model_dump(),
        "n_examples": len(definitions), "n_targets": n_targets, "steps": outcome.steps,
        "final_loss": final_loss, "losses": outcome.losses, "train_seconds": outcome.total_seconds,
        "completed": outcome.completed, "code_version": code_version(),
    }
    meta.update(record or {})
    if outcome.completed:  # ST length: the evaluation's; Normalize kept when the base model had it
        save_encoder(backbone, tokenizer, out_dir, pooling=config.pooling, meta=meta,
                     normalize=base_has_normalize(base))
        remove_checkpoint(checkpoint_dir)
    rate = outcome.examples / outcome.seconds if outcome.seconds > 0 else 0.0
    return TrainResult(model_dir=Path(out_dir), steps=outcome.steps, final_loss=final_loss, seconds=outcome.seconds,
                       definitions_per_s=rate, meta=meta)
