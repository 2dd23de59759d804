"""Entry-embedding build: the shared encoding engine vs the research code's per-entry loop.

    python bench/entry_embeddings.py [--entries 5000] [--slow-entries 300] [--repeats 3] [--threads N]

Both ways use the bundled all-MiniLM-L6-v2 in fp32 on the same (entry, definition) pairs read
from OEWN. The research code (DefSent+'s GenerateEntryEmbeddings.py) runs one forward pass per
entry with that entry's definitions padded to their longest, using the slow Python tokenizer and
without ``torch.no_grad`` (the model is only put in eval mode); it is reproduced here as is.
A stricter per-entry baseline (fast tokenizer, ``torch.inference_mode``) is timed beside it.
``encode_entry_matrix`` encodes every distinct definition once in length-sorted batches and
averages per entry. The per-entry loops are timed on a random subset of the entries
(``--slow-entries``; all with 0) and throughputs are compared in entries per second; outputs are
compared on that subset. Repeats alternate the ways so a machine shared with other jobs slows
them alike; medians are reported, and the ratio is the median of the per-repeat ratios (each
repeat's ways ran under about the same load). On a shared 2-core machine a busy neighbour
stalls the per-entry loops' many tiny multi-threaded calls far more than the large batches;
``--threads 1`` gives figures that the neighbours disturb much less. The last line is
``ratio=<fast / research>``.
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
    """(lower-cased lemma, definition) pairs of ``n_entries`` entries from OEWN synset files.

    Entries are the members of random synsets, taken whole, so synonyms that share a definition
    are sampled together as in the full dictionary (OEWN: 185,104 pairs, 107,525 definitions);
    random lemmas would almost never share one. Every definition of a chosen entry found in
    ``files`` is kept, so polysemous entries have several definitions.
    """
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    defs: dict[str, list[str]] = {}
    synsets: list[list[str]] = []
    for name in files:
        path = Path(yaml_dir) / name
        if not path.is_file():
            raise FileNotFoundError(f"OEWN synset file not found: {path}")
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)
        for synset in data.values():
            members = [m.lower() for m in synset.get("members", [])]
            for definition in synset.get("definition", [])[:1]:
                synsets.append(members)
                for member in members:
                    defs.setdefault(member, []).append(definition)
    if len(defs) < n_entries:
        raise ValueError(f"only {len(defs)} entries in {files}")
    chosen: dict[str, None] = {}
    for i in np.random.default_rng(seed).permutation(len(synsets)):
        chosen.update(dict.fromkeys(synsets[i]))
        if len(chosen) >= n_entries:
            break
    names = sorted(chosen)[:n_entries]
    return [(e, d) for e in names for d in defs[e]]


def research_entry_embeddings(model, tokenizer, groups: dict[str, list[str]], pooling: str, *,
                              grad: bool = True) -> dict[str, np.ndarray]:
    """One forward pass per entry, its definitions padded to the entry's longest (the research code's way).

    ``grad=True`` keeps autograd on, as the research code does; a single definition is encoded
    without padding, several are padded to their longest.
    """
    out = {}
    model.eval()
    with torch.set_grad_enabled(grad):
        for entry, definitions in groups.items():
            b = tokenizer(definitions, padding=True, return_tensors="pt")
            hidden = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).last_hidden_state
            if pooling == "cls":
                v = hidden[:, 0]
            else:
                m = b["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                v = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
            out[entry] = np.asarray(v.mean(0).tolist(), dtype=np.float32)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--yaml-dir", default=str(DEFAULT_YAML))
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--entries", type=int, default=5000)
    ap.add_argument("--slow-entries", type=int, default=300, help="entries timed the per-entry ways (0: all)")
    ap.add_argument("--encoding", choices=("ac", "amp"), default="amp")
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: leave as is)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    from defsentflow.encoders import load_encoder
    from defsentflow.training import encode_entry_matrix

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
    from transformers import AutoTokenizer

    slow_tokenizer = AutoTokenizer.from_pretrained(enc.path, use_fast=False)
    pooling = "cls" if args.encoding == "ac" else "mean"
    slow_pairs = sum(map(len, subset.values()))
    print(f"{len(groups)} entries, {len(pairs)} pairs, {len(set(definitions))} distinct definitions; "
          f"per-entry loops on {n_slow} random entries ({slow_pairs} pairs); "
          f"torch threads {torch.get_num_threads()}; load average {os.getloadavg()[0]:.2f}")
    ways = {
        "fast": lambda: encode_entry_matrix(enc, entries, definitions, args.encoding, batch_size=args.batch_size),
        "research": lambda: research_entry_embeddings(enc.model, slow_tokenizer, subset, pooling, grad=True),
        "per-entry": lambda: research_entry_embeddings(enc.model, enc.tokenizer, subset, pooling, grad=False),
    }
    n_of = {"fast": len(groups), "research": n_slow, "per-entry": n_slow}
    research_entry_embeddings(enc.model, slow_tokenizer, dict(list(subset.items())[:20]), pooling)  # warm-up
    rates: dict[str, list[float]] = {k: [] for k in ways}
    results = {}
    for r in range(args.repeats):
        for name, fn in ways.items():
            t = time.perf_counter()
            results[name] = fn()
            rates[name].append(n_of[name] / (time.perf_counter() - t))
        print(f"  repeat {r + 1}: " + ", ".join(f"{k} {v[-1]:.1f} entries/s" for k, v in rates.items())
              + f"; ratio {rates['fast'][-1] / rates['research'][-1]:.2f}; load {os.getloadavg()[0]:.2f}")
    em, row = results["fast"], results["fast"].row_of
    diff = max(float(np.abs(em.matrix[row[e]] - v).max()) for e, v in results["research"].items())
    med = {k: statistics.median(v) for k, v in rates.items()}
    per_pair = {"fast": len(pairs) / len(groups), "research": slow_pairs / n_slow, "per-entry": slow_pairs / n_slow}
    labels = {"fast": f"encode_entry_matrix ({args.encoding}, batch {args.batch_size})",
              "research": "research code (per entry, slow tokenizer, autograd on)",
              "per-entry": "per entry, fast tokenizer, inference mode"}
    for k in ways:
        print(f"{labels[k]}: {med[k]:.1f} entries/s ({med[k] * per_pair[k]:.1f} pairs/s), median of {args.repeats}"
              + ("" if k == "fast" else f", on {n_slow} entries"))
    print(f"max |fast - research| over the {n_slow} entries: {diff:.2e} ({'OK' if diff <= 1e-5 else 'MISMATCH'} at 1e-5)")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    def ratio(other: str) -> float:
        return statistics.median(f / o for f, o in zip(rates["fast"], rates[other]))

    print(f"ratio_vs_per_entry_inference={ratio('per-entry'):.2f}")
    print(f"ratio={ratio('research'):.2f}")


if __name__ == "__main__":
    main()
