"""The harvest's stages, from a validated :class:`HarvestConfig` to a registered pairs artifact.

Each stage takes and returns small JSON-friendly references (dicts of keys and paths), so the
same functions serve the CLI (called in a row), Prefect tasks and Dask workers. Heavy inputs
(the corpus layout, vectors, scorer, index) are loaded once per process by
:func:`load_resources`.

Artifacts:

* sentence vectors ``<root>/cache/sentence_vectors/<hash>.npy`` (content-addressed by the
  encoder's content hash and the texts; no code version, so an edit elsewhere does not force
  a re-encode of the corpus);
* the discriminative scorer ``<root>/models/scorers/<key>/`` (kind ``scorer``);
* the pairs ``<root>/parquet/harvest/<corpus>/<key>/pairs.parquet`` with ``parts/`` (kind
  ``pairs``) and a ``harvest_stats`` row.

With ``pairs.source: file`` the pairs are those of ``pairs.file`` (see
:mod:`defsentflow.scoring.pair_file`); its sentences' vectors are cached on their own and a batch
is a slice of its pairs.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from defsentflow.corpus import ingest_corpus, resolve_corpus
from defsentflow.corpus.schemas import CHUNKS_SCHEMA, SENTENCES_SCHEMA
from defsentflow.encoders import model_content_hash, resolve_model_path
from defsentflow.fanout import FanOut, call_one
from defsentflow.progress import progress
from defsentflow.retrieval import build_index, load_index, open_index
from defsentflow.scoring.config import HarvestConfig, ScorerSection, resolve_input_path
from defsentflow.scoring.contexts import CorpusLayout
from defsentflow.scoring.discriminative import DiscriminativeScorer, train_discriminator
from defsentflow.scoring.generative import GenerativeScorer
from defsentflow.scoring.harvest import (
    BatchSpec,
    HarvestResources,
    collect_parts,
    eligible_sentences,
    harvest_batch,
    label_stats,
    plan_batches,
)
from defsentflow.scoring.origin import PairLabeller
from defsentflow.scoring.pair_file import label_file_batch, read_pair_file, sample_pairs
from defsentflow.scoring.scorer import ContextualScorer, ScorerWeights
from defsentflow.scoring.vectors import cached_sentence_vectors, encode_sentences
from defsentflow.storage import (
    Catalog,
    atomic_dir,
    clean_stale_temporaries,
    code_version,
    combine_hashes,
    hash_config,
    hash_path,
    hash_text,
    root_place,
    write_json,
    write_parquet,
)

__all__ = ["apply_threads", "vectors_path", "prepare_corpus", "prepare_extras", "prepare_pair_file", "prepare_scorer",
           "prepare_index", "prepare_refs", "prepare_inputs", "scorer_step", "index_step", "plan_harvest", "run_batch",
           "finalize_harvest", "HarvestSteps", "run_harvest", "load_resources"]

log = logging.getLogger(__name__)


def _settings_hash(cfg: HarvestConfig) -> str:
    """What a harvest does, independent of where its inputs come from (those are hashed by content)."""
    return hash_config({"contexts": cfg.contexts.model_dump(mode="json"), "top_n": cfg.retrieval.top_n,
                        "batch_size": cfg.batch_size, "seed": cfg.seed,
                        "pairs": cfg.pairs.model_dump(mode="json", exclude={"extra_sentences", "file"})})


def apply_threads(cfg: HarvestConfig) -> None:
    """Set torch's CPU threads when the config asks for a number (a process-wide setting)."""
    if cfg.threads:
        import torch  # lazy: torch takes seconds to load; only code that trains or encodes needs it

        torch.set_num_threads(cfg.threads)


# -- stage 1: corpus ---------------------------------------------------------------------------
def prepare_corpus(cfg: HarvestConfig, run_id: str | None = None) -> dict:
    """Ingest ``corpus.paths`` (a cache hit when unchanged), or find the corpus already ingested."""
    c = cfg.corpus
    if c.paths:
        paths = [resolve_input_path(p, f"corpus.paths ({c.name})") for p in c.paths]
        res = ingest_corpus(paths, c.name, fmt=c.fmt, root=cfg.root, chunk_sentences=c.chunk_sentences, run_id=run_id)
        return {"name": c.name, "key": res.key, "path": str(res.path)}
    art = resolve_corpus(c.name, cfg.root)
    return {"name": c.name, "key": art["artifact_key"], "path": str(art["path"])}


