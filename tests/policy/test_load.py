"""Loading policies: shipped files, extends chains, schema errors with positions, --approve."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from runner.policy.decide import decide as _decide
from runner.policy.jsonc import PolicyError
from runner.policy.load import load_policy, parse_approval, shipped_dir, shipped_names
from runner.policy.model import Target


def decide(policy, domain, targets, mode=None):
    """Targets given as strings are targets of the call's own domain."""
    return _decide(policy, domain, [t if isinstance(t, Target) else Target(domain, t) for t in targets], mode)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def load_error(path: Path) -> PolicyError:
    with pytest.raises(PolicyError) as info:
        load_policy(str(path))
    return info.value


def rule_triples(policy) -> list[tuple[str, str, str]]:
    return [(r.domain, r.pattern.raw, r.decision) for r in policy.rules]


def test_shipped_names_include_default_and_strict():
    assert {"default", "strict"} <= set(shipped_names())


def test_default_policy_loads():
    policy = load_policy("default")
    assert policy.mode == "agent"
    assert Path(policy.path) == shipped_dir() / "default.jsonc"
    assert policy.files == [policy.path]
    assert decide(policy, "read", ["workspace:src/a.py"]).effective == "allow"
    assert decide(policy, "edit", ["workspace:src/a.py"]).effective == "allow"
    assert decide(policy, "edit", ["fs:/etc/hosts"]).decision == "deny"
    assert decide(policy, "bash", ["shell:ls"]).decision == "ask"
    # The default policy: http(s) fetches allowed (the fetch tool guards private addresses), other schemes ask.
    assert decide(policy, "web_fetch", ["url:https://example.com/"]).decision == "allow"
    assert decide(policy, "web_fetch", ["url:ftp://example.com/"]).decision == "ask"
    assert decide(policy, "read", ["workspace:.env"]).decision == "ask"


def test_strict_policy_loads():
    policy = load_policy("strict")
    assert policy.mode == "agent"
    assert decide(policy, "read", ["workspace:a"]).effective == "allow"
    assert decide(policy, "read", ["fs:/etc/hosts"]).decision == "deny"
    assert decide(policy, "edit", ["workspace:a"]).decision == "deny"
    assert decide(policy, "bash", ["shell:ls"]).decision == "deny"


def test_unknown_shipped_name():
    with pytest.raises(PolicyError) as info:
        load_policy("nosuchpolicy")
    assert "no shipped policy named 'nosuchpolicy'" in info.value.message
    assert "default" in info.value.message


def test_rule_source_index_and_line(tmp_path):
    path = write(tmp_path / "p.jsonc", """{
  "permission": {
    "rules": [
      { "domain": "read", "pattern": "**", "decision": "allow" },

      { "domain": "bash", "pattern": "shell:ls", "decision": "deny" },
    ],
  },
}
""")
    policy = load_policy(str(path))
    assert [(r.source, r.index, r.line) for r in policy.rules] == [(str(path), 0, 4), (str(path), 1, 6)]


# --- extends -----------------------------------------------------------------

BASE = """{
  "mode": "full_access",
  "budget": { "maxTurns": 5, "timeoutSeconds": 60 },
  "truncation": { "maxLines": 100 },
  "permission": {
    "maxDenials": 3,
    "rules": [
      { "domain": "*", "pattern": "**", "decision": "deny" },
      { "domain": "bash", "pattern": "shell:git *", "decision": "allow" },
    ],
  },
}
"""

CHILD = """{
  "extends": "./base/base.jsonc",
  "budget": { "maxTurns": 9 },
  "permission": {
    "rules": [
      { "domain": "bash", "pattern": "shell:git push *", "decision": "deny" },
    ],
  },
}
"""


def test_extends_base_rules_first_child_wins(tmp_path):
    base = write(tmp_path / "base" / "base.jsonc", BASE)
    child = write(tmp_path / "child.jsonc", CHILD)
    policy = load_policy(str(child))
    assert rule_triples(policy) == [
        ("*", "**", "deny"), ("bash", "shell:git *", "allow"), ("bash", "shell:git push *", "deny"),
    ]
    assert [r.source for r in policy.rules] == [str(base), str(base), str(child)]
    assert policy.files == [str(base), str(child)]
    assert policy.path == str(child)
    assert decide(policy, "bash", ["shell:git status"]).decision == "allow"
    assert decide(policy, "bash", ["shell:git push origin"]).decision == "deny"


