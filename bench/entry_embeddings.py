"""Entry-embedding build: the shared encoding engine vs the research code's per-entry loop.

    python bench/entry_embeddings.py [--entries 5000] [--slow-entries 1000] [--repeats 3]

Both ways use the bundled all-MiniLM-L6-v2 in fp32 on the same (entry, definition) pairs read
from OEWN. The research code runs one forward pass per entry with that entry's definitions padded
to their longest; ``build_entry_embeddings`` encodes every distinct definition once in
length-sorted batches and averages per entry. The slow way is timed on a random subset of the
entries (``--slow-entries``; the whole set with ``--slow-entries 0``) and the throughputs are
compared in entries per second; the outputs are compared on that subset. Repeats alternate the
two ways so a machine shared with other jobs slows both alike; medians are reported. The last
line is ``ratio=<fast/slow>``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import numpy as np
import torch

DEFAULT_YAML = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "oewn" / "yaml"
# Synset files read for the benchmark (a few files suffice for 5,000 entries; parsing all of
# OEWN takes longer than the benchmark itself).
SYNSET_FILES = ("noun.artifact.yaml", "noun.act.yaml", "verb.motion.yaml", "verb.contact.yaml", "noun.animal.yaml",
                "adj.all.yaml")


def load_oewn_pairs(yaml_dir: str | os.PathLike = DEFAULT_YAML, n_entries: int = 5000, *,
                    files: tuple[str, ...] = SYNSET_FILES, seed: int = 0) -> list[tuple[str, str]]:
    """(lower-cased lemma, definition) pairs of ``n_entries`` random entries from OEWN synset files.

    Every definition of a chosen entry found in ``files`` is kept, so polysemous entries have
    several definitions, as in the full dictionary.
    """
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    defs: dict[str, list[str]] = {}
    for name in files:
        path = Path(yaml_dir) / name
        if not path.is_file():
            raise FileNotFoundError(f"OEWN synset file not found: {path}")
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)
        for synset in data.values():
            for definition in synset.get("definition", [])[:1]:
                for member in synset.get("members", []):
                    defs.setdefault(member.lower(), []).append(definition)
    names = sorted(defs)
    if len(names) < n_entries:
        raise ValueError(f"only {len(names)} entries in {files}")
    chosen = np.random.default_rng(seed).choice(len(names), size=n_entries, replace=False)
    return [(names[i], d) for i in sorted(chosen) for d in defs[names[i]]]


def research_entry_embeddings(enc, groups: dict[str, list[str]], pooling: str, max_length: int = 64) -> dict[str, np.ndarray]:
    """One forward pass per entry, its definitions padded to the entry's longest (the research code's way)."""
    out = {}
    enc.model.eval()
    with torch.no_grad():
        for entry, definitions in groups.items():
            b = enc.tokenizer(definitions, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
            hidden = enc.model(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).last_hidden_state
            if pooling == "cls":
                v = hidden[:, 0]
            else:
                m = b["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                v = (hidden * m).sum(1) / m.sum(1)
            out[entry] = v.mean(0).numpy()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--yaml-dir", default=str(DEFAULT_YAML))
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--entries", type=int, default=5000)
    ap.add_argument("--slow-entries", type=int, default=1000, help="entries timed the slow way (0: all)")
    ap.add_argument("--encoding", choices=("ac", "amp"), default="amp")
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()

    from defsentflow.encoders import load_encoder
    from defsentflow.training import build_entry_embeddings

    os.environ.setdefault("DEFSENTFLOW_QUIET", "1")
    pairs = load_oewn_pairs(args.yaml_dir, args.entries)
    entries, definitions = [e for e, _ in pairs], [d for _, d in pairs]
    groups: dict[str, list[str]] = {}
    for e, d in pairs:
        groups.setdefault(e, []).append(d)
    n_slow = len(groups) if args.slow_entries <= 0 else min(args.slow_entries, len(groups))
    pick = np.random.default_rng(1).choice(len(groups), size=n_slow, replace=False)
    names = list(groups)
    subset = {names[i]: groups[names[i]] for i in sorted(pick)}
    enc = load_encoder(args.model, device="cpu")
    pooling = "cls" if args.encoding == "ac" else "mean"
    print(f"{len(groups)} entries, {len(pairs)} pairs, {len(set(definitions))} distinct definitions; "
          f"slow way on {n_slow} random entries ({sum(map(len, subset.values()))} pairs); "
          f"torch threads {torch.get_num_threads()}; load average {os.getloadavg()[0]:.2f}")
    research_entry_embeddings(enc, dict(list(subset.items())[:20]), pooling)  # warm-up
    fast_rates, slow_rates = [], []
    em = None
    for r in range(args.repeats):
        t = time.perf_counter()
        em = build_entry_embeddings(enc, entries, definitions, args.encoding, batch_size=args.batch_size)
        fast_rates.append(len(groups) / (time.perf_counter() - t))
        t = time.perf_counter()
        slow = research_entry_embeddings(enc, subset, pooling)
        slow_rates.append(n_slow / (time.perf_counter() - t))
        print(f"  repeat {r + 1}: fast {fast_rates[-1]:.1f} entries/s, slow {slow_rates[-1]:.1f} entries/s, "
              f"load {os.getloadavg()[0]:.2f}")
    row = em.row_of
    diff = max(float(np.abs(em.matrix[row[e]] - v).max()) for e, v in slow.items())
    fast, slow_rate = statistics.median(fast_rates), statistics.median(slow_rates)
    print(f"build_entry_embeddings ({args.encoding}, batch {args.batch_size}): {fast:.1f} entries/s "
          f"({fast * len(pairs) / len(groups):.1f} pairs/s), median of {args.repeats}")
    slow_pairs = sum(map(len, subset.values()))
    print(f"research per-entry loop: {slow_rate:.1f} entries/s ({slow_rate * slow_pairs / n_slow:.1f} pairs/s), "
          f"median of {args.repeats}, on {n_slow} entries")
    print(f"max |fast - slow| over the {n_slow} entries: {diff:.2e} ({'OK' if diff <= 1e-5 else 'MISMATCH'} at 1e-5)")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    print(f"ratio={fast / slow_rate:.2f}")


if __name__ == "__main__":
    main()
