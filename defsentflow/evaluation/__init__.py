"""Evaluation: STS tasks (SemEval 2012-16, STS-B, SICK-R), metrics, the reverse dictionary, the suite."""

from __future__ import annotations

from defsentflow.evaluation.baselines import tfidf_similarities, word_vector_average
from defsentflow.evaluation.label_quality import (
    LABEL_QUALITY_METHODS,
    LabelQualityResult,
    record_label_quality,
    run_label_quality,
)
from defsentflow.evaluation.metrics import paired_cosine, pearson, spearman
from defsentflow.evaluation.revdict import evaluate_revdict
from defsentflow.evaluation.sts import SEVEN_TASKS, average_row, evaluate_sts, score_tasks, spearman_rows
from defsentflow.evaluation.sts_data import (
    TASKS,
    StsFormatError,
    StsSubset,
    StsTask,
    available_tasks,
    load_sick,
    load_sts_year,
    load_stsb,
    load_task,
    validate_tasks,
)
from defsentflow.evaluation.suite import (
    EVAL_TASKS,
    EvalConfig,
    EvalResult,
    EvaluateSection,
    record_evaluation,
    run_evaluation,
    validate_eval_tasks,
)

__all__ = [
    "EVAL_TASKS",
    "EvalConfig",
    "EvalResult",
    "EvaluateSection",
    "LABEL_QUALITY_METHODS",
    "LabelQualityResult",
    "SEVEN_TASKS",
    "StsFormatError",
    "StsSubset",
    "StsTask",
    "TASKS",
    "available_tasks",
    "average_row",
    "evaluate_revdict",
    "evaluate_sts",
    "load_sick",
    "load_sts_year",
    "load_stsb",
    "load_task",
    "paired_cosine",
    "pearson",
    "record_evaluation",
    "record_label_quality",
    "run_evaluation",
    "run_label_quality",
    "score_tasks",
    "spearman",
    "spearman_rows",
    "tfidf_similarities",
    "validate_eval_tasks",
    "validate_tasks",
    "word_vector_average",
]