@lru_cache(maxsize=4)
def _layout(corpus_path: str) -> CorpusLayout:
    p = Path(corpus_path)
    return CorpusLayout.from_tables(pq.read_table(p / "sentences.parquet", schema=SENTENCES_SCHEMA),
                                    pq.read_table(p / "chunks.parquet", schema=CHUNKS_SCHEMA))


def prepare_extras(cfg: HarvestConfig) -> dict | None:
    """The optional extra sentences (dictionary definitions/examples...): a text file or Parquet ``text`` column."""
    src = cfg.pairs.extra_sentences
    if not src:
        return None

    path = resolve_input_path(src, "pairs.extra_sentences")
    return {"path": str(path), "hash": hash_path(path)}


@lru_cache(maxsize=4)
def _extra_texts(path: str) -> tuple[str, ...]:
    p = Path(path)
    if p.suffix == ".parquet":
        t = pq.read_table(p)
        if "text" not in t.column_names:
            raise ValueError(f"{p}: no 'text' column (columns: {', '.join(t.column_names)})")
        texts = t.column("text").to_pylist()
    else:
        try:
            texts = p.read_text(encoding="utf-8").splitlines()
        except UnicodeDecodeError as exc:
            line = p.read_bytes()[:exc.start].count(b"\n") + 1
            raise ValueError(f"{p}: line {line}: not valid UTF-8") from None
    bad = [i for i, t in enumerate(texts) if t is None]
    if bad:
        raise ValueError(f"{p}: record {bad[0]}: text is null")
    return tuple(" ".join(t.split()) for t in texts if t.strip())  # blank lines are not sentences


def _all_texts(corpus: dict, extras: dict | None) -> list[str]:
    texts = list(_layout(corpus["path"]).texts)
    if extras:
        texts += _extra_texts(extras["path"])
    return texts


@lru_cache(maxsize=2)
def _pair_file(path: str, columns: tuple[int, int], header: bool, n_pairs: int, seed: int, batch_size: int):
    """The seeded sample of the file's pairs (only the sentences it uses) and its batches of positions."""
    pf = read_pair_file(path, columns=columns, header=header)
    batches = sample_pairs(pf, n_pairs, seed, batch_size)
    bounds = np.cumsum([0, *map(len, batches)])
    return pf.subset(np.concatenate(batches)), [np.arange(a, b) for a, b in zip(bounds[:-1], bounds[1:])]


def _sampled(cfg: HarvestConfig, ref: dict):
    return _pair_file(ref["path"], tuple(ref["columns"]), ref["header"], cfg.pairs.n_pairs, cfg.seed, cfg.batch_size)


def prepare_pair_file(cfg: HarvestConfig) -> dict | None:
    """``pairs.source: file``: read the pairs file and encode the sentences of its seeded sample (cached);
    None for a corpus harvest."""
    p = cfg.pairs
    if p.source != "file":
        return None

    path = resolve_input_path(p.file, "pairs.file")
    pf, _ = _pair_file(str(path), tuple(p.file_columns), p.file_header, p.n_pairs, cfg.seed, cfg.batch_size)
    encoder = cfg.scorer.discriminative.encoder
    vec_path = vectors_path(Catalog(cfg.root).root, encoder, list(pf.texts))
    cached_sentence_vectors(vec_path, encoder, pf.texts)
    return {"path": str(path), "hash": hash_path(path), "columns": list(p.file_columns), "header": p.file_header,
            "n_pairs": len(pf.pairs), "n_texts": len(pf.texts), "vectors_path": str(vec_path)}


# -- stage 2: the discriminative scorer ---------------------------------------------------------
def vectors_path(root: Path, encoder: str, texts: list[str]) -> Path:
    key = combine_hashes(["vectors", model_content_hash(resolve_model_path(encoder)), hash_text("\n".join(texts))])
    return root_place(root, "sentence_vectors", f"{key}.npy")


