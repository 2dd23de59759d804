"""The supervised relatedness probe of ``stsb-sup`` and ``sickr-sup``: SentEval's RelatednessPytorch on a CPU.

senteval/tools/relatedness.py, step for step: a linear layer to 5 classes and a softmax over the pair
features ``[|u - v|, u * v]``; targets are Tai et al.'s sparse distribution over the scores 1..5
(``encode_labels``: a score s puts ``s - floor(s)`` on class ``floor(s) + 1`` and
``floor(s) - s + 1`` on class ``floor(s)``); the prediction is ``probs @ [1, 2, 3, 4, 5]``; Adam
(torch's defaults, no weight decay), batch 64, the training set permuted each epoch by
``np.random`` seeded once; every 50 epochs dev Pearson is checked, the best model kept, training
stopped after the fourth check without a gain (``early_stop_count >= 3``) or at epoch 1000.
Differences: torch's ``MSELoss`` averages (SentEval's ``size_average = False`` set on a built loss is
ignored by current torch, so SentEval runs with the mean too); float32 on the CPU, not CUDA.
"""

from __future__ import annotations

import copy

import numpy as np

from defsentflow.evaluation.transfer_data import TransferTask

__all__ = ["regress", "tai_targets"]

CHECK_EVERY = 50  # epochs between dev checks (trainepoch(nepoches=50))
MAX_EPOCH = 1000
TENACITY = 3
BATCH = 64


def tai_targets(scores: np.ndarray, nclass: int = 5) -> np.ndarray:
    """SentEval's ``encode_labels``: a score's sparse distribution over the classes 1..nclass."""
    out = np.zeros((len(scores), nclass), dtype=np.float32)
    for j, y in enumerate(np.asarray(scores, dtype=np.float64)):
        f = np.floor(y)
        for i in range(nclass):
            if i + 1 == f + 1:
                out[j, i] = y - f
            if i + 1 == f:
                out[j, i] = f - y + 1
    return out


def _pearson(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import pearsonr  # lazy: scipy loads only where it is used

    r = pearsonr(a, b)[0]
    return 0.0 if r != r else float(r)


def regress(task: TransferTask, data: dict[str, tuple[np.ndarray, np.ndarray]]) -> dict[str, float]:
    """Train on train's (features, gold scores), keep the best dev-Pearson check, score test when present (x 100)."""
    import torch  # lazy: torch loads only where the regressor runs
    from scipy.stats import spearmanr  # lazy: scipy loads only where it is used

    rng = np.random.RandomState(task.seed)
    torch.manual_seed(task.seed)
    X = {k: torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)) for k, (x, _) in data.items()}
    Y = torch.from_numpy(tai_targets(data["train"][1]))
    model = torch.nn.Sequential(torch.nn.Linear(X["train"].shape[1], 5), torch.nn.Softmax(dim=-1))
    loss_fn = torch.nn.MSELoss()
    opt = torch.optim.Adam(model.parameters(), weight_decay=0.0)
    r = torch.arange(1, 6, dtype=torch.float32)

    def predict(x: torch.Tensor) -> np.ndarray:
        with torch.no_grad():
            return (model(x) @ r).numpy()

    best, best_state, epoch, misses = -1.0, None, 0, 0
    while epoch <= MAX_EPOCH:
        model.train()
        for _ in range(CHECK_EVERY):
            perm = torch.from_numpy(rng.permutation(len(Y)))
            for s in range(0, len(Y), BATCH):
                idx = perm[s:s + BATCH]
                loss = loss_fn(model(X["train"][idx]), Y[idx])
                opt.zero_grad()
                loss.backward()
                opt.step()
        epoch += CHECK_EVERY
        model.eval()
        pr = _pearson(predict(X["dev"]), data["dev"][1])
        if pr > best:
            best, best_state = pr, copy.deepcopy(model.state_dict())
        else:
            if misses >= TENACITY:
                break
            misses += 1
    model.load_state_dict(best_state)
    out = {"dev_pearson": round(100 * best, 2)}
    if "test" in data:
        yhat, gold = predict(X["test"]), data["test"][1]
        out["test_pearson"] = round(100 * _pearson(yhat, gold), 2)
        out["test_spearman"] = round(100 * float(spearmanr(yhat, gold)[0]), 2)
    return out
