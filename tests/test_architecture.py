"""The shape of the code: no import cycles, the library free of Prefect/flows/tasks/CLI, small modules.

The import graph is read from the source with ``ast`` (nothing is imported), so an import
inside a function counts as much as one at the top of a module: a lazy import hides a
cycle from the interpreter, not from a reader.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
# The folders of the project's code: flows/ and tasks/ install as defsentflow.flows and defsentflow.tasks.
PACKAGES = ("defsentflow", "flows", "tasks")
INSTALLED_AS = {"flows": "defsentflow.flows", "tasks": "defsentflow.tasks"}
MAX_LINES = 500
# Modules being split on another branch; the size test is expected to fail for them until then.


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    if parts[0] in INSTALLED_AS:
        parts[0:1] = INSTALLED_AS[parts[0]].split(".")
    return ".".join(parts)


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute module name an ``ImportFrom`` reads from."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    # A relative import in pkg/__init__.py is relative to pkg itself, in pkg/mod.py to pkg.
    drop = node.level - 1 if is_package else node.level
    base = base[: len(base) - drop] if drop else base
    return ".".join([*base, node.module] if node.module else base)


def _imports(path: Path, module: str | None = None) -> set[str]:
    """Every module name imported anywhere in the file (top level, functions, TYPE_CHECKING blocks)."""
    module = module or _module_name(path)
    is_package = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = _resolve(node, module, is_package)
            found.add(source)
            # `from pkg import mod` imports the submodule pkg.mod when there is one.
            found.update(f"{source}.{alias.name}" for alias in node.names)
    return found


def _project_files() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def _graph() -> nx.DiGraph:
    files = _project_files()
    modules = {_module_name(p) for p in files}
    graph = nx.DiGraph()
    graph.add_nodes_from(modules)
    for path in files:
        for name in _imports(path):
            # Importing a.b.c runs a/__init__.py and a/b/__init__.py first: those are edges too.
            parts = name.split(".")
            for target in (".".join(parts[:k]) for k in range(1, len(parts) + 1)):
                if target in modules and target != _module_name(path):
                    graph.add_edge(_module_name(path), target)
    return graph


def _graph_without_parent_edges() -> nx.DiGraph:
    """The project's module graph without the edges from a module to its own ancestor packages.

    Importing ``defsentflow.a.b`` runs ``defsentflow/a/__init__.py`` first; an ``__init__`` that
    re-exports its children therefore "imports" them and every child "imports" it back. That is
    how packages work, not a cycle a reader has to untangle, so edges from a module to one of
    its own ancestor packages are left out; every other edge, to an ``__init__`` included, counts.
    """
    graph = _graph()
    graph.remove_edges_from([(a, b) for a, b in list(graph.edges) if a.startswith(b + ".")])
    return graph


def test_import_reader_sees_function_level_and_relative_imports(tmp_path):
    source = tmp_path / "__init__.py"
    source.write_text(
        "import os\n"
        "from . import sibling\n"
        "from ..other import thing\n"
        "def f():\n"
        "    from prefect import flow\n"
        "    if True:\n"
        "        import defsentflow.cli.table\n"
    )
    assert _imports(source, module="defsentflow.pkg") == {
        "os", "defsentflow.pkg", "defsentflow.pkg.sibling", "defsentflow.other", "defsentflow.other.thing",
        "prefect", "prefect.flow", "defsentflow.cli.table",
    }


def test_graph_covers_the_project():
    graph = _graph_without_parent_edges()
    layers = {(a.split(".")[0], b.split(".")[0]) for a, b in graph.edges}
    assert {("defsentflow.flows", "defsentflow.tasks"), ("defsentflow.tasks", "defsentflow")} <= {
        (_folder(a), _folder(b) if _folder(b) in INSTALLED_AS.values() else "defsentflow") for a, b in graph.edges}
    assert ("defsentflow", "defsentflow") in layers
    assert graph.number_of_edges() > 100


def test_no_import_cycles():
    cycles = sorted(" -> ".join([*c, c[0]]) for c in nx.simple_cycles(_graph_without_parent_edges()))
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def _folder(module: str) -> str:
    """The folder-level node of a module: ``flows``, ``tasks``, a sub-package of ``defsentflow``
    (``defsentflow.training``) or a top-level module of it (``defsentflow.pipeline``)."""
    parts = module.split(".")
    return parts[0] if parts[0] != "defsentflow" or len(parts) == 1 else ".".join(parts[:2])


def _folder_graph() -> nx.DiGraph:
    graph = nx.DiGraph()
    for a, b in _graph_without_parent_edges().edges:
        fa, fb = _folder(a), _folder(b)
        if fa != fb and "defsentflow" not in (fa, fb):  # the root package only re-exports
            graph.add_edge(fa, fb)
    return graph


def test_no_folder_level_import_loops():
    """No strongly connected component of more than one node among the sub-packages and top-level
    modules of ``defsentflow`` plus ``flows`` and ``tasks``, function-level imports included: a
    folder depends on another only one way."""
    graph = _folder_graph()
    loops = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    detail = [f"{' <-> '.join(c)}: " + ", ".join(f"{a}->{b}" for a, b in graph.subgraph(c).edges) for c in loops]
    assert not loops, "folder-level import loops:\n" + "\n".join(detail)


# flows -> tasks -> defsentflow, one way; the CLI is a client of all three and nothing imports it.
LAYER_RULES = {
    "defsentflow": ("prefect", "prefect_dask", "defsentflow.flows", "defsentflow.tasks", "defsentflow.cli",
                    "flows", "tasks"),
    "tasks": ("defsentflow.flows", "defsentflow.cli", "flows", "tasks"),
    "flows": ("defsentflow.cli", "flows", "tasks"),
}


def _layer_files(layer: str) -> list[Path]:
    files = sorted((ROOT / layer).rglob("*.py"))
    return [p for p in files if p.relative_to(ROOT).parts[:2] != ("defsentflow", "cli")]


def test_flows_and_tasks_install_under_the_project_namespace():
    """No top-level ``flows``/``tasks`` package: the code imports them as ``defsentflow.flows``/``.tasks``."""
    offenders = [f"{p.relative_to(ROOT)}: {name}" for p in _project_files() for name in sorted(_imports(p))
                 if name.split(".")[0] in INSTALLED_AS]
    assert not offenders, "imports of the bare flows/tasks packages:\n" + "\n".join(offenders)


@pytest.mark.parametrize("layer", sorted(LAYER_RULES))
def test_no_forbidden_imports(layer: str):
    def forbidden(name: str) -> bool:
        return any(name == f or name.startswith(f + ".") for f in LAYER_RULES[layer])

    files = _layer_files(layer)
    assert files
    offenders = [f"{p.relative_to(ROOT)}: {name}" for p in files for name in sorted(_imports(p)) if forbidden(name)]
    assert not offenders, f"{layer} must not import {', '.join(LAYER_RULES[layer])}:\n" + "\n".join(offenders)


BELOW_TRAINING = ("defsentflow/evaluation", "defsentflow/model", "defsentflow/revdict", "defsentflow/serve")


def test_the_figure_path_and_the_model_folder_sit_below_training():
    """Evaluation, the model folder's owner, the reverse dictionary and serving never import training:
    training calls the figure path after a candidate (issue 54), never the other way round."""
    offenders = [f"{p.relative_to(ROOT)}: {name}" for folder in BELOW_TRAINING for p in sorted((ROOT / folder).rglob("*.py"))
                 for name in sorted(_imports(p)) if name.startswith("defsentflow.training")]
    assert not offenders, "imports of defsentflow.training below it:\n" + "\n".join(offenders)


def _size_params():
    for path in _project_files():
        yield pytest.param(path, id=path.relative_to(ROOT).as_posix())


@pytest.mark.parametrize("path", list(_size_params()))
def test_module_size(path: Path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT)} has {lines} lines (limit {MAX_LINES})"


def test_tests_import_the_project_directly():
    """``importorskip`` is for optional third-party packages: an import error of our own code must fail."""
    pattern = re.compile(r"importorskip\(\s*['\"](" + "|".join(PACKAGES) + r")\b")
    offenders = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "tests").rglob("*.py"))
                 if pattern.search(p.read_text(encoding="utf-8"))]
    assert not offenders, f"tests that skip on an import error of the project: {offenders}"


# -- config models ---------------------------------------------------------------------------------
# pydantic models that are not config sections: the serving API's request/response schemas.
# Models that are not config sections: serve answers, and the schema of on-disk records (input, read
# with extra keys ignored: a record from a newer version is not moved aside for a field it adds).
NOT_CONFIG_MODELS = {"defsentflow/serve/app.py", "defsentflow/storage/record_checks.py"}
# Dataclasses still in a config module: none (TrainConfig is a ConfigSection too).
CONFIG_DATACLASSES: set[str] = set()


def _is_config_module(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return name in ("config.py", "config_tools.py") or name.endswith("_config.py")


def _class_defs(path: Path) -> list[ast.ClassDef]:
    return [n for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if isinstance(n, ast.ClassDef)]


def _names(nodes: list[ast.expr]) -> set[str]:
    return {n.id if isinstance(n, ast.Name) else n.attr for n in nodes if isinstance(n, (ast.Name, ast.Attribute))}


def test_config_models_share_one_base():
    """Every config section derives from ``config_tools.ConfigSection`` (frozen, ``extra="forbid"``,
    strict): no other library model derives from ``BaseModel`` or sets ``extra``/``frozen``/``strict`` itself."""
    offenders = []
    for p in sorted((ROOT / "defsentflow").rglob("*.py")):
        rel = p.relative_to(ROOT).as_posix()
        if rel == "defsentflow/config_tools.py" or rel in NOT_CONFIG_MODELS:
            continue
        for cls in _class_defs(p):
            if "BaseModel" in _names(cls.bases):
                offenders.append(f"{rel}: {cls.name} derives from BaseModel")
            for stmt in cls.body:
                if (isinstance(stmt, ast.Assign) and _names(stmt.targets) == {"model_config"}
                        and isinstance(stmt.value, ast.Call)
                        and {k.arg for k in stmt.value.keywords} & {"extra", "frozen", "strict"}):
                    offenders.append(f"{rel}: {cls.name} sets its own extra/frozen/strict")
    assert not offenders, "config models must derive from ConfigSection:\n" + "\n".join(offenders)


def test_config_modules_hold_no_dataclass_twins():
    """A config section is the one model the library reads: config modules define no dataclasses."""
    offenders = []
    for p in sorted((ROOT / "defsentflow").rglob("*.py")):
        rel = p.relative_to(ROOT).as_posix()
        if not _is_config_module(rel) or rel in CONFIG_DATACLASSES:
            continue
        for cls in _class_defs(p):
            decorators = _names([d.func if isinstance(d, ast.Call) else d for d in cls.decorator_list])
            if "dataclass" in decorators:
                offenders.append(f"{rel}: {cls.name}")
    assert not offenders, "dataclasses in config modules:\n" + "\n".join(offenders)


# -- imports inside functions ----------------------------------------------------------------------
# Outside cli/ (whose lazy imports keep `defsentflow --help` fast), an import belongs at the top of its
# module: at most this many function-level imports of the project's own modules remain, none of the
# standard library, and each remaining one says why on its line (`# lazy: ...`).
MAX_LAZY_PROJECT_IMPORTS = 20


def _function_level_imports(path: Path) -> list[ast.stmt]:
    found: list[ast.stmt] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if in_function and isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append(child)
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


def test_function_level_imports_are_few_and_explained():
    import sys

    project, stdlib, unexplained = [], [], []
    for path in _project_files():
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("defsentflow/cli/"):
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        module, is_package = _module_name(path), path.name == "__init__.py"
        for node in _function_level_imports(path):
            name = _resolve(node, module, is_package) if isinstance(node, ast.ImportFrom) else node.names[0].name
            where = f"{rel}:{node.lineno}: {name}"
            if not any("# lazy:" in lines[i] for i in range(node.lineno - 1, node.end_lineno)):
                unexplained.append(where)
            if name.split(".")[0] in PACKAGES:  # defsentflow.flows/.tasks included
                project.append(where)
            elif name.split(".")[0] in sys.stdlib_module_names:
                stdlib.append(where)
    assert not stdlib, "standard-library imports inside functions (move them to the top):\n" + "\n".join(stdlib)
    assert len(project) <= MAX_LAZY_PROJECT_IMPORTS, (
        f"{len(project)} function-level imports of the project's own modules (at most "
        f"{MAX_LAZY_PROJECT_IMPORTS}):\n" + "\n".join(project))
    assert not unexplained, "function-level imports without a '# lazy: why' comment:\n" + "\n".join(unexplained)


def test_no_module_imports_another_modules_private_names():
    """A name that starts with ``_`` belongs to its module: another module that needs it gets a public
    name in the module that owns the concept (issue 33: no module imports another's ``_private`` name)."""
    offenders = []
    for path in _project_files():
        module, is_package = _module_name(path), path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                source = _resolve(node, module, is_package)
                if source.split(".")[0] not in ("defsentflow", *PACKAGES) or source == module:
                    continue
                offenders += [f"{path.relative_to(ROOT)}:{node.lineno}: {source}.{a.name}" for a in node.names
                              if a.name.startswith("_") and not a.name.startswith("__")]
    assert not offenders, "imports of another module's private names:\n" + "\n".join(offenders)
