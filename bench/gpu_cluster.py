"""On a machine with a GPU: docs/distributed.md's dask-cuda recipe, the GPU attach checks and a candidate
that asked for a GPU, with the library alone (no Prefect needed).

    pip install dask-cuda                 # or 'defsentflow[cluster]'
    python bench/gpu_cluster.py           # prints key = value lines, also written to $OUT/gpu_check.json

What it checks: ``local_cuda_cluster()`` (deployments/dask_clusters.py) gives single-threaded workers
offering GPU=1, the catalog guard in the workers' environment only, no MALLOC_TRIM_THRESHOLD_; the
attach checks find nothing wrong with them; a tiny DefSent+ candidate that asked for a GPU trains on
it; a worker offering GPU=1 without a CUDA device is refused at attach and by the candidate itself.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.keylog import key_value_log  # noqa: E402 - after the checkout is on sys.path

log = key_value_log("gpu_check.json")


def envs() -> tuple:
    return (os.environ.get("DEFSENTFLOW_WORKER"), os.environ.get("CUDA_VISIBLE_DEVICES"),
            os.environ.get("MALLOC_TRIM_THRESHOLD_"), os.environ.get("OMP_NUM_THREADS"))


def tiny_candidate(root: str) -> dict:
    """A tiny DefSent+ candidate trained where it runs (``device: auto``), as a PST candidate is."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    from defsentflow.fanout import worker_device
    from defsentflow.training import TrainConfig, encode_entry_matrix, train_encoder

    words = "the a of cat dog small large house water drink river sea fish bird tree green sun light day night".split()
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    base = Path(root) / "tiny"
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=64)).save_pretrained(base)
    BertTokenizer(vocab={w: i for i, w in enumerate(vocab)}).save_pretrained(base)
    pairs = [(words[i], " ".join(words[(i * 3 + k) % len(words)] for k in range(5))) for i in range(len(words))]
    entries, defs = [e for e, _ in pairs], [d for _, d in pairs]
    device = worker_device("auto")  # refuses the CPU for a call that asked for a GPU
    em = encode_entry_matrix(base, entries, defs, "amp", device=device)
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    result = train_encoder(TrainConfig(method="defsent_plus", batch_size=4, lr=1e-3, epochs=2, device=device), base,
                           defs, em.rows(entries), out_dir=Path(root) / "m", checkpoint_dir=Path(root) / "ck",
                           entry_matrix=em.matrix)
    return {"steps": result.steps, "device": device, "torch_threads": torch.get_num_threads(),
            "cuda_peak_bytes": torch.cuda.max_memory_allocated() if torch.cuda.is_available() else 0}


def main() -> None:
    import torch
    from distributed import Client, LocalCluster

    from defsentflow import __version__
    from defsentflow.compute import ComputeSection, attach_problems, worker_report
    from defsentflow.fanout import CallSettings, run_call, worker_device
    from defsentflow.storage.hashing import code_version

    spec = importlib.util.spec_from_file_location("dask_clusters", REPO / "deployments" / "dask_clusters.py")
    recipes = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recipes)
    root = Path(tempfile.mkdtemp())
    paths = {"data root": str(root)}
    gpu = ComputeSection(gpus_per_candidate=1)
    log("torch", [torch.__version__, torch.cuda.is_available(), torch.cuda.device_count(),
                  torch.cuda.get_device_name(0) if torch.cuda.is_available() else None])
    try:
        t0 = time.time()
        with recipes.local_cuda_cluster(preload=[]) as cluster, Client(cluster) as client:
            log("cuda_cluster_start_s", round(time.time() - t0, 1))
            workers = client.scheduler_info(n_workers=-1)["workers"]
            log("cuda_workers", {a: {"nthreads": w["nthreads"], "resources": w["resources"]} for a, w in workers.items()})
            log("cuda_worker_env(guard, CUDA_VISIBLE_DEVICES, MALLOC, OMP)", client.run(envs))
            log("flow_process_guard", os.environ.get("DEFSENTFLOW_WORKER"))
            reports = client.run(worker_report, paths, None)
            log("cuda_attach_problems(gpus=1)", attach_problems(workers, reports, compute=gpu, version=__version__,
                                                                 code=code_version(), paths=paths))
            log("cuda_worker_device(gpus=1)", client.submit(run_call, worker_device, ("auto",), CallSettings(gpus=1),
                                                            pure=False).result())
            t0 = time.time()
            log("cuda_candidate", client.submit(run_call, tiny_candidate, (str(root / "gpu"),), CallSettings(gpus=1),
                                                pure=False, resources={"GPU": 1}).result())
            log("cuda_candidate_s", round(time.time() - t0, 1))
    except Exception as exc:  # noqa: BLE001 - reported, and the CPU half still runs
        log("cuda_cluster_error", f"{type(exc).__name__}: {exc}")
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, resources={"GPU": 1}, dashboard_address=None,
                      env={"CUDA_VISIBLE_DEVICES": "", "DEFSENTFLOW_WORKER": "1"}) as cluster, Client(cluster) as client:
        workers = client.scheduler_info(n_workers=-1)["workers"]
        reports = client.run(worker_report, paths, None)
        log("cpu_attach_problems(gpus=1)", attach_problems(workers, reports, compute=gpu, version=__version__,
                                                            code=code_version(), paths=paths))
        try:
            client.submit(run_call, tiny_candidate, (str(root / "cpu"),), CallSettings(gpus=1), pure=False).result()
            log("cpu_candidate", "trained: NOT refused")
        except Exception as exc:  # noqa: BLE001 - the refusal is the expected outcome
            log("cpu_candidate_refused", f"{type(exc).__name__}: {exc}")


if __name__ == "__main__":
    main()
