"""`policy suggest` rules: commands cut at their arity, and every suggested pattern must match the
command it was suggested for — otherwise pasting it would not let the denied call through."""

from __future__ import annotations

import pytest

from runner.policy.match import compile_pattern
from runner.policy.shell import analyze
from runner.policy.suggest import command_rule, rule_for, why_exact

ARITY_CASES = [
    ("npm run test --watch", "shell:npm run test *"),
    ("git commit -m x", "shell:git commit *"),
    ("docker compose up -d", "shell:docker compose up *"),
    ("ls -la", "shell:ls *"),
    ("FOO=1 make build", "shell:FOO=1 make build *"),  # the policy decides the assignment too
    ("git", "shell:git *"),
    ("make", "shell:make *"),
    ("npm test", "shell:npm test *"),
    ("npm run", "shell:npm run *"),
    ("python -m pytest -q tests", "shell:python -m pytest *"),
    ("gh pr create --title x", "shell:gh pr create *"),
    ("aws s3 cp a s3://b", "shell:aws s3 cp *"),
    ("./gradlew test --info", "shell:./gradlew test *"),
    ("uv run pytest -x", "shell:uv run pytest *"),
    ("bundle exec rspec spec/a_spec.rb", "shell:bundle exec rspec *"),
    ("kubectl get pods -A", "shell:kubectl get *"),
    ("cargo test --release", "shell:cargo test *"),
    ("docker-compose up -d", "shell:docker-compose up *"),
    ("rm -rf /", "shell:rm *"),
    ("git commit -m 'a b'", "shell:git commit *"),
    ("npm run 'my script' --x", "shell:npm run 'my script' *"),
]


# Interpreters and wrappers run whatever they are given: `shell:python *` would allow anything.
EXACT_CASES = [
    "python script.py", "python3 -c 'import os'", "python3.12 x.py", "node app.js", "ruby x.rb", "perl -e 1",
    "php x.php", "bash run.sh", "sh -c 'make'", "zsh x", "dash x", "env FOO=1 make", "xargs rm",
    "sudo apt-get install x", "su -c id", "doas make", "nice make", "nohup ./x", "timeout 5 make", "time make",
    "exec make", "eval make", "command make", "ssh host id", "docker run --rm alpine sh",
    "docker exec -it c sh", "kubectl exec pod -- sh", "uv run python x.py", "poetry run bash",
    "npx node x.js", "bundle exec ruby x.rb", "/usr/bin/python3 x.py", "FOO=1 python x.py",
]


@pytest.mark.parametrize("command", EXACT_CASES)
def test_interpreters_and_wrappers_get_the_exact_command(command):
    analyzed = analyze(command).commands[0]
    rule = command_rule(analyzed)
    assert not rule.endswith(" *"), rule
    assert compile_pattern(rule).matches("shell:" + analyzed), (rule, analyzed)
    assert not compile_pattern(rule).matches("shell:" + analyzed + " && curl x")
    assert why_exact(analyzed)


@pytest.mark.parametrize("command", ["npm run lint", "python -m pytest -q", "git status", "cargo test"])
def test_ordinary_commands_have_no_reason_to_be_exact(command):
    assert why_exact(command) is None


@pytest.mark.parametrize(("command", "rule"), ARITY_CASES, ids=[c for c, _ in ARITY_CASES])
def test_command_rule_cuts_at_arity(command, rule):
    assert command_rule(command) == rule


@pytest.mark.parametrize("command", ["echo \"unterminated", "echo 'a*"])
def test_unsplittable_command_gets_an_exact_rule(command):
    rule = command_rule(command)
    assert not rule.endswith(" *")
    assert compile_pattern(rule).matches("shell:" + command)
    assert not compile_pattern(rule).matches("shell:" + command + " --more")


# The suggested rule must match the command as a run decides it (the analyzed, canonical form).
MATCH_CASES = [c for c, _ in ARITY_CASES if not c.startswith("FOO=")] + [
    "echo [x]", "ls *.py", "git log --format='%H %s'", "cp \"a b\" c", "npm test -- --grep 'a|b'",
    "terraform plan -out x", "make", "git", "pip install -r requirements.txt",
]


@pytest.mark.parametrize("line", MATCH_CASES)
def test_suggested_rule_matches_its_command(line):
    [command] = analyze(line).commands
    target = "shell:" + command
    rule = command_rule(command)
    assert compile_pattern(rule).matches(target), (rule, target)
    assert rule_for("bash", target) == rule


@pytest.mark.parametrize("line", ["FOO=1 make build", 'FOO="a b" make'])
def test_fixed_suggested_rule_with_assignment_matches(line):
    [command] = analyze(line).commands
    assert compile_pattern(command_rule(command)).matches("shell:" + command)


def test_suggested_rule_is_not_wider_than_the_arity():
    rule = compile_pattern(command_rule("git commit -m x"))
    assert rule.matches("shell:git commit --amend")
    assert not rule.matches("shell:git push origin")
    assert not rule.matches("shell:git")


@pytest.mark.parametrize(
    ("domain", "target"),
    [
        ("edit", "workspace:src/a.py"),
        ("read", "fs:/etc/hosts"),
        ("edit", "workspace:a[1].txt"),
        ("read", "workspace:what?.md"),
        ("web_fetch", "url:https://example.com/a?q=*"),
    ],
)
def test_non_commands_stay_exact(domain, target):
    rule = rule_for(domain, target)
    pattern = compile_pattern(rule)
    assert pattern.matches(target)
    assert not pattern.matches(target + "x")
    assert not pattern.matches(target.rsplit("/", 1)[0] + "/other")
