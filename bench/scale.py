"""Scale: how each stage's cost grows with the dictionary, at 10k, 100k and 1M entries.

    python bench/scale.py [--sizes 10000,100000,1000000] [--out bench/scale] [--parts ingest,matrix,train,revdict,serve]

The bench writes a synthetic wiktextract JSONL dictionary built from the glosses of the embedded
OEWN sample (entry ``<lemma>-<i>``, 1-2 senses, so de-duplication keeps every entry; about 1.45
definitions per entry) and measures, each part in a fresh process (peak RSS is the process's):

- ingest: ``ingest_dictionary`` of that file (the streamed reader and the out-of-core merge),
  seconds and peak RSS;
- matrix: the entry-matrix build with MiniLM, definitions/s and peak RSS, on a sample of
  ``--matrix-sample`` definitions (the full build at 100k+ would take far past 10 minutes on CPU;
  the output says so), and the float32 per-entry merge of N synthetic definition vectors;
- train: one DefSent+ step (MiniLM, batch 32, normalised full softmax over N entries, AdamW) on a
  random ``[N, 384]`` matrix kept as a memory-mapped ``.npy``: median step ms, the median time of
  the step's two products with the matrix (logits, gradient to the pooled vector) measured in the
  same process, peak anonymous RSS (sampled every 5 ms) and, at the largest N, the step with
  ``negatives: sampled 65536``;
- revdict: exact (flat) and IVF faiss indexes over synthetic clustered unit vectors of dimension
  384: build seconds, query p95 (one query at a time, search only; the query's encoding is timed
  separately once), IVF ``nprobe`` tuned on 500 queries and recall@10 against exact on 500
  held-out ones;
- serve (at the largest N): the same kind of vectors as an IVF index registered for the bundled
  MiniLM (:func:`defsentflow.revdict.index.index_from_vectors`), then 130 look-ups through
  ``defsentflow serve``'s ``/api/revdict`` from one client (the first 30 warm it up): p50 and p95,
  query encoding included.

It prints one table and writes ``<out>.png`` (cost against N) and ``<out>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "defsentflow" / "sample" / "dictionary" / "oewn-sample.jsonl"
DIM = 384


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class AnonPeak:
    """Peak anonymous RSS (``RssAnon``), sampled in a thread: file-backed pages (a memory map) do not count."""

    def __init__(self, every: float = 0.005):
        self.peak, self.every, self._stop = 0, every, threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def now() -> int:
        for line in open("/proc/self/status"):
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
        return 0

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.now())
            time.sleep(self.every)

    def __enter__(self) -> AnonPeak:
        self.peak = self.now()
        self._t.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._t.join()
        self.peak = max(self.peak, self.now())


def write_synthetic(path: Path, n: int) -> int:
    """A wiktextract JSONL file of ``n`` entries from the sample's glosses; returns the definitions written."""
    glosses, lemmas = [], []
    for line in SAMPLE.read_text().splitlines():
        obj = json.loads(line)
        glosses.append(obj["definition"])
        lemmas.append(obj["entry"])
    rng = np.random.default_rng(0)
    n_defs = 0
    with open(path, "w") as fh:
        for i in range(n):
            k = 1 + int(rng.random() < 0.45)
            senses = [{"glosses": [glosses[int(j)]]} for j in rng.choice(len(glosses), size=k, replace=False)]
            n_defs += k
            fh.write(json.dumps({"word": f"{lemmas[i % len(lemmas)]}-{i}", "pos": "noun", "lang_code": "en",
                                 "senses": senses}) + "\n")
    return n_defs


def part_ingest(n: int, work: Path) -> dict:
    from defsentflow.dictionary import DictionaryConfig, ingest_dictionary

    src = work / f"wikt-{n}.jsonl"
    if not src.exists():
        write_synthetic(src, n)
    cfg = DictionaryConfig(name=f"scale{n}", sources=[{"kind": "wiktextract", "paths": [str(src)]}])
    t = time.perf_counter()
    res = ingest_dictionary(cfg, root=work / f"home-{n}")
    return {"ingest_s": time.perf_counter() - t, "ingest_rss_mb": _peak_mb(), "entries": res.summary["entries"],
            "definitions": res.summary["definitions"]}