def prepare_scorer(cfg: HarvestConfig, corpus: dict, extras: dict | None = None, run_id: str | None = None) -> dict:
    """Encode the sentences (cached) and train the discriminative head (artifact kind ``scorer``)."""
    apply_threads(cfg)
    cat = Catalog(cfg.root)
    dcfg = cfg.scorer.discriminative
    texts = _all_texts(corpus, extras)
    vec_path = vectors_path(cat.root, dcfg.encoder, texts)
    key = combine_hashes(["scorer", corpus["key"], model_content_hash(resolve_model_path(dcfg.encoder)),
                          hash_config(dcfg.model_dump(mode="json", exclude={"min_accuracy"})), str(cfg.contexts.k),
                          code_version()])
    final = root_place(cat.root, "scorers", key)
    art = cat.artifact(key)
    if art is None or not (final / "scorer.json").exists():
        t0 = time.perf_counter()
        vectors = cached_sentence_vectors(vec_path, dcfg.encoder, texts)
        layout = _layout(corpus["path"])
        scorer = train_discriminator(layout, vectors[:layout.n_sentences], dcfg, k=cfg.contexts.k, version=key)
        with atomic_dir(final) as tmp:
            scorer.save(tmp)
        meta = {**scorer.metrics, "seconds": time.perf_counter() - t0}
        cat.register_artifact(key, "scorer", final, hash_path(final), name=f"{corpus['name']}-discriminative",
                              input_hashes={"corpus": corpus["key"]},
                              config={**dcfg.model_dump(mode="json"), "k": cfg.contexts.k}, run_id=run_id,
                              meta=meta)
        log.info("context scorer %s: held-out accuracy %.3f", key, scorer.metrics["heldout_accuracy"])
    elif not vec_path.exists():
        cached_sentence_vectors(vec_path, dcfg.encoder, texts)  # extras changed: only the vectors are new
    metrics = json.loads((final / "scorer.json").read_text())["metrics"]
    need = cfg.scorer.discriminative.min_accuracy
    if need is not None and metrics["heldout_accuracy"] < need:
        raise ValueError(f"context scorer held-out accuracy {metrics['heldout_accuracy']:.3f} < required {need}")
    return {"key": key, "path": str(final), "vectors_path": str(vec_path), "metrics": metrics}


# -- stage 3: the retrieval index ----------------------------------------------------------------
def _dense_encoder(encoder: str, known: dict[str, np.ndarray] | None = None) -> Callable[[list[str]], np.ndarray]:
    """Texts -> vectors with the scorer's encoder; texts in ``known`` (cached corpus vectors) are not re-encoded."""
    def encode(texts: list[str]) -> np.ndarray:
        rows = [known.get(t) if known else None for t in texts]
        todo = [t for t, r in zip(texts, rows) if r is None]
        new = iter(encode_sentences(encoder, todo) if todo else ())
        return np.stack([r if r is not None else next(new) for r in rows]).astype(np.float32)

    return encode


def _dense_encoder_id(encoder: str) -> str:
    return f"{model_content_hash(resolve_model_path(encoder))}:mean:l2"


def prepare_index(cfg: HarvestConfig, corpus: dict, run_id: str | None = None) -> dict:
    """Build (or find) the corpus's chunk index of ``retrieval.kind`` (dense: the scorer's encoder)."""
    kind = cfg.retrieval.kind
    kwargs = {}
    if kind == "dense":
        enc = cfg.scorer.discriminative.encoder
        kwargs = {"encoder": _dense_encoder(enc), "encoder_id": _dense_encoder_id(enc)}
    art = build_index(kind, corpus["key"], root=cfg.root, run_id=run_id, **kwargs)
    return {"kind": kind, "key": art.key, "path": str(art.path)}