def test_extends_inherits_mode_unless_overridden(tmp_path):
    write(tmp_path / "base" / "base.jsonc", BASE)
    assert load_policy(str(write(tmp_path / "child.jsonc", CHILD))).mode == "full_access"
    own = CHILD.replace('"budget"', '"mode": "agent",\n  "budget"')
    assert load_policy(str(write(tmp_path / "own.jsonc", own))).mode == "agent"


def test_extends_sections_are_deep_merged(tmp_path):
    write(tmp_path / "base" / "base.jsonc", BASE)
    policy = load_policy(str(write(tmp_path / "child.jsonc", CHILD)))
    assert policy.sections["budget"] == {"maxTurns": 9, "timeoutSeconds": 60}
    assert policy.sections["truncation"] == {"maxLines": 100}
    assert policy.sections["permission"] == {"maxDenials": 3}


def test_extends_three_levels_merge_in_order(tmp_path):
    write(tmp_path / "a.jsonc", '{ "budget": { "maxTurns": 1, "timeoutSeconds": 10, "maxTokens": 100 } }')
    write(tmp_path / "b.jsonc", '{ "extends": "a.jsonc", "budget": { "maxTurns": 2, "timeoutSeconds": 20 } }')
    c = write(tmp_path / "c.jsonc", '{ "extends": "b.jsonc", "budget": { "maxTurns": 3 } }')
    policy = load_policy(str(c))
    assert policy.sections["budget"] == {"maxTurns": 3, "timeoutSeconds": 20, "maxTokens": 100}
    assert [Path(f).name for f in policy.files] == ["a.jsonc", "b.jsonc", "c.jsonc"]


def test_extends_relative_to_the_extending_file_not_cwd(tmp_path, monkeypatch):
    write(tmp_path / "conf" / "base.jsonc", '{ "budget": { "maxTurns": 4 } }')
    child = write(tmp_path / "conf" / "child.jsonc", '{ "extends": "base.jsonc" }')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert load_policy(str(child)).sections["budget"] == {"maxTurns": 4}


def test_extends_shipped_name(tmp_path):
    child = write(tmp_path / "p.jsonc", """{
  "extends": "strict",
  "permission": { "rules": [ { "domain": "bash", "pattern": "shell:make *", "decision": "allow" } ] },
}""")
    policy = load_policy(str(child))
    assert policy.files[0] == str(shipped_dir() / "strict.jsonc")
    assert rule_triples(policy)[-1] == ("bash", "shell:make *", "allow")
    assert decide(policy, "bash", ["shell:make test"]).decision == "allow"
    assert decide(policy, "bash", ["shell:rm x"]).decision == "deny"


def test_extends_cycle(tmp_path):
    a = write(tmp_path / "a.jsonc", '{ "extends": "./b.jsonc" }')
    b = write(tmp_path / "b.jsonc", '{ "extends": "./a.jsonc" }')
    err = load_error(a)
    assert err.message == f"extends cycle: {a} -> {b} -> {a}"


def test_extends_self_is_a_cycle(tmp_path):
    a = write(tmp_path / "a.jsonc", '{ "extends": "a.jsonc" }')
    assert load_error(a).message.startswith("extends cycle:")


def test_extends_missing_file_points_at_extends_value(tmp_path):
    p = write(tmp_path / "p.jsonc", '{\n  "mode": "agent",\n  "extends":   "./nope.jsonc"\n}\n')
    err = load_error(p)
    assert (err.file, err.line, err.col) == (str(p), 3, 16)
    assert err.message == f"extends: no such file {tmp_path / 'nope.jsonc'}"


def test_extends_unknown_shipped_name_points_at_extends_value(tmp_path):
    p = write(tmp_path / "p.jsonc", '{\n  "extends": "nosuch"\n}\n')
    err = load_error(p)
    assert (err.line, err.col) == (2, 14)
    assert "no shipped policy named 'nosuch'" in err.message


def test_error_in_base_names_the_base_file(tmp_path):
    base = write(tmp_path / "base.jsonc", '{\n  "mode": "yolo"\n}\n')
    child = write(tmp_path / "child.jsonc", '{ "extends": "base.jsonc" }')
    err = load_error(child)
    assert (err.file, err.line, err.col) == (str(base), 2, 11)


def test_missing_policy_file(tmp_path):
    err = load_error(tmp_path / "absent.jsonc")
    assert (err.line, err.col) == (1, 1)
    assert err.message.startswith("cannot read policy:")


