"""Resumable training checkpoints: one file, written atomically, only the latest kept.

A checkpoint holds everything a resumed run needs to continue exactly as if it had never
stopped: model, optimizer and scheduler state, the torch/numpy/python RNG states (dropout and
any data-side randomness) and the data position. It is loaded with ``weights_only=True``, so a
checkpoint file cannot run code.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import numpy as np
import torch

from defsentflow.storage.atomic import atomic_path, clean_stale_temporaries

__all__ = [
    "CHECKPOINT_NAME",
    "capture_rng",
    "load_checkpoint",
    "remove_checkpoint",
    "restore_rng",
    "save_checkpoint",
    "seed_everything",
]

CHECKPOINT_NAME = "checkpoint.pt"


def seed_everything(seed: int) -> None:
    """Seed python, numpy and torch (all devices)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def capture_rng() -> dict[str, Any]:
    """The RNG states as tensors and plain Python values (safe for ``weights_only`` loading)."""
    kind, keys, pos, has_gauss, cached = np.random.get_state()
    state: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "numpy": {"kind": kind, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
                  "has_gauss": int(has_gauss), "cached": float(cached)},
        "python": random.getstate(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    npst = state["numpy"]
    keys = npst["keys"].numpy().astype(np.uint32)
    np.random.set_state((npst["kind"], keys, npst["pos"], npst["has_gauss"], npst["cached"]))
    py = state["python"]
    random.setstate((py[0], tuple(py[1]), py[2]))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(directory: str | os.PathLike, state: dict[str, Any]) -> Path:
    """Write ``state`` to ``directory/checkpoint.pt`` atomically, replacing the previous one."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    clean_stale_temporaries(directory)
    final = directory / CHECKPOINT_NAME
    with atomic_path(final) as tmp:
        torch.save(state, tmp)
    return final


def load_checkpoint(directory: str | os.PathLike, map_location: torch.device | str = "cpu") -> dict[str, Any] | None:
    """The latest checkpoint in ``directory``, or None when there is none."""
    path = Path(directory) / CHECKPOINT_NAME
    if not path.is_file():
        return None
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # a checkpoint is renamed into place whole, so this is real corruption
        raise ValueError(f"{path}: unreadable checkpoint ({exc}); remove it to start over") from exc


def remove_checkpoint(directory: str | os.PathLike) -> None:
    path = Path(directory) / CHECKPOINT_NAME
    if path.exists():
        path.unlink()