def part_matrix(n: int, work: Path, sample: int) -> dict:
    import torch

    from defsentflow.encoders import load_encoder
    from defsentflow.training.entry_shards import build_entry_matrix_sharded, sum_entry_vectors

    lines = SAMPLE.read_text().splitlines()
    defs = [json.loads(x)["definition"] for x in lines]
    rng = np.random.default_rng(1)
    k = min(sample, n)
    pick = rng.choice(len(defs), size=k, replace=len(defs) < k)
    texts = [f"{defs[int(j)]} ({i})" for i, j in enumerate(pick)]  # distinct texts: each one is encoded
    entries = [f"e{i // 2}" for i in range(k)]
    torch.set_num_threads(2)
    enc = load_encoder("minilm", device="cpu")
    t = time.perf_counter()
    build_entry_matrix_sharded(enc, entries, texts, "amp", shards=1, cache_dir=work / f"shards-{n}")
    rate = k / (time.perf_counter() - t)
    build_rss = _peak_mb()
    # the merge at full size: N * 1.45 definition vectors (a memory map) summed per entry in float32
    n_defs = int(n * 1.45)
    vec_path = work / f"vectors-{n}.npy"
    vecs = np.lib.format.open_memmap(vec_path, mode="w+", dtype=np.float32, shape=(n_defs, DIM))
    for s in range(0, n_defs, 100_000):
        vecs[s:s + 100_000] = rng.standard_normal((min(100_000, n_defs - s), DIM), dtype=np.float32)
    vecs.flush()
    del vecs
    mapped = np.load(vec_path, mmap_mode="r")
    names = [f"e{i % n}" for i in range(n_defs)]
    with AnonPeak() as peak:
        t = time.perf_counter()
        sum_entry_vectors(names, np.arange(n_defs), lambda r: mapped[r], DIM, out=work / f"matrix-{n}.npy")
        merge_s = time.perf_counter() - t
    vec_path.unlink()
    (work / f"matrix-{n}.npy").unlink()
    return {"matrix_defs_per_s": rate, "matrix_sample": k, "matrix_rss_mb": build_rss,
            "merge_s": merge_s, "merge_anon_mb": peak.peak / 2**20,
            "matrix_full_minutes": n_defs / rate / 60}


def _entry_matrix_file(path: Path, n: int) -> np.ndarray:
    if not path.exists():
        rng = np.random.default_rng(2)
        m = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, DIM))
        for s in range(0, n, 100_000):
            m[s:s + 100_000] = rng.standard_normal((min(100_000, n - s), DIM), dtype=np.float32)
        m.flush()
        del m
    return np.load(path, mmap_mode="r")


def part_train(n: int, work: Path, negatives: str, steps: int = 10) -> dict:
    import torch
    import torch.nn.functional as F

    from defsentflow.model.adapters import prepare_backbone
    from defsentflow.training.config import sampled_negatives
    from defsentflow.training.heads import DefinitionClassifier

    torch.set_num_threads(2)
    torch.manual_seed(0)
    device = torch.device("cpu")
    prepared = prepare_backbone("minilm", device=device, word_head=False, use_pooler=True)
    tok = prepared.encoder.tokenizer
    defs = [json.loads(x)["definition"] for x in SAMPLE.read_text().splitlines()[:32 * steps]]
    matrix = _entry_matrix_file(work / f"entries-{n}.npy", n)
    before = AnonPeak.now()
    with AnonPeak() as peak:
        clf = DefinitionClassifier(prepared.backbone, pooling="mean", pooler_dense=prepared.pooler_dense(),
                                   activation=prepared.adapter.pooler_activation, matrix=matrix, normalize=True,
                                   temperature=0.05, sampled=sampled_negatives(negatives),
                                   generator=torch.Generator().manual_seed(0))
        opt = torch.optim.AdamW([p for p in prepared.backbone.parameters() if p.requires_grad], lr=2e-5, eps=1e-6)
        rng = np.random.default_rng(3)
        times, prods = [], []
        probe = F.normalize(torch.randn(32, DIM), dim=-1)
        for s in range(steps):
            b = tok(defs[32 * s:32 * (s + 1)], padding=True, truncation=True, max_length=64, return_tensors="pt")
            batch = {"input_ids": b["input_ids"], "attention_mask": b["attention_mask"],
                     "labels": torch.as_tensor(rng.integers(0, n, 32))}
            t = time.perf_counter()
            loss = clf.loss(batch)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            times.append(time.perf_counter() - t)
            # the step's two matrix products alone, right after it (the same machine state): logits
            # h M^T and the gradient to the pooled vector g M
            t = time.perf_counter()
            with torch.no_grad():
                _ = (probe @ clf.matrix.T) @ clf.matrix
            prods.append(time.perf_counter() - t)
    return {"step_ms": 1000 * statistics.median(times[1:]), "products_ms": 1000 * statistics.median(prods[1:]),
            "train_anon_mb": peak.peak / 2**20, "train_anon_above_start_mb": (peak.peak - before) / 2**20,
            "matrix_mb": n * DIM * 4 / 2**20, "negatives": negatives}


