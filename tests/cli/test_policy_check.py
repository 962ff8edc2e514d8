"""`agent-run policy check` through the real click CLI: exit 0 for good files, exit 2 and one
`file:line:col: message` line per problem, in file order, for broken ones."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from runner.cli.group import cli
from runner.policy.load import shipped_dir, shipped_names

SHIPPED = ["default", "strict", "ci", "full-access"]


def check(*files: str):
    return CliRunner().invoke(cli, ["policy", "check", *files])


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def col(line: str, needle: str) -> int:
    return line.index(needle) + 1


def test_the_four_shipped_policies_are_all_shipped():
    assert set(SHIPPED) <= set(shipped_names())


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_policy_by_name_is_ok(name):
    result = check(name)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    path = shipped_dir() / f"{name}.jsonc"  # relative to here when it is inside (this checkout), else absolute
    shown = path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path
    assert result.stderr.startswith(f"{shown}: ok (")
    assert ("mode full_access" if name == "full-access" else "mode agent") in result.stderr


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_policy_by_path_is_ok(name):
    result = check(str(shipped_dir() / f"{name}.jsonc"))
    assert result.exit_code == 0, result.output


def test_all_shipped_at_once():
    result = check(*SHIPPED)
    assert result.exit_code == 0
    assert len(result.stderr.strip().splitlines()) == 4
    assert all(": ok (" in line for line in result.stderr.strip().splitlines())


def test_ci_reports_inherited_rules():
    # ci extends default: its rule count includes default's.
    default, ci = check("default").stderr, check("ci").stderr
    n = int(default.split("(")[1].split()[0])
    m = int(ci.split("(")[1].split()[0])
    assert m > n > 0


# The problems below are in file order; the checker finds them in a different order (schema
# errors in schema order, then regex errors), so sorting is what makes this pass.
SEVERAL = """{
  "permission": {
    "rules": [
      { "domain": "bash", "pattern": "regex:([a-z]+", "decision": "deny" },
      { "domain": "read", "pattern": "**", "decision": "alow" },
      { "domain": "edit", "pattern": "workspace:**" },
    ],
  },
  "budgett": { "maxTurns": 3 },
}
"""


def test_several_errors_one_line_each_in_file_order(tmp_path):
    p = write(tmp_path / "bad.jsonc", SEVERAL)
    src = SEVERAL.splitlines()
    result = check(str(p))
    assert result.exit_code == 2
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 4, lines
    expected = [
        (4, col(src[3], '"regex:'), "invalid regex '([a-z]+': missing ), unterminated subpattern"),
        (5, col(src[4], '"alow"'), "permission.rules[1].decision: 'alow' is not one of ['allow', 'deny', 'ask']"),
        (6, col(src[5], "{"), "permission.rules[2]: 'decision' is a required property"),
        (9, col(src[8], '"budgett"'), "unknown key 'budgett' in policy: did you mean 'budget'? (expected one of: "),
    ]
    for line, (row, column, message) in zip(lines, expected, strict=True):
        assert line.startswith(f"{p}:{row}:{column}: {message}"), line
    # Each line is `file:line:col: message`, and the positions increase.
    positions = [tuple(int(x) for x in line[len(str(p)) + 1:].split(":")[:2]) for line in lines]
    assert positions == sorted(positions)


def test_errors_of_several_files_and_good_files_together(tmp_path):
    bad = write(tmp_path / "bad.jsonc", SEVERAL)
    result = check("default", str(bad), "strict")
    assert result.exit_code == 2
    assert len(result.stdout.strip().splitlines()) == 4
    assert all(line.startswith(f"{bad}:") for line in result.stdout.strip().splitlines())
    assert result.stderr.count(": ok (") == 2


def test_invalid_jsonc(tmp_path):
    p = write(tmp_path / "syntax.jsonc", '{\n  // a comment is fine, a missing comma is not\n  "mode": "agent"\n'
                                         '  "permission": {}\n}\n')
    result = check(str(p))
    assert result.exit_code == 2
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"{p}:4:3: invalid JSONC:"), lines[0]


def test_jsonc_comments_and_trailing_commas_are_fine(tmp_path):
    p = write(tmp_path / "ok.jsonc", '/* block */\n{\n  // line\n  "mode": "agent",\n  "permission": {\n'
                                     '    "rules": [ { "domain": "read", "pattern": "**", "decision": "allow", }, ],\n'
                                     '  },\n}\n')
    result = check(str(p))
    assert result.exit_code == 0, result.output
    assert "ok (1 rules, mode agent)" in result.stderr


def test_not_an_object(tmp_path):
    p = write(tmp_path / "list.jsonc", "[]")
    result = check(str(p))
    assert result.exit_code == 2
    assert result.stdout.strip() == f"{p}:1:1: a policy must be a JSON object"


def test_extends_cycle(tmp_path):
    a = write(tmp_path / "a.jsonc", '{ "extends": "./b.jsonc" }')
    b = write(tmp_path / "b.jsonc", '{\n  "extends": "a.jsonc"\n}\n')
    result = check(str(a))
    assert result.exit_code == 2
    assert result.stdout.strip() == f"{a}:1:1: extends cycle: {a} -> {b} -> {a}"
    other = check(str(b))
    assert other.exit_code == 2
    assert other.stdout.strip() == f"{b}:1:1: extends cycle: {b} -> {a} -> {b}"


def test_error_in_a_base_names_the_base(tmp_path):
    base = write(tmp_path / "base.jsonc", '{\n  "mode": "yolo"\n}\n')
    child = write(tmp_path / "child.jsonc", '{ "extends": "base.jsonc" }')
    result = check(str(child))
    assert result.exit_code == 2
    assert result.stdout.strip().startswith(f"{base}:2:11: mode: 'yolo' is not one of")


def test_missing_file(tmp_path):
    missing = tmp_path / "absent.jsonc"
    result = check(str(missing))
    assert result.exit_code == 2
    line = result.stdout.strip()
    assert line.startswith(f"{missing}:1:1: cannot read policy:"), line
    assert "No such file" in line


def test_missing_extends_target(tmp_path):
    p = write(tmp_path / "p.jsonc", '{\n  "extends": "./gone.jsonc"\n}\n')
    result = check(str(p))
    assert result.exit_code == 2
    assert result.stdout.strip() == f"{p}:2:14: extends: no such file {tmp_path / 'gone.jsonc'}"


def test_unknown_shipped_name():
    result = check("no-such-policy")
    assert result.exit_code == 2
    assert "no shipped policy named 'no-such-policy'" in result.stdout


def test_no_file_is_a_usage_error():
    result = check()
    assert result.exit_code == 2
    assert "Missing argument" in result.output


def test_policy_files_print_relative_to_where_they_are_run(tmp_path, monkeypatch):
    """`policy check` (relative to the current directory) and `policy explain` (to --workspace) name a policy file
    inside as the rest of the CLI names paths, not by its absolute path (issue 42, item 10)."""
    monkeypatch.chdir(tmp_path)
    good = write(tmp_path / "conf" / "good.jsonc",
                 '{\n  "extends": "default",\n  "permission": {"rules": [\n'
                 '    {"domain": "bash", "pattern": "ls", "decision": "allow"}]}\n}\n')
    bad = write(tmp_path / "conf" / "bad.jsonc", '{"mode": "nope"}\n')
    result = check(str(good), str(bad))
    assert result.stderr.startswith("conf/good.jsonc: ok (")
    assert result.stdout.startswith("conf/bad.jsonc:1:"), result.stdout
    explained = CliRunner().invoke(cli, ["policy", "explain", "--policy", str(good), "--workspace", str(tmp_path),
                                         "bash", "ls"])
    assert explained.exit_code == 0, explained.output
    assert "rule: ls -> allow  (conf/good.jsonc:4, rule 0)" in explained.stdout
    assert str(tmp_path) not in explained.stdout
