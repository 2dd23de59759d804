"""Command-line flags generated from a config model's fields: one flag per field, its default, type,
``Literal`` choices and description read off the field, so a flag never drifts from the config it
fills (``eval``'s from :class:`~defsentflow.evaluation.config.EvaluateSection`, ``encode``'s from the
same evaluation settings).

Example:
    >>> add_config_flags(parser, EvalConfig, ["max_length", "autocast"])
    >>> parser.parse_args(["--autocast", "bf16"]).autocast
    'bf16'
"""

from __future__ import annotations

import argparse
import types
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

__all__ = ["add_config_flags", "config_from_flags"]


def _parts(annotation: Any) -> list[Any]:
    """The members of ``X | None`` / ``Union[...]`` (just ``[X]`` otherwise), None left out."""
    if get_origin(annotation) in (Union, types.UnionType):
        return [a for a in get_args(annotation) if a is not type(None)]
    return [annotation]


def _choices(annotation: Any) -> list[Any] | None:
    for part in _parts(annotation):
        if get_origin(part) is Literal:
            return list(get_args(part))
    return None


def add_config_flags(parser: argparse.ArgumentParser, model: type[BaseModel], fields: Sequence[str], *,
                     help: Mapping[str, str] | None = None) -> None:
    """One ``--field-name`` flag per name of ``fields``: a bool field is a switch, a tuple a comma list
    (given as one string), an int an int; a ``Literal``'s choices are listed in the help and checked by
    the model (one ``defsentflow: error:`` line naming the field), the default is the field's."""
    for name in fields:
        info = model.model_fields[name]
        parts = _parts(info.annotation)
        flag, text = "--" + name.replace("_", "-"), (help or {}).get(name) or info.description or ""
        default = info.get_default(call_default_factory=True)
        if parts == [bool]:
            parser.add_argument(flag, action="store_true", default=None, help=text)
        elif get_origin(parts[0]) is tuple:
            shown = ",".join(map(str, default)) if default else None
            parser.add_argument(flag, default=shown, help=f"{text} (comma-separated; default: {shown})".lstrip())
        else:
            choices = _choices(info.annotation)
            listed = f"; one of {', '.join(map(str, choices))}" if choices else ""
            parser.add_argument(flag, default=default, type=int if parts == [int] else None,
                                help=f"{text} (default: {default}{listed})".lstrip())


def config_from_flags(model: type[BaseModel], args: argparse.Namespace) -> Any:
    """``model`` from every flag named after one of its fields (comma lists split; a switch left off
    keeps the field's default)."""
    data = {}
    for name, info in model.model_fields.items():
        value = getattr(args, name, None)
        if isinstance(value, str) and get_origin(_parts(info.annotation)[0]) is tuple:
            value = tuple(v.strip() for v in value.split(",") if v.strip())
        if value is not None:
            data[name] = value
    return model.model_validate(data)