def _clustered(n: int, rng: np.random.Generator, centres: np.ndarray, noise: float = 0.7) -> np.ndarray:
    x = centres[rng.integers(0, len(centres), n)] + noise * rng.standard_normal((n, DIM), dtype=np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _clustered_file(path: Path, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` clustered unit vectors (1,000 clusters) written to ``path`` block by block, memory-mapped."""
    centres = rng.standard_normal((1000, DIM), dtype=np.float32)
    m = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(n, DIM))
    for s in range(0, n, 100_000):
        m[s:s + 100_000] = _clustered(min(100_000, n - s), rng, centres)
    m.flush()
    del m
    return np.load(path, mmap_mode="r")


def part_revdict(n: int, work: Path) -> dict:
    import faiss

    from defsentflow.revdict.ann import make_index, recall_at_k, tune_nprobe

    faiss.omp_set_num_threads(2)
    rng = np.random.default_rng(4)
    path = work / f"revdict-{n}.npy"
    matrix = _clustered_file(path, n, rng)
    queries = lambda k: np.ascontiguousarray(  # noqa: E731 (a held-out query: an entry's vector, perturbed)
        matrix[np.sort(rng.choice(n, k, replace=False))] + 0.05 * rng.standard_normal((k, DIM), dtype=np.float32))
    tune_q, held_out = queries(500), queries(500)

    def p95(index) -> float:
        lat = []
        for q in held_out[:100]:
            t = time.perf_counter()
            index.search(q[None, :], 10)
            lat.append(time.perf_counter() - t)
        return 1000 * float(np.percentile(lat, 95))

    t = time.perf_counter()
    flat = make_index(matrix, "flat")
    flat_s = time.perf_counter() - t
    flat_p95 = p95(flat)
    t = time.perf_counter()
    ivf = make_index(matrix, "ivf")
    ivf_s = time.perf_counter() - t
    nprobe, tuned = tune_nprobe(flat, ivf, tune_q, start=4)
    recall = recall_at_k(flat, ivf, held_out)
    ivf_p95 = p95(ivf)
    path.unlink()
    return {"flat_build_s": flat_s, "flat_p95_ms": flat_p95, "ivf_build_s": ivf_s, "ivf_p95_ms": ivf_p95,
            "nprobe": nprobe, "recall_tuning": tuned, "recall_held_out": recall, "revdict_rss_mb": _peak_mb()}


def part_serve(n: int, work: Path) -> dict:
    """Look-ups through ``defsentflow serve`` (one client, warm, query encoding included) against an
    IVF index over N synthetic entry vectors registered for the bundled MiniLM."""
    import socket
    import urllib.parse
    import urllib.request

    from defsentflow.revdict.index import index_from_vectors

    rng = np.random.default_rng(5)
    path = work / f"serve-{n}.npy"
    vectors = _clustered_file(path, n, rng)
    probes = vectors[np.sort(rng.choice(n, 500, replace=False))] + 0.05 * rng.standard_normal((500, DIM), dtype=np.float32)
    home = work / f"serve-home-{n}"
    t = time.perf_counter()
    idx = index_from_vectors("minilm", [f"entry-{i}" for i in range(n)], vectors, name=f"synthetic-{n}",
                             index_kind="ivf", probes=probes, root=home)
    build_s, breadth = time.perf_counter() - t, idx.meta.get("breadth")
    del idx
    path.unlink()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "DEFSENTFLOW_HOME": str(home)}
    server = subprocess.Popen([sys.executable, "-m", "defsentflow.cli", "serve", "--port", str(port), "--threads", "2"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                with urllib.request.urlopen(f"{base}/api/models", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("defsentflow serve did not come up") from None
                time.sleep(0.5)
        defs = [json.loads(x)["definition"] for x in SAMPLE.read_text().splitlines()[:130]]
        lat = []
        for i, q in enumerate(defs):
            url = f"{base}/api/revdict?" + urllib.parse.urlencode({"q": q, "model": "minilm", "k": 10})
            t = time.perf_counter()
            with urllib.request.urlopen(url, timeout=600) as r:
                hits = json.loads(r.read())
            if i >= 30:  # the first look-ups load the index and the encoder, and warm them
                lat.append(time.perf_counter() - t)
        assert hits, "the served index returned nothing"
    finally:
        server.terminate()
        server.wait(timeout=60)
    return {"serve_index_build_s": build_s, "serve_breadth": breadth, "serve_p95_ms": 1000 * float(np.percentile(lat, 95)),
            "serve_p50_ms": 1000 * float(np.median(lat)), "serve_queries": len(lat)}


def part_query_encoding() -> dict:
    import torch

    from defsentflow.encoders import encode_texts, load_encoder

    torch.set_num_threads(2)
    enc = load_encoder("minilm", device="cpu")
    lat = []
    for i in range(60):
        t = time.perf_counter()
        encode_texts(enc, [f"a large animal that lives in the sea number {i}"], pooling="mean")
        lat.append(time.perf_counter() - t)
    return {"query_encode_p95_ms": 1000 * float(np.percentile(lat[10:], 95))}


def _child(args: list[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "2", "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "DEFSENTFLOW_QUIET": "1"}
    out = subprocess.run([sys.executable, __file__, "_part", *args], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"part {args} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for key, label in (("ingest_s", "ingest (s)"), ("step_ms", "train step (s)"), ("products_ms", "its 2 matrix products"),
                       ("merge_s", "matrix merge (s)"), ("ivf_build_s", "IVF build (s)"), ("flat_p95_ms", "exact query p95 (s)")):
        have = [r for r in rows if key in r]
        if have:
            scale = 1000 if key.endswith("_ms") else 1
            a.plot([r["n"] for r in have], [r[key] / scale for r in have], marker="o", label=label)
    for key, label in (("ingest_rss_mb", "ingest peak RSS"), ("train_anon_mb", "train peak anon RSS"),
                       ("merge_anon_mb", "matrix merge peak anon RSS"), ("matrix_mb", "matrix bytes")):
        have = [r for r in rows if key in r]
        if have:
            b.plot([r["n"] for r in have], [r[key] for r in have], marker="o", label=label)
    for ax, title in ((a, "seconds"), (b, "MB")):
        ax.set_xscale("log"), ax.set_yscale("log"), ax.set_xlabel("entries (N)"), ax.set_title(title)
        ax.legend(fontsize=7), ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_plot":  # one chart from several runs' JSON files
        rows: dict[int, dict] = {}
        for f in sys.argv[3:]:
            for r in json.loads(Path(f).read_text()):
                rows.setdefault(r["n"], {}).update(r)
        plot([rows[n] for n in sorted(rows)], Path(sys.argv[2]))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "_part":
        kind, n, work = sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
        res = {"ingest": lambda: part_ingest(n, work), "matrix": lambda: part_matrix(n, work, int(sys.argv[5])),
               "train": lambda: part_train(n, work, sys.argv[5]), "revdict": lambda: part_revdict(n, work),
               "query": part_query_encoding, "serve": lambda: part_serve(n, work)}[kind]()
        print(json.dumps(res))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--parts", default="ingest,matrix,train,revdict,serve")
    ap.add_argument("--matrix-sample", type=int, default=1000)
    ap.add_argument("--sampled", default="sampled 65536", help="negatives of the extra step at the largest N")
    ap.add_argument("--out", default=str(ROOT / "bench" / "scale"))
    args = ap.parse_args()
    sizes, parts = [int(s) for s in args.sizes.split(",")], args.parts.split(",")
    print("load before:", os.getloadavg(), flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="scale-") as tmp:
        work = Path(tmp)
        for n in sizes:
            row: dict = {"n": n}
            t = time.perf_counter()
            if "ingest" in parts:
                row.update(_child(["ingest", str(n), tmp]))
            if "matrix" in parts:
                row.update(_child(["matrix", str(n), tmp, str(args.matrix_sample)]))
            if "train" in parts:
                row.update(_child(["train", str(n), tmp, "full"]))
                if n == max(sizes):
                    s = _child(["train", str(n), tmp, args.sampled])
                    row.update({"sampled_step_ms": s["step_ms"], "sampled_anon_mb": s["train_anon_mb"]})
            if "revdict" in parts:
                row.update(_child(["revdict", str(n), tmp]))
            for f in work.glob(f"entries-{n}.npy"):
                f.unlink()
            print(f"N={n}: {time.perf_counter() - t:.0f} s, load {os.getloadavg()}", flush=True)
            rows.append(row)
        if "revdict" in parts:
            rows[-1].update(_child(["query", "0", tmp]))
        if "serve" in parts:
            rows[-1].update(_child(["serve", str(max(sizes)), tmp]))
    _report(rows, parts, args)
    Path(args.out + ".json").write_text(json.dumps(rows, indent=2))
    plot(rows, Path(args.out + ".png"))
    print("load after:", os.getloadavg())
    print(f"wrote {args.out}.png and {args.out}.json")


def _report(rows: list[dict], parts: list[str], args) -> None:
    cols = [("n", "N", "{:,}")]
    if "ingest" in parts:
        cols += [("definitions", "defs", "{:,}"), ("ingest_s", "ingest s", "{:.1f}"), ("ingest_rss_mb", "ingest MB", "{:.0f}")]
    if "matrix" in parts:
        cols += [("matrix_defs_per_s", "build defs/s*", "{:.0f}"), ("matrix_rss_mb", "build MB*", "{:.0f}"),
                 ("merge_s", "merge s", "{:.1f}"), ("merge_anon_mb", "merge anon MB", "{:.0f}")]
    if "train" in parts:
        cols += [("step_ms", "step ms", "{:.0f}"), ("products_ms", "2 products ms", "{:.0f}"),
                 ("train_anon_mb", "step anon MB", "{:.0f}"), ("matrix_mb", "matrix MB", "{:.0f}")]
    if "revdict" in parts:
        cols += [("flat_build_s", "flat build s", "{:.2f}"), ("flat_p95_ms", "exact p95 ms", "{:.1f}"),
                 ("ivf_build_s", "IVF build s", "{:.1f}"), ("nprobe", "nprobe", "{}"),
                 ("recall_held_out", "recall@10", "{:.3f}"), ("ivf_p95_ms", "IVF p95 ms", "{:.2f}")]
    print(" | ".join(c[1] for c in cols))
    for r in rows:
        print(" | ".join(fmt.format(r[k]) if k in r else "-" for k, _, fmt in cols))
    base, top = rows[0], rows[-1]
    if "train" in parts and len(rows) > 1:
        extra = top["step_ms"] - base["step_ms"]
        print(f"train: extra step time at N={top['n']:,} over N={base['n']:,}: {extra:.0f} ms = "
              f"{extra / top['products_ms']:.2f} x its 2 matrix products ({top['products_ms']:.0f} ms); "
              f"peak anon RSS above N={base['n']:,}: {top['train_anon_mb'] - base['train_anon_mb']:.0f} MB = "
              f"{(top['train_anon_mb'] - base['train_anon_mb']) / top['matrix_mb']:.2f} x the matrix")
        if "sampled_step_ms" in top:
            print(f"train: {args.sampled} at N={top['n']:,}: {top['sampled_step_ms']:.0f} ms per step = "
                  f"{top['sampled_step_ms'] / base['step_ms']:.2f} x the N={base['n']:,} step")
    if "matrix" in parts:
        print(f"* entry-matrix build measured on a sample of {top['matrix_sample']:,} definitions with MiniLM on CPU "
              f"(the full build of N={top['n']:,} would take about {top['matrix_full_minutes']:.0f} minutes); "
              "merge = the float32 per-entry sum of N x 1.45 synthetic vectors (memory-mapped)")
    if "ingest" in parts and len(rows) > 1:
        print(f"ingest: {top['ingest_s']:.1f} s and {top['ingest_rss_mb']:.0f} MB peak RSS at N={top['n']:,}")
    if "revdict" in parts:
        print(f"revdict: synthetic clustered unit vectors (dim {DIM}); query p95 = search only, one query at a time; "
              f"MiniLM query encoding p95 {top.get('query_encode_p95_ms', float('nan')):.1f} ms")
    if "serve" in parts:
        print(f"serve: N={top['n']:,} synthetic entries, IVF index (breadth {top['serve_breadth']}, built and registered "
              f"in {top['serve_index_build_s']:.0f} s): /api/revdict one client, warm, query encoding included: "
              f"p50 {top['serve_p50_ms']:.1f} ms, p95 {top['serve_p95_ms']:.1f} ms over {top['serve_queries']} look-ups")


if __name__ == "__main__":
    main()