# --- schema errors -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "col", "message"),
    [
        # Unknown keys point at the key.
        ('{\n  "mode": "agent",\n  "bogus": 1\n}\n', 3, 3, "unknown key 'bogus' in policy"),
        ('{\n  "budget": {\n    "maxTurns": 3,\n    "maxTurnz": 4\n  }\n}\n', 4, 5, "unknown key 'maxTurnz' in budget"),
        ('{\n  "permission": {\n    "rules": [\n'
         '      { "domain": "read", "pattern": "**", "decision": "allow", "x": 1 }\n    ]\n  }\n}\n',
         4, 65, "unknown key 'x' in permission.rules[0]"),
        # Bad values point at the value.
        ('{\n  "permission": {\n    "rules": [\n'
         '      { "domain": "read", "pattern": "**", "decision": "maybe" }\n    ]\n  }\n}\n',
         4, 56, "permission.rules[0].decision: 'maybe' is not one of ['allow', 'deny', 'ask']"),
        ('{\n  "mode":  "yolo"\n}\n', 2, 12, "mode: 'yolo' is not one of ['agent', 'full_access']"),
        ('{\n  "permission": { "rules": [\n    { "domain": "shell", "pattern": "**", "decision": "deny" }\n  ] }\n}',
         3, 17, "permission.rules[0].domain: 'shell' is not one of"),
        ('{\n  "budget": { "maxTurns": "ten" }\n}\n', 2, 27, "budget.maxTurns: 'ten' is not of type 'integer'"),
        ('{\n  "budget": { "maxTurns": 0 }\n}\n', 2, 27, "budget.maxTurns: 0 is less than the minimum of 1"),
        # A missing required property points at the object that lacks it.
        ('{\n  "permission": {\n    "rules": [\n      { "domain": "read", "pattern": "**" }\n    ]\n  }\n}\n',
         4, 7, "permission.rules[0]: 'decision' is a required property"),
    ],
    ids=["unknown-top", "unknown-nested", "unknown-in-rule", "bad-decision", "bad-mode", "bad-domain",
         "wrong-type", "below-minimum", "missing-required"],
)
def test_schema_errors_are_located(tmp_path, text, line, col, message):
    p = write(tmp_path / "p.jsonc", text)
    err = load_error(p)
    assert (err.file, err.line, err.col) == (str(p), line, col)
    assert err.message.startswith(message)


def test_first_schema_error_in_file_order_is_reported(tmp_path):
    # jsonschema reports errors in schema order; the user should see the earliest in the file.
    # (the schema lists `mode` before `budget`; the file has them the other way round).
    p = write(tmp_path / "p.jsonc", '{\n  "budget": { "maxTurns": -1 },\n  "mode": "yolo"\n}\n')
    err = load_error(p)
    assert (err.line, err.col) == (2, 27)
    assert err.message.startswith("budget.maxTurns:")


def test_unknown_key_lists_allowed_keys(tmp_path):
    err = load_error(write(tmp_path / "p.jsonc", '{ "truncation": { "lines": 3 } }'))
    assert err.message == ("unknown key 'lines' in truncation: did you mean 'maxLines'? "
                           "(expected one of: maxBytes, maxLines, preset, ttlDays)")
    err = load_error(write(tmp_path / "p.jsonc", '{ "truncation": { "zzz": 3 } }'))
    assert err.message == "unknown key 'zzz' in truncation (expected one of: maxBytes, maxLines, preset, ttlDays)"


def test_non_object_policy(tmp_path):
    err = load_error(write(tmp_path / "p.jsonc", "[1, 2]"))
    assert (err.line, err.col, err.message) == (1, 1, "a policy must be a JSON object")


def test_syntax_error_surfaces_from_load(tmp_path):
    err = load_error(write(tmp_path / "p.jsonc", '{\n  "mode": "agent"\n  "x": 1\n}'))
    assert (err.line, err.col) == (3, 3)
    assert err.message.startswith("invalid JSONC:")


def test_bad_regex_in_rule_points_at_pattern(tmp_path):
    p = write(tmp_path / "p.jsonc", """{
  "permission": {
    "rules": [
      { "domain": "read", "pattern": "**", "decision": "allow" },
      { "domain": "bash",
        "pattern": "regex:(", "decision": "deny" },
    ],
  },
}
""")
    err = load_error(p)
    assert (err.line, err.col) == (6, 20)
    assert err.message.startswith("invalid regex '('")


# --- --approve ---------------------------------------------------------------


@pytest.mark.parametrize("text", ["nope", "bash:", ":shell:ls", "shell:ls", "Bash:shell:ls", "edits:**", ""])
def test_parse_approval_rejects_malformed(text):
    with pytest.raises(PolicyError) as info:
        parse_approval(text, 0)
    err = info.value
    assert (err.file, err.line, err.col) == ("--approve", 1, 1)
    assert str(err) == f"--approve {shlex.quote(text)}: expected DOMAIN:PATTERN (e.g. bash:shell:npm test)"
    assert ":1:1" not in str(err)


