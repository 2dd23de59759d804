"""On a machine with a GPU: one PST run (2 steps, 2 seeds) of a tiny random BERT, trained on CUDA
through the one unit of training work (``train_candidate``), then the same run again (nothing
recomputed), then the same run with ``autocast: bf16`` (training, entry matrices and selection in
bf16), with the library alone (no Prefect, no network).

    python bench/gpu_pst_check.py                      # key = value lines, also $OUT/gpu_pst.json
    GPU_CHECK_DEVICE=cpu python bench/gpu_pst_check.py # the same on the CPU (bf16 autocast included)

It checks that every candidate trained on the GPU (``device`` recorded in its model record), that
no JSON under the data root names the root or this virtual environment, that the entry matrices
load through ``EntryMatrix.load``, that a second identical run registers no new artifact and keeps
the winner's id, and that the bf16 run completes through selection: step 0's figure is recomputed
under a bf16 key (``stsb``/``revdict`` figure names carry ``+bf16``), not reused from the fp32 run.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.keylog import key_value_log  # noqa: E402 - after the checkout is on sys.path

log = key_value_log("gpu_pst.json")
DEVICE = os.environ.get("GPU_CHECK_DEVICE", "cuda")  # cpu: try the script where there is no GPU


def main() -> None:
    import pyarrow as pa
    import torch

    from tests.conftest import _build_tiny
    from tests.training.test_pst_protocol import wide_dictionary

    work = Path(tempfile.mkdtemp(prefix="gpu-pst-"))
    os.environ["DEFSENTFLOW_HOME"] = str(work / "home")
    from defsentflow.model import read_model_record
    from defsentflow.model.entry_matrix import EntryMatrix
    from defsentflow.storage import Catalog
    from defsentflow.training.pst import PstSteps, run_pst
    from defsentflow.training.pst_config import GridPoint, PstSection
    from tests.dictionary_tables import register_table

    log("cuda", torch.cuda.is_available() and torch.cuda.get_device_name(0))
    base = _build_tiny(work / "tiny-bert", mlm=False)
    table = wide_dictionary()
    register_table("wide", pa.table(table.to_pydict()), work / "home")
    section = PstSection(base_model=str(base), dictionary="wide", steps=2, seeds=[0, 1], device=DEVICE,
                         grid=[GridPoint(pooling="mean", entry_encoding="amp")], selection="revdict-mrr",
                         selection_revdict_mode="cosine", batch_size=16, max_length=24, entry_batch_size=64,
                         use_pooler=False, lr=1e-3)
    steps = PstSteps(threads=1)
    t0 = time.time()
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    first = run_pst(section, run_id="gpu1", steps=steps)
    log("first_run_s", round(time.time() - t0, 1))
    if torch.cuda.is_available():
        log("peak_cuda_mb", round(torch.cuda.max_memory_allocated() / 2**20, 1))
    trained = [c for s in first.steps for c in s.candidates if c.step >= 1]
    devices = {read_model_record(c.model_dir).config["device"] for c in trained}
    log("candidates", len(trained))
    log("record_devices", sorted(devices))
    log("winner", f"step {first.winner.step} {first.winner.label} {first.winner.metric}={first.winner.score:.4f}")
    home = str(work / "home")
    named = [str(p.relative_to(home)) for p in Path(home).rglob("*.json")
             if home in p.read_text(errors="replace") or sys.prefix in p.read_text(errors="replace")]
    log("json_naming_root_or_venv", len(named))
    for m in first.steps[-1].entry_matrices:
        em = EntryMatrix.load(m.path, mmap=True)
        log(f"entry_matrix_{m.key[:8]}", f"{em.matrix.shape} ica={em.ica is not None}")
    before = Catalog().query("SELECT count(*) AS n FROM artifacts")[0]["n"]
    t0 = time.time()
    again = run_pst(section, run_id="gpu2", steps=steps)
    after = Catalog().query("SELECT count(*) AS n FROM artifacts")[0]["n"]
    log("second_run_s", round(time.time() - t0, 1))
    log("second_run_new_artifacts", after - before)
    log("same_winner", again.winner.artifact_key == first.winner.artifact_key and again.winner.score == first.winner.score)
    log("same_id", again.model_id == first.model_id)

    # autocast bf16: the whole run, selection included; step 0 (untrained, same model) is scored again
    bf16 = section.model_copy(update={"autocast": "bf16"})
    t0 = time.time()
    third = run_pst(bf16, run_id="gpu3", steps=steps)
    log("bf16_run_s", round(time.time() - t0, 1))
    step0 = {s.step: s for s in first.steps}[0].candidates[0], {s.step: s for s in third.steps}[0].candidates[0]
    log("bf16_step0_column", step0[1].column)
    log("bf16_step0_score", f"{step0[1].score:.6f} (fp32 {step0[0].score:.6f})")
    tasks = {r["task"] for r in Catalog().query("SELECT DISTINCT task FROM metrics WHERE run_id = 'gpu3'")}
    log("bf16_figures_named_bf16", bool(tasks) and all(t.endswith("+bf16") for t in tasks))
    log("bf16_step0_recomputed", "bf16" in (step0[1].column or "") and "bf16" not in (step0[0].column or ""))
    log("bf16_winner", f"step {third.winner.step} {third.winner.label} {third.winner.metric}={third.winner.score:.4f}")


if __name__ == "__main__":
    main()
