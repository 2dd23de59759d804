"""Two threads loading models at once leave transformers as they found it.

transformers loads a model under process-wide patches (``no_tie_weights`` swaps
``PreTrainedModel.tie_weights`` for a no-op and puts back what it found). Two loads that overlap
can put the no-op back for good, after which every MLM checkpoint of the process loads with its
decoder missing (on the meta device). The suite met it once: a DefSent test failed with "Cannot copy
out of meta tensor" after other tests of its process had loaded models in parallel threads. Here
the patch is held open for 0.3 s so that two unlocked loads would overlap every time.
"""

from __future__ import annotations

import contextlib
import threading
import time

import torch


def test_parallel_loads_keep_weight_tying(tiny_mlm_dir, monkeypatch):
    import transformers.initialization as init
    from transformers import AutoModelForMaskedLM, PreTrainedModel

    from defsentflow.encoders import load_encoder
    from defsentflow.training import prepare_backbone

    original_tie = PreTrainedModel.tie_weights
    slow_patch = init.no_tie_weights

    @contextlib.contextmanager
    def held_open():
        with slow_patch():
            time.sleep(0.3)  # the window in which another thread's load would swap the patch
            yield

    monkeypatch.setattr(init, "no_tie_weights", held_open)
    # restored at teardown whatever happens here, so a failure cannot break the process's later tests
    monkeypatch.setattr(PreTrainedModel, "tie_weights", original_tie)
    errors: list[BaseException] = []

    def load(i: int) -> None:
        try:
            if i % 2:
                load_encoder(str(tiny_mlm_dir), device="cpu", mlm=True)
            else:
                prepare_backbone(tiny_mlm_dir, device=torch.device("cpu"), word_head=True, use_pooler=False)
        except BaseException as exc:  # noqa: BLE001 - asserted below
            errors.append(exc)

    threads = [threading.Thread(target=load, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert PreTrainedModel.tie_weights is original_tie, "a load left transformers' no_tie_weights patch in place"
    mlm = AutoModelForMaskedLM.from_pretrained(tiny_mlm_dir, use_safetensors=True)
    decoder = mlm.get_output_embeddings().weight
    assert decoder.device.type == "cpu" and decoder is mlm.get_input_embeddings().weight
