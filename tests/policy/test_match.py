"""Pattern matching: path globs for path targets, text globs for commands, full-match regexes."""

from __future__ import annotations

import subprocess
import sys

import pytest

from runner.policy.match import compile_pattern, split_target


def check(pattern: str, target: str, expected: bool) -> None:
    assert compile_pattern(pattern).matches(target) is expected, f"{pattern!r} vs {target!r}"


@pytest.mark.parametrize(
    ("pattern", "target", "expected"),
    [
        # `*` stays within one path segment.
        ("workspace:*", "workspace:a.py", True),
        ("workspace:*", "workspace:src/a.py", False),
        ("workspace:src/*", "workspace:src/a.py", True),
        ("workspace:src/*", "workspace:src/pkg/a.py", False),
        # `**` spans any depth, including none.
        ("workspace:**", "workspace:src/a/b.py", True),
        ("workspace:**/*.py", "workspace:a.py", True),
        ("workspace:**/*.py", "workspace:x/y/a.py", True),
        ("workspace:**/*.py", "workspace:x/y/a.pyc", False),
        ("workspace:src/**", "workspace:src/a/b", True),
        ("workspace:src/**", "workspace:srcx/a", False),
        # `?` is exactly one character and never a separator.
        ("workspace:?.py", "workspace:a.py", True),
        ("workspace:?.py", "workspace:ab.py", False),
        ("workspace:a?b", "workspace:a/b", False),
        # Dotfiles are not special: a policy that allows `**` allows `.env`.
        ("workspace:*", "workspace:.env", True),
        ("workspace:**", "workspace:.git/config", True),
        ("workspace:**/.env", "workspace:deep/dir/.env", True),
        ("workspace:.git/**", "workspace:.git/hooks/pre-commit", True),
        # fs: targets are absolute paths with the same glob rules.
        ("fs:/etc/*", "fs:/etc/hosts", True),
        ("fs:/etc/*", "fs:/etc/ssl/cert.pem", False),
        ("fs:/etc/**", "fs:/etc/ssl/cert.pem", True),
        ("fs:/tmp/**", "fs:/etc/passwd", False),
    ],
)
def test_path_globs(pattern, target, expected):
    check(pattern, target, expected)


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [("workspace:**", True), ("**", True), ("workspace:*", False), ("workspace:src/**", False)],
)
def test_workspace_root(pattern, expected):
    # The root is `workspace:.`, which matches as the empty relative path.
    check(pattern, "workspace:.", expected)


def test_workspace_root_literal_pattern_matches_root_target():
    check("workspace:.", "workspace:.", True)


@pytest.mark.parametrize(
    ("pattern", "target", "expected"),
    [
        # In commands `*` spans anything, slashes included.
        ("shell:*", "shell:rm -rf /", True),
        ("shell:cat *", "shell:cat /etc/passwd", True),
        ("shell:*.sh", "shell:./scripts/run.sh", True),
        ("shell:npm test", "shell:npm test", True),
        ("shell:npm test", "shell:npm test --watch", False),
        ("shell:npm test", "shell:npm testing", False),
        ("shell:ls ?", "shell:ls a", True),
        ("shell:ls ?", "shell:ls ab", False),
        # `git *` also covers the bare command, but not another command sharing the prefix.
        ("shell:git *", "shell:git", True),
        ("shell:git *", "shell:git status", True),
        ("shell:git *", "shell:git log --oneline -- a/b", True),
        ("shell:git *", "shell:gitk", False),
        ("shell:git *", "shell:github-cli", False),
        ("shell:git*", "shell:gitk", True),
        ("query:weather *", "query:weather", True),
        ("query:weather *", "query:weather in Paris", True),
        ("shell:.*", "shell:.hidden", True),
    ],
)
def test_text_globs(pattern, target, expected):
    check(pattern, target, expected)


@pytest.mark.parametrize(
    ("pattern", "target", "expected"),
    [
        # No scheme: applies to any target, with that target's glob semantics.
        ("**", "fs:/etc/hosts", True),
        ("**", "workspace:a/b", True),
        ("**", "shell:rm -rf /", True),
        ("*", "shell:rm -rf /", True),
        ("*", "fs:/etc/hosts", True),  # a lone `*` is everything (test_a_lone_star_matches_every_target)
        ("git *", "shell:git", True),
        ("git *", "query:git log", True),
        ("src/*.py", "workspace:src/a.py", True),
        # With a scheme: only that scheme.
        ("workspace:**", "fs:/etc/hosts", False),
        ("fs:**", "workspace:a", False),
        ("shell:*", "workspace:a", False),
        ("shell:*", "query:a", False),
        ("query:*", "shell:a", False),
        ("url:https://**", "url:https://example.com/a/b", True),
        ("url:https://**", "shell:https://example.com", False),
    ],
)
def test_scheme_scoping(pattern, target, expected):
    check(pattern, target, expected)


@pytest.mark.parametrize(
    "target",
    ["workspace:a.txt", "workspace:notes/a.txt", "workspace:.", "workspace:.git/config", "fs:/etc/hosts", "fs:/",
     "shell:rm -rf /", "query:a b", "url:https://example.com/a/b", "mcp:github/create_issue", "agent:reviewer",
     "net:pypi.org:443", "plain/rest"],
)
def test_a_lone_star_matches_every_target(target):
    # `{"domain": "*", "pattern": "*"}` is written meaning "everything": it is `**`, not one path segment.
    check("*", target, True)
    check("**", target, True)


