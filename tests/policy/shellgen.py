"""A seeded generator of shell lines that hide a marker command, for the differential test of the
shell walker against bash (tests/policy/test_shell_differential.py).

Each case is a line built from the constructs bash evaluates differently by context — quoting
(bare, "…", '…', $'…', $"…", here-docs with quoted and unquoted delimiters, here-strings),
parameter expansions with every operator, command and process substitution, arithmetic (its
operands, array subscripts, substring offsets) — wrapped around `touch M<k>`, plus the values the
variables it reads have when it runs (set outside the line: the walker never sees them, as it never
sees a real environment). Roughly a third of the cases are inert (the marker only quoted), so the
policy's `allow` is exercised as much as its refusals.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

# Operators of ${x OP word}; `/pat/` etc. carry the word as the replacement.
_OPERATORS = ("-", ":-", "=", ":=", "+", ":+", "?", ":?", "#", "##", "%", "%%",
              "/", "//", "/#", "/%", "/a/", "//a/", "/#a/", "/%a/", "^", "^^", ",", ",,")
_VARIABLES = ("x", "y", "u")  # x and y get values below; u stays unset


@dataclass(frozen=True)
class Case:
    k: int
    line: str  # what the policy decides and bash runs
    setup: str  # variable values in effect when it runs (not part of the decided line)

    @property
    def marker(self) -> str:
        return f"M{self.k}"


class ShellGen:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def case(self, k: int) -> Case:
        self.marker = f"touch M{k}"
        line = self.code(self.rng.choice((1, 2, 2, 3)))
        return Case(k, line, self.setup())

    def pick(self, *options):  # type: ignore[no-untyped-def]
        return self.rng.choice(options)

    def setup(self) -> str:
        """Values an earlier step could have left: empty, plain, or text bash may evaluate as code."""
        m = self.marker
        values = ("", "abc", "a", f"a[$({m})]", f"$({m})", "`" + m + "`", "1")
        parts = [f"{v}={_sq(self.pick(*values))}" for v in ("x", "y") if self.rng.random() < 0.8]
        parts.append("a=(1 2)")
        return "; ".join(parts)

    # --- code: a command line that may run the marker ----------------------------------------------
    def code(self, depth: int) -> str:
        if depth <= 0:
            return self.pick(self.marker, self.marker, f"true; {self.marker}", f"{self.marker} >/dev/null")
        c = lambda: self.code(depth - 1)  # noqa: E731
        w = lambda: self.word(depth - 1)  # noqa: E731
        kind = self.rng.randrange(24)
        if kind < 8:
            return self.pick("echo", "printf '%s\\n'", "true", "echo -n", "printf %s") + " " + w()
        if kind < 10:
            return self.heredoc(w())
        if kind == 10:
            return f"{self.pick('echo', 'true')} <<< {w()}"
        if kind == 11:
            return f"{self.pick('v', 'x')}={w()}; true"
        if kind == 12:
            return f"v={w()} true"
        if kind == 13:
            return self.pick(f"a=({w()}); true", f"a[{w()}]=1; true", f"for i in {w()}; do true; done",
                             f"case {w()} in *) true;; esac", f"[[ {w()} ]]", f"[[ {w()} -eq 1 ]]",
                             f"(( {w()} ))", f"printf -v {w()} x", f"case a in {w()}) true;; esac",
                             f"[[ a == {w()} ]]", f"[[ a =~ {w()} ]]")
        if kind == 14:
            return self.pick(f"{{ {c()}; }}", f"( {c()} )", f"if true; then {c()}; fi",
                             f"true && {c()}", f"false || {c()}", f"{c()} | true", f"f() {{ {c()}; }}; f",
                             f"for i in 1; do {c()}; done", f"case a in a) {c()};; esac", f"! {c()}")
        if kind == 15:
            return self.pick(f"echo {w()} {w()}", f"echo `echo {w()}`", f"echo \"`echo {w()}`\"")
        if kind == 16:
            return f"echo {w()} >/dev/null 2>&1"
        if kind == 17:
            return self.pick(f"eval {w()}", f"bash -c {w()}", f"trap {w()} EXIT", f"echo {w()} | bash")
        return f"echo {w()}"

    def heredoc(self, body: str) -> str:
        delim = self.pick("EOF", "EOF", "'EOF'", '"EOF"', "\\EOF", "-EOF")
        dash = delim == "-EOF"
        bare = delim.strip("'\"\\").lstrip("-")
        op = "<<-" if dash else "<<"
        return f"{self.pick('true', 'echo')} {op}{bare if dash else delim}\n{body}\n{bare}"

    # --- word: an argument that may run the marker when expanded -----------------------------------
    def word(self, depth: int) -> str:
        inner = self.inner(depth)
        return self.quote(inner)

    def inner(self, depth: int) -> str:
        c = lambda: self.code(max(depth - 1, 0))  # noqa: E731
        w = lambda: self.word(max(depth - 1, 0))  # noqa: E731
        kind = self.rng.randrange(20)
        if kind < 6 or depth <= 0:
            body = c() if depth > 0 else self.marker
            return self.pick(f"$({body})", f"$({body})", f"`{body}`" if "`" not in body else f"$({body})",
                             f"<({body})", f">({body})", f"$( ({body}) )", f"$({{ {body}; }})")
        if kind < 13:
            op = self.pick(*_OPERATORS)
            word = w() if op not in ("^", "^^", ",", ",,") else self.pick("a", "?", "*")
            var = self.pick(*_VARIABLES)
            return f"${{{var}{op}{word}}}"
        if kind < 17:
            return self.pick(f"$(({w()}))", f"$[{w()}]", f"$((a[{w()}]))", f"${{a[{w()}]}}",
                             f"${{x:{w()}}}", f"${{x:0:{w()}}}", f"$(( 1 + {w()} ))")
        # the variables' values evaluated as code (they may hold `a[$(touch M)]` or `$(touch M)`)
        return self.pick("$((x))", "$((x+1))", "${a[x]}", "${x:y}", "${!x}", "${x@P}", "${x@Q}",
                         "$x", "${x}", "${#x}", "${x:-$y}", "$[y]", "${a[@]}", "${!a[@]}")

    def quote(self, inner: str) -> str:
        """The word in a quoting context; '…' and \\$ make it inert, unless bash says otherwise."""
        return self.pick(inner, inner, f'"{inner}"', f'"{inner}"', f"'{inner}'", f"$'{inner}'",
                         f'$"{inner}"', f'"pre {inner} post"', f"a{inner}b", f"\\{inner}",
                         f'"\\{inner}"', f"'{inner}'\"{inner[:0]}\"", f'"\\"{inner}\\""', f"\\'{inner}\\'")


def _sq(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def cases(seed: int, count: int) -> list[Case]:
    gen = ShellGen(seed)
    return [gen.case(k) for k in range(count)]
