"""Training throughput: ``train_encoder`` (length-bucketed batches) vs a naive loop, DefSent+ on MiniLM.

    python bench/train_throughput.py [--pairs 10000] [--steps 30] [--repeats 3] [--autocast none] [--threads N]

Both sides train the bundled all-MiniLM-L6-v2 with the same DefSent+ objective (mean pooling,
pooler, frozen entry matrix, AdamW, clipping), batch 32, on 10,000 OEWN (entry, definition)
pairs. The naive loop draws random batches and pads every batch to the dataset's longest
definition (the research code's fixed-length padding). A whole epoch on 2 shared cores takes
too long to run twice, so each side runs ``--steps`` optimizer steps per repeat, the repeats
alternate the sides, and the epoch time is extrapolated from the median rate. The entry matrix
is random (its values do not change the cost of a step). The ratio is the median of the
per-repeat ratios. On a shared 2-core machine ``--threads 1`` gives figures that busy
neighbours disturb much less. The last line is ``ratio=<ours/naive>``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from entry_embeddings import DEFAULT_YAML, load_oewn_pairs  # noqa: E402


def naive_steps(classifier, optimizer, ids: list[list[int]], labels: np.ndarray, width: int, *, steps: int,
                batch_size: int, pad_id: int, rng: np.random.Generator, grad_clip: float = 1.0) -> float:
    """``steps`` steps on random batches padded to ``width``; returns definitions/s."""
    params = [p for g in optimizer.param_groups for p in g["params"]]
    classifier.train()
    t = time.perf_counter()
    for _ in range(steps):
        idx = rng.choice(len(ids), size=batch_size, replace=False)
        input_ids = torch.full((batch_size, width), pad_id, dtype=torch.long)
        mask = torch.zeros((batch_size, width), dtype=torch.long)
        for row, i in enumerate(idx):
            input_ids[row, : len(ids[i])] = torch.tensor(ids[i])
            mask[row, : len(ids[i])] = 1
        batch = {"input_ids": input_ids, "attention_mask": mask, "labels": torch.as_tensor(labels[idx])}
        loss = classifier.loss(batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, grad_clip)
        optimizer.step()
    return steps * batch_size / (time.perf_counter() - t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--yaml-dir", default=str(DEFAULT_YAML))
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--pairs", type=int, default=10_000)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--steps", type=int, default=30, help="optimizer steps per side per repeat")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--autocast", choices=("none", "bf16"), default="none", help="for our loop")
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: leave as is)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    os.environ.setdefault("DEFSENTFLOW_QUIET", "1")
    from defsentflow.encoders import resolve_model_path
    from defsentflow.training import DefinitionClassifier, TrainConfig, build_optimizer, prepare_backbone, train_encoder
    from defsentflow.training.batching import tokenize_examples

    pairs = load_oewn_pairs(args.yaml_dir, args.pairs)[: args.pairs]
    if len(pairs) < args.pairs:
        raise SystemExit(f"only {len(pairs)} pairs")
    entries = list(dict.fromkeys(e for e, _ in pairs))
    row = {e: i for i, e in enumerate(entries)}
    definitions = [d for _, d in pairs]
    targets = np.array([row[e] for e, _ in pairs])
    base = resolve_model_path(args.model)
    matrix = np.random.default_rng(0).normal(size=(len(entries), 384)).astype(np.float32)
    cfg = TrainConfig(method="defsent_plus", pooling="mean", batch_size=args.batch_size, device="cpu",
                      autocast=args.autocast, checkpoint_every=10**9)

    # The naive side: same model, objective and optimizer; fixed-width random batches.
    prepared = prepare_backbone(base, device=torch.device("cpu"), word_head=False, use_pooler=True)
    naive_model = DefinitionClassifier(prepared.backbone, pooling="mean", pooler_dense=prepared.pooler_dense(),
                                       activation=prepared.adapter.pooler_activation, matrix=torch.from_numpy(matrix))
    naive_opt = build_optimizer(cfg, prepared.backbone)
    ex = tokenize_examples(prepared.encoder.tokenizer, definitions, targets, cfg.max_length)
    width = int(ex.lengths.max())
    rng = np.random.default_rng(0)
    print(f"{len(pairs)} pairs, {len(entries)} entries, mean length {ex.lengths.mean():.1f} tokens, longest {width}; "
          f"torch threads {torch.get_num_threads()}; load average {os.getloadavg()[0]:.2f}")

    ours, naive = [], []
    with tempfile.TemporaryDirectory() as tmp:
        ck, out = Path(tmp) / "ck", Path(tmp) / "out"
        train_encoder(cfg, base, definitions, targets, out_dir=out, checkpoint_dir=ck, entry_matrix=matrix,
                      stop_after_steps=2)  # warm-up (first steps allocate)
        naive_steps(naive_model, naive_opt, ex.ids, targets, width, steps=2, batch_size=args.batch_size,
                    pad_id=ex.pad_id, rng=rng)
        for r in range(args.repeats):
            res = train_encoder(cfg, base, definitions, targets, out_dir=out, checkpoint_dir=ck, entry_matrix=matrix,
                                stop_after_steps=2 + (r + 1) * args.steps)
            ours.append(res.definitions_per_s)
            naive.append(naive_steps(naive_model, naive_opt, ex.ids, targets, width, steps=args.steps,
                                     batch_size=args.batch_size, pad_id=ex.pad_id, rng=rng))
            print(f"  repeat {r + 1}: ours {ours[-1]:.1f} definitions/s, naive {naive[-1]:.1f} definitions/s, "
                  f"ratio {ours[-1] / naive[-1]:.2f}; load {os.getloadavg()[0]:.2f}")
    a, b = statistics.median(ours), statistics.median(naive)
    print(f"train_encoder (length-bucketed, autocast {args.autocast}): {a:.1f} definitions/s -> one epoch of "
          f"{len(pairs)} pairs ~ {len(pairs) / a / 60:.1f} min (extrapolated from {args.repeats}x{args.steps} steps)")
    print(f"naive loop (random batches padded to {width}): {b:.1f} definitions/s -> one epoch ~ "
          f"{len(pairs) / b / 60:.1f} min")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    print(f"ratio={statistics.median(x / y for x, y in zip(ours, naive)):.2f}")


if __name__ == "__main__":
    main()