@pytest.mark.parametrize(
    ("pattern", "target"),
    [("workspace:*", "workspace:notes/a.txt"), ("fs:*", "fs:/etc/hosts"), ("mcp:*", "mcp:github/create_issue"),
     ("*/*", "workspace:a/b/c"), (" *", "workspace:a/b"), ("* ", "workspace:a/b")],
)
def test_star_with_anything_else_keeps_its_glob_meaning(pattern, target):
    check(pattern, target, False)


@pytest.mark.parametrize(
    ("raw", "scheme"),
    [("workspace:a", "workspace"), ("shell:ls", "shell"), ("**", ""), ("regex:shell:.*", ""), ("nope:x", "")],
)
def test_compiled_scheme(raw, scheme):
    pattern = compile_pattern(raw)
    assert (pattern.raw, pattern.scheme) == (raw, scheme)


@pytest.mark.parametrize(
    ("pattern", "target", "expected"),
    [
        # Regexes must match the whole target, or its rest.
        ("regex:shell:git (status|log)", "shell:git status", True),
        ("regex:git (status|log)", "shell:git log", True),
        ("regex:git (status|log)", "shell:git push", False),
        ("regex:git", "shell:git status", False),
        ("regex:status", "shell:git status", False),
        ("regex:git.*", "shell:git status", True),
        (r"regex:workspace:.*\.py", "workspace:a/b.py", True),
        (r"regex:.*\.py", "workspace:a/b.py", True),
        (r"regex:.*\.py", "workspace:a/b.pyc", False),
        # A regex is not scoped to a scheme unless it says so.
        ("regex:fs:/etc/.*", "fs:/etc/hosts", True),
        ("regex:fs:/etc/.*", "workspace:etc/hosts", False),
    ],
)
def test_regex_full_match(pattern, target, expected):
    check(pattern, target, expected)


@pytest.mark.parametrize("raw", ["regex:(", "regex:[a-", "regex:*x", "regex:a{2,1}"])
def test_invalid_regex_raises_value_error(raw):
    with pytest.raises(ValueError, match="invalid regex"):
        compile_pattern(raw)


@pytest.mark.parametrize(
    ("target", "parts"),
    [
        ("workspace:a/b", ("workspace", "a/b")),
        ("shell:echo a:b", ("shell", "echo a:b")),
        ("fs:/x", ("fs", "/x")),
        ("unknown:x", ("", "unknown:x")),
        ("plain", ("", "plain")),
    ],
)
def test_split_target(target, parts):
    assert split_target(target) == parts


# --- regex: rules run on RE2 (linear time) ----------------------------------------------------


def test_a_backtracking_pattern_is_decided_in_linear_time():
    # Python's re takes longer than the universe for 40 a's: a backtracking engine never answers here, RE2 in
    # milliseconds. The child process's timeout only stops that hang; how fast is bench/bench_policy.py's.
    script = f"""
from {compile_pattern.__module__} import compile_pattern
pattern = compile_pattern("regex:(a+)+$")
print(pattern.matches("shell:" + "a" * 100_000 + "b"), pattern.matches("shell:" + "a" * 100_000))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.split()) == (0, ["False", "True"]), done.stderr


@pytest.mark.parametrize(("raw", "why"), [
    ("regex:(?=a)b", "invalid perl operator: (?="),
    ("regex:(?!a)b", "invalid perl operator: (?!"),
    ("regex:(?<=a)b", "invalid perl operator: (?<"),
    ("regex:(a)\\1", "invalid escape sequence: \\1"),
    ("regex:a++", "bad repetition operator: ++"),
])
def test_what_re2_cannot_run_is_rejected_and_says_why(raw, why):
    with pytest.raises(ValueError) as info:
        compile_pattern(raw)
    message = str(info.value)
    assert message.startswith(f"invalid regex {raw[6:]!r}: {why}")
    assert "RE2" in message and "lookaround" in message


def test_a_plain_syntax_error_keeps_pythons_wording():
    with pytest.raises(ValueError, match=r"missing \), unterminated subpattern at position 0"):
        compile_pattern("regex:(")


@pytest.mark.parametrize(("pattern", "target", "expected"), [
    ("regex:shell:git (status|log)", "shell:git status", True),
    ("regex:(?i)SHELL:GIT.*", "shell:git push", True),
    ("regex:\\pL+", "query:ünïcode", True),
    ("regex:a.c", "a\nc", False),  # `.` does not match a newline, as in Python
])
def test_re2_semantics(pattern, target, expected):
    check(pattern, target, expected)


def test_exact_patterns_compile_on_re2():
    from runner.policy.match import exact_pattern

    target = "shell:echo '()[]{}?*+-|^$\\.&~# \t\n\r\x0b\x0c' üñ"
    assert compile_pattern(exact_pattern(target)).matches(target)
    assert compile_pattern(exact_pattern("workspace:a[1]", subtree=True)).matches("workspace:a[1]/b")