# -- resources, loaded once per process ------------------------------------------------------------
@lru_cache(maxsize=2)
def _resources(corpus_json: str, scorer_json: str, index_json: str, extras_json: str, scorer_cfg_json: str,
               root: str | None) -> HarvestResources:
    corpus, scorer_ref, index, extras = (json.loads(x) for x in (corpus_json, scorer_json, index_json, extras_json))
    sc = ScorerSection.model_validate_json(scorer_cfg_json)
    layout = _layout(corpus["path"])
    texts = _all_texts(corpus, extras)
    vectors = np.load(scorer_ref["vectors_path"])
    disc = DiscriminativeScorer.load(scorer_ref["path"])
    gen = None
    if sc.lm:
        gen = GenerativeScorer(sc.lm, batch_size=sc.lm_batch_size, device=sc.lm_device)
    w = sc.weights
    scorer = ContextualScorer(ScorerWeights(w.l1, w.l2, w.l3, w.l4), discriminative=disc, generative=gen)

    encoder = None
    if index["kind"] == "dense":  # queries are harvest sentences: reuse their cached vectors
        encoder = _dense_encoder(sc.discriminative.encoder, dict(zip(texts, vectors)))
    # the flow resolved the index's directory: a worker opens no catalog
    index_obj = (open_index(index["kind"], index["path"], encoder) if index.get("path")
                 else load_index(index["key"], root=root, encoder=encoder))
    search = index_obj.search
    return HarvestResources(layout, texts, vectors, scorer, search)


def load_resources(cfg: HarvestConfig, refs: dict) -> HarvestResources:
    """The corpus layout, texts, vectors, scorer and search function for ``refs`` (cached per process)."""
    apply_threads(cfg)
    return _resources(json.dumps(refs["corpus"], sort_keys=True), json.dumps(refs["scorer"], sort_keys=True),
                      json.dumps(refs["index"], sort_keys=True), json.dumps(refs.get("extras"), sort_keys=True),
                      cfg.scorer.model_dump_json(), cfg.root)


# -- stage 4: plan, batches, finalize ------------------------------------------------------------------
def plan_harvest(cfg: HarvestConfig, refs: dict) -> dict:
    """The harvest's key and directory and its batches (as dicts)."""
    res = load_resources(cfg, refs)
    pair_file = refs.get("pair_file")
    source = [pair_file["hash"], *map(str, pair_file["columns"]), str(pair_file["header"])] if pair_file else []
    key = combine_hashes(["pairs", refs["corpus"]["key"], res.scorer.version, refs["index"]["key"],
                          (refs.get("extras") or {}).get("hash", "-"), *source, _settings_hash(cfg), code_version()])
    out_dir = root_place(Catalog(cfg.root).root, "harvest", refs["corpus"]["name"], key)
    if pair_file:
        batches = [{"index": i, "rows": rows.tolist()} for i, rows in enumerate(_sampled(cfg, pair_file)[1])]
    else:
        eligible = eligible_sentences(res.texts, cfg.pairs.min_words, cfg.pairs.max_words)
        batches = [dataclasses.asdict(s) for s in plan_batches(eligible, cfg)]
    return {"key": key, "dir": str(out_dir), "parts_dir": str(out_dir / "parts"), "scorer_version": res.scorer.version,
            "batches": batches}


def run_batch(cfg: HarvestConfig, refs: dict, plan: dict, batch: dict) -> dict:
    """One batch (skipped when its part exists); returns the part's reference."""
    res = load_resources(cfg, refs)
    if refs.get("pair_file"):
        return _run_file_batch(cfg, res, refs["pair_file"], plan, batch)
    spec = BatchSpec(batch["index"], tuple(batch["seeds"]), batch["n_neighbour"], batch["n_random"])
    eligible = _eligible(cfg, refs)
    return harvest_batch(res, spec, cfg, plan["parts_dir"], eligible, scorer_version=plan["scorer_version"])


def _run_file_batch(cfg: HarvestConfig, res: HarvestResources, pair_file: dict, plan: dict, batch: dict) -> dict:
    pf, _ = _sampled(cfg, pair_file)
    labeller = PairLabeller(res, pf.texts, np.load(pair_file["vectors_path"]), k=cfg.contexts.k,
                            max_jaccard=cfg.contexts.max_jaccard, seed=cfg.seed)
    return label_file_batch(labeller, pf, batch["index"], np.asarray(batch["rows"], dtype=np.int64), cfg,
                            plan["parts_dir"], scorer_version=plan["scorer_version"])