def test_parse_approval_bad_regex_points_after_domain():
    with pytest.raises(PolicyError) as info:
        parse_approval("bash:regex:(", 0)
    assert (info.value.line, info.value.col) == (1, 6)
    assert "invalid regex" in info.value.message
    assert str(info.value) == f"--approve 'bash:regex:(': {info.value.message}"


@pytest.mark.parametrize(
    ("text", "domain", "pattern"),
    [
        ("bash:shell:npm test", "bash", "shell:npm test"),
        ("*:**", "*", "**"),
        ("read:fs:/etc/hosts", "read", "fs:/etc/hosts"),
        ("web_fetch:url:https://example.com/**", "web_fetch", "url:https://example.com/**"),
    ],
)
def test_parse_approval_makes_an_allow_rule(text, domain, pattern):
    rule = parse_approval(text, 7)
    assert (rule.domain, rule.pattern.raw, rule.decision, rule.source, rule.index) == (
        domain, pattern, "allow", "--approve", 7)


def test_approvals_come_last_and_win():
    plain = load_policy("strict")
    approved = load_policy("strict", ["bash:shell:npm test", "edit:workspace:src/**"])
    assert rule_triples(approved)[: len(plain.rules)] == rule_triples(plain)
    assert [(r.source, r.index) for r in approved.rules[-2:]] == [("--approve", 0), ("--approve", 1)]
    assert decide(plain, "bash", ["shell:npm test"]).decision == "deny"
    assert decide(approved, "bash", ["shell:npm test"]).decision == "allow"
    assert decide(approved, "bash", ["shell:npm install"]).decision == "deny"
    assert decide(approved, "edit", ["workspace:src/a.py"]).decision == "allow"


def test_approve_error_from_load_policy():
    with pytest.raises(PolicyError) as info:
        load_policy("default", ["bash:shell:ok", "garbage"])
    assert info.value.file == "--approve"


# --- the resolved snapshot ---------------------------------------------------------


def test_snapshot_has_rules_with_source_and_index(tmp_path):
    base = write(tmp_path / "base" / "base.jsonc", BASE)
    child = write(tmp_path / "child.jsonc", CHILD)
    resolved = load_policy(str(child), ["bash:shell:make"]).resolved
    assert resolved["mode"] == "full_access"
    assert resolved["files"] == [str(base), str(child)]
    assert resolved["budget"] == {"maxTurns": 9, "timeoutSeconds": 60}
    assert resolved["permission"]["maxDenials"] == 3
    assert resolved["permission"]["rules"] == [
        {"domain": "*", "pattern": "**", "decision": "deny", "source": str(base), "index": 0},
        {"domain": "bash", "pattern": "shell:git *", "decision": "allow", "source": str(base), "index": 1},
        {"domain": "bash", "pattern": "shell:git push *", "decision": "deny", "source": str(child), "index": 0},
        {"domain": "bash", "pattern": "shell:make", "decision": "allow", "source": "--approve", "index": 0},
    ]


def test_snapshot_omits_non_section_keys(tmp_path):
    p = write(tmp_path / "p.jsonc", '{ "$schema": "x", "description": "d", "extends": "default" }')
    resolved = load_policy(str(p)).resolved
    assert not {"$schema", "description", "extends"} & set(resolved)
    assert resolved["mode"] == "agent"


def test_a_regex_re2_cannot_run_is_a_located_error(tmp_path):
    from runner.policy.load import check_policy

    rule = '    { "domain": "bash", "pattern": "regex:(?=x)y", "decision": "deny" },'
    p = write(tmp_path / "p.jsonc", '{\n  "permission": { "rules": [\n' + rule + '\n  ] },\n}\n')
    col = rule.index('"regex:') + 1
    [err] = check_policy(str(p))
    assert (err.line, err.col) == (3, col)
    assert err.message.startswith("invalid regex '(?=x)y': invalid perl operator") and "RE2" in err.message
    assert (load_error(p).line, load_error(p).col) == (3, col)
    with pytest.raises(PolicyError) as info:
        parse_approval("bash:regex:(a)\\1", 0)
    assert (info.value.line, info.value.col) == (1, 6)


def test_a_5000_rule_policy_loads_fast(tmp_path):
    from bench.bench_policy import policy_text

    p = write(tmp_path / "big.jsonc", policy_text(5000))
    policy = load_policy(str(p))  # how fast: bench/bench_policy.py (a wall-clock bound here flakes under load)
    assert len(policy.rules) == 5000
    assert policy.rules[-1].line == 5000 + 5  # every rule still knows its line


