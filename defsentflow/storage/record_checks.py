"""Checks an on-disk artifact record passes before the catalog registers it (``catalog rebuild``,
the heal when a run starts): a record found on disk is input like any file a user hands over.

A record is trusted only if

- it is a regular file of at most ``LIMITS["record_bytes"]``, UTF-8 JSON nested at most
  ``LIMITS["nesting"]`` levels, and its fields have the schema's types and sizes (:class:`ArtifactRecord`);
- its ``path`` is the artifact that holds it (the folder it lies in, or the file beside it),
  inside this data root with no symbolic link on the way;
- its kind and key fit where it lies (a model under ``models/``, the key as the artifact's folder
  or file name, a report under ``reports/<its run>``: :data:`PLACES`);
- the artifact's files are still the ones its manifest lists, by full content hash.

A record that fails is moved aside to ``<root>/quarantine/records/`` with its reason beside it
(:func:`quarantine_record`), never deleted.
"""

from __future__ import annotations

import datetime
import os
import re
import time
import uuid
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints, ValidationError

from defsentflow.limits import LIMITS
from defsentflow.storage.bounded_json import read_json_file
from defsentflow.storage.hashing import hash_path
from defsentflow.storage.identifiers import IDENTIFIER_PATTERN
from defsentflow.storage.manifest import full_check, manifest_hash
from defsentflow.storage.paths import DATA_ROOT_LAYOUT, inside_root, place_folder, root_path

__all__ = ["ArtifactRecord", "MetricRow", "ModelRow", "PLACES", "QUARANTINE_DIR", "RecordError", "check_artifact_record",
           "first_error", "quarantine_record", "record_location", "timestamp"]

QUARANTINE_DIR = (place_folder("quarantine"), "records")


class RecordError(ValueError):
    """A record that is not trusted (one line: the file and why)."""


def timestamp(value: str) -> str:
    """``value`` if it is an ISO timestamp (as the catalog writes them)."""
    datetime.datetime.fromisoformat(value)
    return value


Text = Annotated[str, StringConstraints(max_length=LIMITS["record_text"])]
Short = Annotated[str, StringConstraints(max_length=512)]
Key = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:+\-]{0,199}$")]
Hex = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{8,128}$")]
RunId = Annotated[str, StringConstraints(pattern=IDENTIFIER_PATTERN)]
ModelId = Annotated[str, StringConstraints(min_length=1, max_length=256, pattern=r"^[^\x00-\x1f\x7f]+$")]
Timestamp = Annotated[str, StringConstraints(max_length=64), AfterValidator(timestamp)]
# A metric as a record carries it: numpy numbers were written as text (json default=str), so a
# number given as text is read as that number; NaN and infinity never are.
def _not_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("a number, not true/false")
    return value


Finite = Annotated[float, BeforeValidator(_not_bool), Field(allow_inf_nan=False, strict=False)]
Count = Annotated[int, BeforeValidator(_not_bool), Field(strict=False)]


class _Row(BaseModel):
    # Keys a newer version may add are ignored (never registered), not a reason to move a record aside.
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


class ModelRow(_Row):
    """A ``models`` row as a record carries it."""

    model_id: ModelId
    path: Text | None = None
    base_model: Text | None = None
    method: Short | None = None
    pooling: Short | None = None
    run_id: RunId | None = None
    artifact_key: Key | None = None
    meta: Any = None
    created_at: Timestamp | None = None


class MetricRow(_Row):
    """A ``metrics`` row as a record carries it."""

    model_id: ModelId
    task: Short
    setting: Short
    metric: Short
    value: Finite
    n: Count | None = None
    n_excluded: Count | None = None
    pooling: Short | None = None
    run_id: RunId | None = None
    created_at: Timestamp | None = None


class ManifestEntry(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)
    size: Annotated[int, Field(ge=0)]
    quick: Hex
    hash: Hex


class ArtifactRecord(_Row):
    """The schema of ``.defsentflow-record.json`` (:func:`defsentflow.storage.records.make_record`)."""

    format: Literal[1]
    key: Key
    kind: Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,63}$")]
    name: Text | None = None
    path: Text
    content_hash: Hex
    input_hashes: Annotated[dict[Text, Any], Field(max_length=10_000)] | None = None
    config: Any = None
    code_version: Short | None = None
    run_id: RunId | None = None
    meta: Any = None
    size_bytes: Annotated[int, Field(ge=0)] | None = None
    manifest: Annotated[dict[Text, ManifestEntry], Field(max_length=LIMITS["record_items"])] | None = None
    manifest_hash: Hex | None = None
    model: ModelRow | None = None
    metrics: Annotated[list[MetricRow], Field(max_length=LIMITS["record_items"])] | None = None
    created_at: Timestamp | None = None


def first_error(exc: ValidationError) -> str:
    """``field.path: message`` of the first error (and how many more)."""
    errors = exc.errors()
    e = errors[0]
    where = ".".join(str(x) for x in e["loc"]) or "<top>"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {e['msg']}{more}"