def _eligible(cfg: HarvestConfig, refs: dict) -> np.ndarray:
    res = load_resources(cfg, refs)
    return eligible_sentences(res.texts, cfg.pairs.min_words, cfg.pairs.max_words)


def finalize_harvest(cfg: HarvestConfig, refs: dict, plan: dict, run_id: str | None = None,
                     seconds: float | None = None) -> dict:
    """Concatenate the parts into ``pairs.parquet``, register it and its label statistics."""
    cat = Catalog(cfg.root)
    art = cat.artifact(plan["key"])
    if art is not None:  # already finalized: idempotent
        meta = art.get("meta") or {}
        return {"key": plan["key"], "path": art["path"], "n_pairs": meta.get("n_pairs"), "mean": meta.get("mean"),
                "std": meta.get("std"), "cached": True}
    out_dir = Path(plan["dir"])
    final = out_dir / "pairs.parquet"
    table = collect_parts(plan["parts_dir"], len(plan["batches"]))
    write_parquet(table, final)
    scores = table.column("score").to_numpy()
    kinds = np.asarray(table.column("kind").to_pylist())
    stats = label_stats(scores)
    stats["by_kind"] = {k: label_stats(scores[kinds == k]) for k in ("neighbour", "random", "file") if (kinds == k).any()}
    write_json({"config": cfg.model_dump(mode="json"), "refs": refs, "stats": stats}, out_dir / "manifest.json")
    with cat.transaction() as con:
        cat.register_artifact(plan["key"], "pairs", final, hash_path(final), name=f"{refs['corpus']['name']}-pairs",
                              input_hashes={"corpus": refs["corpus"]["key"], "scorer": refs["scorer"]["key"],
                                            "index": refs["index"]["key"]},
                              config=cfg.model_dump(mode="json"), run_id=run_id, meta=stats, con=con)
        con.execute(
            "INSERT OR REPLACE INTO harvest_stats (artifact_key, run_id, corpus, corpus_key, scorer_version, n_pairs, "
            "n_neighbour, n_random, n_batches, context_set_size, mean, std, quantiles, histogram, seconds) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [plan["key"], run_id, refs["corpus"]["name"], refs["corpus"]["key"], plan["scorer_version"], stats["n_pairs"],
             int((kinds == "neighbour").sum()), int((kinds == "random").sum()), len(plan["batches"]),
             cfg.contexts.set_size, stats.get("mean"), stats.get("std"), json.dumps(stats.get("quantiles")),
             json.dumps(stats.get("histogram")), seconds],
        )
    return {"key": plan["key"], "path": str(final), "n_pairs": stats["n_pairs"], "mean": stats.get("mean"),
            "std": stats.get("std"), "cached": False}


def prepare_refs(cfg: HarvestConfig, run_id: str | None = None) -> dict:
    """The corpus, extra sentences, context scorer and chunk index a labeller needs (each cached)."""
    inputs = prepare_inputs(cfg, run_id)
    refs = {**inputs, "scorer": prepare_scorer(cfg, inputs["corpus"], inputs["extras"], run_id),
            "index": prepare_index(cfg, inputs["corpus"], run_id)}
    return refs if refs.get("pair_file") else {k: v for k, v in refs.items() if k != "pair_file"}


def prepare_inputs(cfg: HarvestConfig, run_id: str | None = None) -> dict:
    """Stage 1 in one call: the corpus, the optional extra sentences and the pairs file (``pairs.source: file``)."""
    return {"corpus": prepare_corpus(cfg, run_id), "extras": prepare_extras(cfg), "pair_file": prepare_pair_file(cfg)}


def scorer_step(cfg: HarvestConfig, inputs: dict, run_id: str | None = None) -> dict:
    return prepare_scorer(cfg, inputs["corpus"], inputs["extras"], run_id)


def index_step(cfg: HarvestConfig, inputs: dict, run_id: str | None = None) -> dict:
    return prepare_index(cfg, inputs["corpus"], run_id)