def test_every_shipped_policy_passes_the_schema():
    """A shipped policy is not schema-checked at every start (jsonschema costs ~35 ms): it is checked here."""
    from runner.policy.load import check_policy

    for name in shipped_names():
        assert check_policy(name) == [], name


def test_schema_errors_skip_plain_valid_rules_and_report_what_a_full_walk_reports(monkeypatch):
    """The rules a plain check passes are not walked by jsonschema (the 5,000-rule load); every error is still
    the one a full walk reports, at the rule's own place in the file."""
    from runner.policy import load as load_module
    from runner.policy.jsonc import parse

    good = '{"domain": "read", "pattern": "workspace:**", "decision": "allow"}'
    bad = ['{"domain": "read", "pattern": "", "decision": "allow"}', '{"domain": "reed", "pattern": "x", '
           '"decision": "allow"}', '{"domain": "bash", "pattern": "shell:ls", "decision": "maybe"}',
           '{"domain": "bash", "pattern": "shell:ls", "decision": "allow", "comentt": "x"}', '"not a rule"',
           '{"pattern": "x", "decision": "deny"}']
    rules = [good] * 3 + [bad[0], good, bad[1], good, good, bad[2], bad[3], good, bad[4], bad[5], good]
    text = '{\n  "permission": {"rules": [\n    ' + ",\n    ".join(rules) + '\n  ]}\n}\n'
    located = parse(text, "p.jsonc")
    fast = load_module.schema_errors(located, "p.jsonc")
    assert load_module._checked_rules_removed(located.value)[1] == [3, 5, 8, 9, 11, 12]
    monkeypatch.setattr(load_module, "_plain_rule_check", lambda: None)  # the full walk, every rule
    full = load_module.schema_errors(located, "p.jsonc")
    assert [(e.line, e.col, str(e)) for e in fast] == [(e.line, e.col, str(e)) for e in full]
    assert len(fast) == 6 and {e.line for e in fast} == {6, 8, 11, 12, 14, 15}


def test_a_hard_limit_on_a_shipped_policy_is_recorded_without_the_install_path(tmp_path):
    """Issue 42, item 10: policy.json names the shipped directory by a placeholder (so a shipped recording names
    no path of the machine it was made on) and reading it back protects this machine's shipped file again."""
    from runner.policy.limits import hard_limit_rules
    from runner.policy.load import SHIPPED_DIR, policy_from_snapshot, portable_snapshot

    ws = tmp_path / "ws"
    policy = load_policy("default")
    policy = policy.with_rules(hard_limit_rules(ws, [Path(f) for f in policy.files]))
    written = portable_snapshot(policy.resolved, ws)
    limits = [r["pattern"] for r in written["permission"]["rules"] if r["source"] == "<hard limit>"]
    assert limits[0] == f"regex:fs:{SHIPPED_DIR}/default\\.jsonc(/.*)?"
    assert str(shipped_dir()) not in json.dumps(written)
    back = policy_from_snapshot(written, "default", base=ws)
    shipped = str(shipped_dir().resolve() / "default.jsonc")
    def deciding(target):
        rule = decide(back, "edit", [target]).deciding.rule
        return rule and (rule.source, rule.decision)

    assert deciding(f"fs:{shipped}") == ("<hard limit>", "deny")
    assert deciding(f"fs:{shipped}.other") != ("<hard limit>", "deny")


def test_a_hard_limit_on_the_users_config_directory_is_recorded_without_the_home(tmp_path, monkeypatch):
    """The user's config directory (issue 46 item 4) is protected like a shipped policy and recorded the same way:
    a placeholder in policy.json, this machine's directory (its XDG_CONFIG_HOME now) when read back."""
    from runner.policy.limits import hard_limit_rules
    from runner.policy.load import USER_CONFIG_DIR, policy_from_snapshot, portable_snapshot, user_config_dir

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "made-on"))
    ws = tmp_path / "ws"
    policy = load_policy("default")
    policy = policy.with_rules(hard_limit_rules(ws, [user_config_dir()]))
    written = portable_snapshot(policy.resolved, ws)
    assert "made-on" not in json.dumps(written)
    assert next(r["pattern"] for r in written["permission"]["rules"] if r["source"] == "<hard limit>") == (
        f"regex:fs:{USER_CONFIG_DIR}(/.*)?")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "read-on"))
    back = policy_from_snapshot(written, "default", base=ws)
    rule = decide(back, "edit", [f"fs:{tmp_path / 'read-on' / 'agent-run' / 'config.toml'}"]).deciding.rule
    assert rule is not None and (rule.source, rule.decision) == ("<hard limit>", "deny")
