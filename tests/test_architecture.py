"""The floors of runner/ hold (docs/architecture.md): the import-linter contracts, no import circle between
modules or packages, only entry points and packages at the top, files and functions of a readable size,
every bench/ script and example still importable after a move, and the pinned type checker (mypy) and
linter (ruff) passing.

The import graph is read from the source with `ast` (every import, inside functions and under
TYPE_CHECKING too: a deferred import hides a circle, it does not break it)."""

from __future__ import annotations

import ast
import hashlib
import io
import os
import re
import subprocess
import sys
import tempfile
import tokenize
import tomllib
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "runner"
MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 80
MAX_TYPE_IGNORES = 20


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = path.relative_to(root.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the runner modules it imports (a package's `__init__` counts as the package)."""
    paths = {module_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in paths}
    for name, path in paths.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                wanted = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    here = name.split(".") if is_package else name.split(".")[:-1]
                    base = ".".join(here[: len(here) - node.level + 1] + ([node.module] if node.module else []))
                wanted = [base] + [f"{base}.{a.name}" for a in node.names]
            else:
                continue
            for target in wanted:
                while target and target not in paths:  # `from runner.x import name`: the module x
                    target = target.rpartition(".")[0]
                if target and target != name and target != "runner":
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """runner.X -> the runner.Y packages its modules import (X != Y)."""
    out: dict[str, set[str]] = defaultdict(set)
    for source, targets in graph.items():
        top = ".".join(source.split(".")[:2])
        out[top] |= {t for t in (".".join(x.split(".")[:2]) for x in targets) if t != top}
    return dict(out)


def test_the_cycle_finder_finds_a_planted_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert cycles(graph) == [["a", "b", "c"]]
    planted = {"runner.x.one": {"runner.y.two"}, "runner.y.two": {"runner.x.three"}, "runner.x.three": set()}
    assert cycles(planted) == []
    assert cycles(package_graph(planted)) == [["runner.x", "runner.y"]]


def test_the_graph_sees_deferred_and_type_checking_imports(tmp_path):
    pkg = tmp_path / "runner"
    (pkg / "a").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a" / "__init__.py").write_text("")
    (pkg / "a" / "one.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                      "    from runner.a.two import X\n")
    (pkg / "a" / "two.py").write_text("def f():\n    from runner.a import one\n    from . import one as again\n")
    graph = import_graph(pkg)
    assert graph["runner.a.one"] == {"runner.a.two"}
    assert graph["runner.a.two"] == {"runner.a", "runner.a.one"}  # the package runs first
    assert cycles(graph) == [["runner.a.one", "runner.a.two"]]


def test_no_import_circle_between_modules_or_packages():
    graph = import_graph()
    assert len(graph) > 100, "the walk must reach the modules"
    assert cycles(graph) == []
    assert cycles(package_graph(graph)) == []


def test_the_import_linter_contracts_hold():
    """The layers and independence contracts in pyproject.toml, checked by import-linter itself."""
    lint = Path(sys.executable).with_name("lint-imports")
    command = [str(lint)] if lint.exists() else [sys.executable, "-m", "importlinter.cli"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([*command, "--no-cache"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout and "KEPT" in proc.stdout


def test_the_top_of_runner_holds_only_entry_points_and_packages():
    loose = sorted(p.name for p in PACKAGE.iterdir()
                   if p.is_file() and p.suffix == ".py" and p.name not in {"__init__.py", "__main__.py"})
    assert loose == []
    packages = [p for p in PACKAGE.iterdir() if p.is_dir() and not p.name.startswith(("_", "."))]
    assert all((p / "__init__.py").is_file() for p in packages), packages


def test_every_package_says_what_it_owns_and_what_it_may_import():
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert len(doc) > 40, f"{init.parent.name}/__init__.py needs a docstring saying what it owns"
        if init.parent.name != "schemas":
            assert "import" in doc, f"{init.parent.name}/__init__.py: say what it may import"


def test_no_file_over_500_lines():
    long = {str(p.relative_to(ROOT)): n for p in sorted(PACKAGE.rglob("*.py"))
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_FILE_LINES}
    assert long == {}


def long_marker_problems(root: Path = PACKAGE) -> list[str]:
    """A function over 80 lines without `# long: why` on its `def` line, and a `# long:` marker anywhere but
    on the `def` line(s) of a function over 80 lines (a marker left behind after a function shrank)."""
    problems = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(root.parent)
        marked = {token.start[0] for token in tokenize.generate_tokens(io.StringIO(text).readline)
                  if token.type == tokenize.COMMENT and token.string.startswith("# long:")}
        excused: set[int] = set()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                header = set(range(node.lineno, max(node.body[0].lineno, node.lineno + 1)))
                if size > MAX_FUNCTION_LINES:
                    excused |= header
                    if not header & marked:
                        problems.append(f"{where}:{node.lineno} {node.name} ({size} lines) has no `# long: why`")
                elif header & marked:
                    problems.append(f"{where}:{node.lineno} {node.name} ({size} lines) is not long: drop `# long:`")
        problems += [f"{where}:{n} a `# long:` marker on no function's def line" for n in sorted(marked - excused)
                     if not any(f"{where}:{n} " in p for p in problems)]
    return problems


def test_the_long_function_check_finds_both_mistakes(tmp_path):
    pkg = tmp_path / "runner"
    pkg.mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    (pkg / "a.py").write_text(f"def unmarked():\n{body}\n\ndef marked():  # long: a table\n{body}\n"
                              "def short():  # long: it was once\n    return 1\n\n# long: a stray marker\n"
                              "TEXT = '# long: in a string is no marker'\n")
    assert long_marker_problems(pkg) == [
        f"runner/a.py:1 unmarked ({MAX_FUNCTION_LINES + 1} lines) has no `# long: why`",
        "runner/a.py:166 short (2 lines) is not long: drop `# long:`",
        "runner/a.py:169 a `# long:` marker on no function's def line",
    ]


def test_no_function_over_80_lines_without_a_reason_and_no_reason_on_a_shorter_one():
    """A longer function says why on its `def` line: `# long: why`; a function of 80 lines or fewer has no such
    marker (a function that shrank drops it, so the markers left are the long functions)."""
    assert long_marker_problems() == []


def named_modules(package: Path, doc: str) -> list[str]:
    """What a package's docstring names that is not there: a `name.py` not in the package, a `runner.x.y` that
    is neither a module nor a top-level name of one."""
    missing = [f"{name}" for name in re.findall(r"(?<![\w/.])([\w]+\.py)\b", doc)
               if not (package / name).is_file()]
    for dotted in re.findall(r"\brunner(?:\.\w+)+", doc):
        parts = dotted.split(".")
        path = package.parent.parent
        rest = list(parts)
        while rest and ((path / rest[0]).is_dir() or (path / f"{rest[0]}.py").is_file()):
            path = path / rest[0] if (path / rest[0]).is_dir() else path / f"{rest[0]}.py"
            rest.pop(0)
        module = path / "__init__.py" if path.is_dir() else path
        tree = ast.parse(module.read_text(encoding="utf-8")) if module.is_file() else ast.Module(body=[])
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)}
        if len(rest) > 1 or (rest and rest[0] not in defined):
            missing.append(dotted)
    return missing


def test_every_package_docstring_names_only_what_exists():
    """The package docstrings are the map (docs/architecture.md's table follows them): a module they name
    exists in that package, and a `runner.x.y` they name is a module or one of its top-level functions/classes."""
    stale = {}
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        if missing := named_modules(init.parent, doc):
            stale[init.parent.name] = missing
    assert stale == {}
    assert named_modules(PACKAGE / "policy", "rules (`network.py`), `runner.run.assemble.nothing`, `runner.nope`") \
        == ["network.py", "runner.run.assemble.nothing", "runner.nope"]


def test_every_bench_script_and_example_imports():
    """bench/ and examples/ follow every move: each file is imported (not run) in a fresh interpreter."""
    files = sorted([*ROOT.glob("bench/*.py"), *ROOT.glob("examples/*.py")])
    assert len(files) >= 5
    script = ("import importlib.util, sys\n"
              "for i, path in enumerate(sys.argv[1:]):\n"
              "    spec = importlib.util.spec_from_file_location(f'smoke_{i}', path)\n"
              "    spec.loader.exec_module(importlib.util.module_from_spec(spec))\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", script, *map(str, files)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr


def test_mypy_and_ruff_are_pinned_and_mypy_strict_enough():
    """The checkers below are pinned (a new release's inference or rules cannot turn the suite red by itself), and
    mypy checks the bodies of unannotated functions; a library without types is let off by name, never globally."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    dev = project["project"]["optional-dependencies"]["dev"]
    pins = {re.split(r"[=<>~!\[ ]", d, maxsplit=1)[0].lower(): d for d in dev}
    assert re.fullmatch(r"mypy==[\d.]+", pins["mypy"]) and re.fullmatch(r"ruff==[\d.]+", pins["ruff"]), pins
    config = project["tool"]["mypy"]
    assert config["check_untyped_defs"] is True and config["warn_unused_ignores"] is True
    assert "ignore_missing_imports" not in config
    assert all(override["module"] for override in config.get("overrides", []))


def type_ignores(root: Path = PACKAGE) -> list[tuple[str, str]]:
    """(file:line, the codes in brackets or "") of every `# type: ignore` comment under root."""
    found = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "type:" not in text:
            continue
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                for m in re.finditer(r"#\s*type:\s*ignore(?:\[([^\]]*)\])?", token.string):
                    found.append((f"{path.relative_to(root.parent)}:{token.start[0]}", (m.group(1) or "").strip()))
    return found


def test_type_ignores_are_few_and_each_names_its_code(tmp_path):
    """A bare `# type: ignore` hides every error on its line, a named one only that one; each is a debt, so they
    are counted."""
    found = type_ignores()
    assert [where for where, codes in found if not codes] == []
    assert len(found) <= MAX_TYPE_IGNORES, found
    planted = tmp_path / "runner"
    planted.mkdir()
    (planted / "a.py").write_text("x = 1  # type: ignore\ny = 2  # type: ignore[assignment]\ns = '# type: ignore'\n")
    assert type_ignores(planted) == [("runner/a.py:1", ""), ("runner/a.py:2", "assignment")]


def test_mypy_passes_on_runner():
    """mypy, as configured in pyproject.toml. Its cache is kept per checkout and Python version in the temporary
    directory: a clean clone pays the whole check once (~20 s on 2 cores), a later run only what changed (~1 s)."""
    checkout = hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]
    cache = Path(tempfile.gettempdir()) / f"agent-run-mypy-{checkout}-py{sys.version_info[0]}.{sys.version_info[1]}"
    proc = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(cache), "runner"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_passes():
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "runner", "tests", "bench", "examples"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def tool_name_tables(root: Path, names: set[str]) -> list[tuple[str, str]]:
    """(file, name) of each module-level assignment outside runner/tools/ whose value holds a dict, set, tuple,
    list or frozenset literal with two or more of `names` as keys or members: a trait of tools kept by their
    names, which belongs on their classes (runner/tools/base.py `Tool`)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.is_relative_to(root / "tools"):
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign) or node.value is None:
                continue
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            label = ast.unparse(target)
            for inner in ast.walk(node.value):
                members = (inner.keys if isinstance(inner, ast.Dict)
                           else inner.elts if isinstance(inner, ast.Set | ast.Tuple | ast.List) else [])
                strings = {m.value for m in members if isinstance(m, ast.Constant) and isinstance(m.value, str)}
                if len(strings & names) >= 2:
                    found.append((path.relative_to(root.parent).as_posix(), label))
                    break
    return found


def test_no_table_of_tools_by_name_outside_their_classes(tmp_path):
    from runner.subagents.builtin import BUILTIN

    names = {cls.name for cls in BUILTIN}
    # The domains' table (runner/policy/domains.py) names some domains as the tools that use them, in rows, not
    # as members of a literal: a domain is what the policy decides in, not a tool.
    assert tool_name_tables(PACKAGE, names) == []
    planted = tmp_path / "runner"
    (planted / "tools").mkdir(parents=True)
    (planted / "tools" / "ok.py").write_text('ORDER = ("read", "bash")\n')
    (planted / "x.py").write_text('A = {"read": 1, "bash": 2}\nB: frozenset[str] = frozenset({"edit", "write"}) | C\n'
                                  'D = ("read", "other")\ndef f():\n    return ("read", "bash")\n')
    assert tool_name_tables(planted, names) == [("runner/x.py", "A"), ("runner/x.py", "B")]