def _batches_here(fn: Callable[..., dict], calls: list) -> list[dict]:
    """The local executor of the batches: one after another, with a progress bar."""
    return [call_one(fn, c) for c in progress(calls, desc="harvest batches", unit="batch")]


@dataclasses.dataclass(frozen=True)
class HarvestSteps:
    """The harvest's pieces, each a callable: the library's own functions here, Prefect tasks in the
    ``harvest-pairs`` flow (``tasks/harvest.py``; its ``fan_out`` runs each batch as a task, on the
    command's Dask cluster when it has one). :func:`run_harvest` calls them in its one order.

    Signatures: ``prepare(cfg, run_id) -> inputs``; ``train_scorer(cfg, inputs, run_id)`` and
    ``build_index(cfg, inputs, run_id)`` -> a reference; ``plan(cfg, refs) -> plan``;
    ``fan_out(run_batch, [(cfg, refs, plan, batch), ...]) -> parts`` (:mod:`defsentflow.fanout`, as
    PST's candidates); ``finalize(cfg, refs, plan, run_id, seconds)``.
    """

    prepare: Callable[..., dict] = prepare_inputs
    train_scorer: Callable[..., dict] = scorer_step
    build_index: Callable[..., dict] = index_step
    plan: Callable[..., dict] = plan_harvest
    fan_out: FanOut = _batches_here
    finalize: Callable[..., dict] = finalize_harvest


LOCAL = HarvestSteps()


def run_harvest(cfg: HarvestConfig, *, run_id: str | None = None, steps: HarvestSteps = LOCAL) -> dict:
    """The harvest's one sequencer: inputs, scorer and index, plan, batches, finalize.

    Args:
        cfg: the validated harvest config (validated once, here or by the caller).
        run_id: open a ``runs`` row (flow ``harvest-pairs``) under this id and close it when done
            (a pipeline's run is not closed: :meth:`Catalog.end_run`); None: no run record.
        steps: the executor of the pieces (:class:`HarvestSteps`; the flow passes Prefect tasks).

    Returns:
        One shape whatever the executor: ``key``, ``path``, ``n_pairs``, ``mean``, ``std``, ``cached``
        (the whole harvest existed), ``batches_computed``, ``scorer_metrics``, ``refs``,
        ``seconds_prepare``, ``seconds_batches``.
    """
    cat = Catalog(cfg.root)
    with cat.recorded_run("harvest-pairs", run_id, config=cfg.model_dump(mode="json")) as run:
        clean_stale_temporaries(root_place(cat.root, "harvest"))  # parts half-written by a killed run
        result = _sequence(cfg, cat, run_id, steps)
        run.note = f"{result['n_pairs']} pairs -> {result['key']}"
    return result


def _sequence(cfg: HarvestConfig, cat, run_id: str | None, steps: HarvestSteps) -> dict:
    t0 = time.perf_counter()
    inputs = steps.prepare(cfg, run_id)
    refs = {**inputs, "scorer": steps.train_scorer(cfg, inputs, run_id), "index": steps.build_index(cfg, inputs, run_id)}
    if not refs.get("pair_file"):
        refs.pop("pair_file", None)
    plan = steps.plan(cfg, refs)
    common = {"refs": refs, "scorer_metrics": refs["scorer"]["metrics"]}
    art = cat.artifact(plan["key"])
    if art is not None:  # this exact harvest is complete: nothing to redo
        meta = art.get("meta") or {}
        return {"key": plan["key"], "path": art["path"], "n_pairs": meta.get("n_pairs"), "mean": meta.get("mean"),
                "std": meta.get("std"), "cached": True, "batches_computed": 0, **common,
                "seconds_prepare": time.perf_counter() - t0, "seconds_batches": 0.0}
    t1 = time.perf_counter()
    parts = steps.fan_out(run_batch, [(cfg, refs, plan, b) for b in plan["batches"]])
    result = steps.finalize(cfg, refs, plan, run_id, time.perf_counter() - t1)
    return {**result, "batches_computed": sum(bool(p["computed"]) for p in parts), **common,
            "seconds_prepare": t1 - t0, "seconds_batches": time.perf_counter() - t1}