# Where each kind lies (root-relative folder) and how its key shows in its path: "name" (the key is the
# folder or file name the artifact is filed under, in the kind's folder), "run" (the file or folder is
# named after the record's run, as PST's result and the run report are). Read from the one layout table
# (storage.paths.DATA_ROOT_LAYOUT: a kind filed in several folders, as models, has its common folder).
# Other kinds: anywhere but the folders below, with the key as a name on the path.
PLACES: dict[str, tuple[str, str]] = {}
for _place in DATA_ROOT_LAYOUT.values():
    if _place.kind is not None and _place.kind not in PLACES:
        PLACES[_place.kind] = (_place.folder, _place.naming)
_NOT_ARTIFACTS = tuple(place_folder(p) for p in ("records", "quarantine", "prefect", "locks", "logs"))


def _stem(part: str) -> str:
    return re.sub(r"\.(json|parquet|npy)$", "", part)


def _place_problem(rel: str, rec: ArtifactRecord) -> str | None:
    parts = rel.split("/")
    folder, rule = PLACES.get(rec.kind, ("", "name"))
    if folder and not rel.startswith(folder + "/"):
        return f"a {rec.kind} artifact lies under {folder}/, not at {rel}"
    if not folder and parts[0] in _NOT_ARTIFACTS:
        return f"no artifact lies under {parts[0]}/"
    below = parts[len(folder.split("/")):] if folder else parts
    if rule == "run":
        run = _stem(below[0]) if len(below) == 1 else None
        if run is None or rec.run_id != run:
            return f"a {rec.kind} is filed under its run id: {rel} does not match run {rec.run_id!r}"
        if rec.kind == "report" and rec.key != f"report-{run}":
            return f"a report's key is report-<run id>, not {rec.key!r}"
        return None
    if rec.key not in {_stem(p) for p in below}:
        return f"its key {rec.key} is not the name it is filed under ({rel})"
    return None


def record_location(root: Path, record_file: Path, artifact: Path) -> str:
    """The root-relative path of ``artifact``, or RecordError if it is not inside ``root`` as it lies
    (a symbolic link on the way, the record itself a link)."""
    if record_file.is_symlink():
        raise RecordError("the record is a symbolic link")
    rel = artifact.relative_to(root)
    if artifact.resolve() != root.resolve() / rel or artifact.is_symlink():
        raise RecordError(f"{rel.as_posix()} leaves the data root through a symbolic link")
    return rel.as_posix()


def check_artifact_record(root: Path, record_file: Path, artifact: Path, *, rehash: bool = True) -> dict[str, Any]:
    """The record in ``record_file`` (describing ``artifact``) as a dict, if it is to be trusted (see the
    module doc); else :class:`RecordError` saying why. ``rehash=False`` skips the content check."""
    rel = record_location(root, record_file, artifact)
    data = read_json_file(record_file, max_bytes=LIMITS["record_bytes"], what="record")
    try:
        rec = ArtifactRecord.model_validate(data)
    except ValidationError as exc:
        raise RecordError(f"not an artifact record: {first_error(exc)}") from None
    if rec.path != rel:
        raise RecordError(f"its path {rec.path[:200]!r} is not the artifact that holds it ({rel})")
    if problem := _place_problem(rel, rec):
        raise RecordError(problem)
    if rec.model is not None and rec.model.path not in (None, rel):
        raise RecordError(f"its model row names another path ({rec.model.path[:200]!r})")
    if rec.manifest is not None and rec.manifest_hash is not None \
            and manifest_hash({k: v.model_dump() for k, v in rec.manifest.items()}) != rec.manifest_hash:
        raise RecordError("its manifest does not match its manifest hash")
    if rehash:
        if rec.manifest is not None:
            problem = full_check(artifact, {k: v.model_dump() for k, v in rec.manifest.items()})
        else:
            problem = None if hash_path(artifact) == rec.content_hash else "content hash differs"
        if problem:
            raise RecordError(f"the artifact's files are not the ones it describes: {problem.split(': ', 1)[-1]}")
    return data


def quarantine_record(root: Path, record_file: Path, reason: str) -> Path | None:
    """Move ``record_file`` to ``<root>/quarantine/records/`` with ``<name>.reason.txt`` beside it;
    its new path, or None when it cannot be moved (a read-only root: it is then only skipped)."""
    flat = record_file.relative_to(root).as_posix().replace("/", "__").lstrip(".")
    try:  # a quarantine/ link leading out of the data root receives nothing
        dest = root_path(root, *QUARANTINE_DIR, f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}-{flat}.quarantined")
        dest.parent.mkdir(parents=True, exist_ok=True)
        inside_root(root, dest.parent)
        os.replace(record_file, dest)
        dest.with_name(dest.name + ".reason.txt").write_text(
            f"{record_file.relative_to(root).as_posix()}: {reason}\n", encoding="utf-8")
    except (OSError, ValueError):
        return None
    return dest
