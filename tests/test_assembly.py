"""One agent, built in one place (docs/architecture.md): what the shape of runner/ must keep, checked on its source.

- no function outside runner/cli/ takes more than 8 parameters (a longer list is a value waiting to be named);
- no dataclass field or parameter of the engine, the run's assembly, subagents, the record or the tool contract is
  annotated exactly `Any` or `Callable[..., Any]` (a collaborator is a Protocol in the floor that consumes it);
- a child agent is built by engine/build.py's factory: `Delegation.start` builds no CallEnv, ToolContext, guard or
  registry itself;
- a summary.json key is declared through the run's lifecycle, never written into a bag of extras;
- one way to stop: no SIGALRM, no setitimer.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "runner"
MAX_PARAMETERS = 8
TYPED = ("engine", "run", "subagents", "record")


def parameter_count(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    args = node.args
    names = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    return len([n for n in names if n not in ("self", "cls")]) + bool(args.vararg) + bool(args.kwarg)


def long_signatures(root: Path = PACKAGE) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        if "cli" in path.relative_to(root).parts[:1]:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and parameter_count(node) > MAX_PARAMETERS:
                found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name} ({parameter_count(node)})")
    return found


def any_slots(files: list[Path]) -> list[str]:
    found = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            annotated: list[tuple[str, ast.expr | None]] = []
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                a = node.args
                annotated += [(p.arg, p.annotation) for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
                annotated += [(p.arg, p.annotation) for p in (a.vararg, a.kwarg) if p is not None]
            elif isinstance(node, ast.ClassDef):
                annotated += [(ast.unparse(b.target), b.annotation) for b in node.body if isinstance(b, ast.AnnAssign)]
            found += [f"{path.name}:{node.lineno} {name}" for name, ann in annotated
                      if ann is not None and ast.unparse(ann) in ("Any", "Callable[..., Any]")]
    return found


def test_the_parameter_check_counts_every_kind(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def f(a, b, /, c, *d, e, f, g, h, **i): ...\ndef ok(self, a, b): ...\n")
    assert long_signatures(tmp_path) == [f"{tmp_path.name}/m.py:1 f (9)"]


def test_no_function_outside_the_cli_takes_more_than_eight_parameters() -> None:
    assert long_signatures() == []


def test_the_any_check_finds_a_field_and_a_parameter(tmp_path: Path) -> None:
    planted = tmp_path / "p.py"
    planted.write_text("class C:\n    x: Any\n    y: dict[str, Any]\n\ndef f(a: Callable[..., Any], b: int): ...\n")
    assert [s.split(" ")[-1] for s in any_slots([planted])] == ["x", "a"]


def test_no_collaborator_of_the_engine_is_typed_any() -> None:
    files = [p for d in TYPED for p in sorted((PACKAGE / d).rglob("*.py"))] + [PACKAGE / "tools" / "base.py"]
    assert any_slots(files) == []


def test_a_child_is_built_by_the_factory() -> None:
    tree = ast.parse((PACKAGE / "subagents" / "delegate.py").read_text(encoding="utf-8"))
    start = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "start")
    called = {n.func.id for n in ast.walk(start) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert "build_agent" in called
    assert not called & {"CallEnv", "ToolContext", "LoopGuard", "DenialGuard", "Registry", "bind_hooks", "Limits"}


def test_summary_keys_are_declared_through_the_lifecycle() -> None:
    offenders = [f"{p.relative_to(PACKAGE.parent)}:{i}" for p in sorted(PACKAGE.rglob("*.py"))
                 for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
                 if "rec.extra" in line or ".finishers" in line or ".closers" in line or ".consumers" in line]
    assert offenders == []


def test_one_way_to_stop_no_alarm_signal() -> None:
    """A deadline is wall-clock and the same on every thread (the Cancel, runner/engine/cancel.py): SIGALRM is the
    main thread's only."""
    offenders = [f"{p.relative_to(PACKAGE.parent)}:{i}" for p in sorted(PACKAGE.rglob("*.py"))
                 for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
                 if "SIGALRM" in line or "setitimer" in line]
    assert offenders == []
