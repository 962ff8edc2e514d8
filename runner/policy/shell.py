"""Shell commands as the policy sees them: parsed with tree-sitter-bash, never string-matched.

`analyze(command)` finds every simple command — across `;`, `&&`, `||`, pipes,
newlines, subshells, groups, `$( … )`, backticks, `<( … )`, function bodies and
the strings given to `bash -c` / `eval` — plus the files written by output
redirections and `tee`, the files read by input redirections, and the
directories entered with `cd`. Anything it cannot understand (a syntax error, a
computed command name, a redirection to `$VAR`) is reported as opaque: the
policy treats it as `ask`, never `allow`.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from functools import cache

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
_WRITE_OPS = frozenset({">", ">>", "&>", "&>>", ">|", "<>"})
_READ_OPS = frozenset({"<"})
_DUP_OPS = frozenset({">&-", "<&-"})  # closing a descriptor; `>&N` duplicates, `>&FILE` writes
_HARMLESS_FILES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_MAX_DEPTH = 4
_WORD_TYPES = frozenset({
    "command_name", "word", "string", "raw_string", "concatenation", "number", "simple_expansion", "expansion",
    "command_substitution", "process_substitution", "arithmetic_expansion", "variable_assignment",
    "ansi_c_string", "translated_string", "export", "declare", "local", "readonly", "typeset", "unset", "unsetenv",
})


@dataclass
class ShellAnalysis:
    commands: list[str] = field(default_factory=list)  # normalized simple commands, in source order
    writes: list[str] = field(default_factory=list)  # paths written (redirections, tee)
    reads: list[str] = field(default_factory=list)  # paths read by `<`
    dirs: list[str] = field(default_factory=list)  # directories entered with cd/pushd
    opaque: list[str] = field(default_factory=list)  # why parts could not be understood


@cache
def _parser() -> Parser:
    return Parser(Language(tree_sitter_bash.language()))


def analyze(command: str, _depth: int = 0) -> ShellAnalysis:
    out = ShellAnalysis()
    if _depth > _MAX_DEPTH:
        out.opaque.append("nested shell strings too deep")
        return out
    tree = _parser().parse(command.encode("utf-8"))
    if tree.root_node.has_error:
        out.opaque.append("shell syntax the parser cannot understand")
    _walk(tree.root_node, out, _depth)
    if not out.commands and not out.opaque and command.strip():
        # Only assignments or tests: nothing runs, but keep the call visible to the policy.
        out.commands.append(" ".join(command.split()))
    return out


def _walk(node: Node, out: ShellAnalysis, depth: int) -> None:
    if node.type in ("command", "declaration_command", "unset_command"):
        _command(node, out, depth)
    elif node.type == "file_redirect":
        _redirect(node, out)
    for child in node.children:
        _walk(child, out, depth)


def _command(node: Node, out: ShellAnalysis, depth: int) -> None:
    nodes = [c for c in node.children if c.type in _WORD_TYPES]
    words = [_literal(c) for c in nodes]  # None: a value only known at run time
    out.commands.append(" ".join(_canonical(c, w) for c, w in zip(nodes, words, strict=True)))
    name_node = node.child_by_field_name("name")
    if name_node is not None and _literal(name_node) is None:
        out.opaque.append(f"computed command name {_text(name_node)!r}")
        return
    # Skip leading assignments (`FOO=1 git status`) to find the program and its arguments.
    start = next((i for i, c in enumerate(nodes) if c.type != "variable_assignment"), len(nodes))
    if start >= len(nodes) or words[start] is None:
        return
    base, rest = str(words[start]).rsplit("/", 1)[-1], words[start + 1:]
    if base in ("cd", "pushd"):
        target = next((a for a in rest if a is None or not a.startswith("-")), "~")
        if target is None:
            out.opaque.append("cd to a computed directory")
        else:
            out.dirs.append(target)
    elif base == "tee":
        for arg in rest:
            if arg is None:
                out.opaque.append("tee to a computed file")
            elif not arg.startswith("-"):
                out.writes.append(arg)
    elif base in _SHELLS and _shell_c(rest)[0]:
        _nested(_shell_c(rest)[1], out, depth, f"{base} -c")
    elif base == "eval":
        _nested(None if None in rest else " ".join(str(a) for a in rest), out, depth, "eval")


def _shell_c(args: list[str | None]) -> tuple[bool, str | None]:
    """For `bash [options] [-c] operand …`: whether `-c` is given (alone or in a cluster such as
    `-lc`, `-ec`), and the first operand — the script when it is. None: computed or absent."""
    has_c, skip_next = False, False
    for a in args:
        if skip_next:
            skip_next = False
            continue
        if a is None:
            return has_c, None
        if a == "--":
            continue
        if a in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            skip_next = True
        elif a.startswith("--"):
            continue
        elif a.startswith(("-", "+")):
            has_c = has_c or (a.startswith("-") and "c" in a[1:])
        else:
            return has_c, a
    return has_c, None


def _canonical(node: Node, literal: str | None) -> str:
    """Quoted literals re-quoted the one way shlex does it (`'rm'` is `rm`); the rest as written,
    so `~` and globs stay recognisable to patterns."""
    if literal is not None and node.type in ("string", "raw_string", "concatenation"):
        return shlex.quote(literal)
    if literal is not None and node.type in ("word", "command_name") and "\\" in _text(node):
        return shlex.quote(literal)  # `\rm` runs rm: show it as rm so rules about rm apply
    if literal is not None and node.type == "command_name" and node.children and node.children[0].type != "word":
        return shlex.quote(literal)
    return _text(node)


def command_words(command: str) -> list[tuple[str, str | None]]:
    """The words of the first simple command as (canonical text, literal value or None):
    the canonical texts joined by spaces are the command as the policy decides it."""
    tree = _parser().parse(command.encode("utf-8"))
    if tree.root_node.has_error:
        return []
    stack = [tree.root_node]
    while stack:
        node = stack.pop(0)
        if node.type == "command":
            nodes = [c for c in node.children if c.type in _WORD_TYPES]
            return [(_canonical(c, _literal(c)), _literal(c)) for c in nodes]
        stack[:0] = node.children
    return []


def _nested(script: str | None, out: ShellAnalysis, depth: int, what: str) -> None:
    if script is None:
        out.opaque.append(f"{what} with a computed script")
        return
    inner = analyze(script, depth + 1)
    out.commands += inner.commands
    out.writes += inner.writes
    out.reads += inner.reads
    out.dirs += inner.dirs
    out.opaque += inner.opaque


def _redirect(node: Node, out: ShellAnalysis) -> None:
    op = next((c.type for c in node.children if not c.is_named), "")
    dest = node.child_by_field_name("destination")
    if dest is None:
        dest = next((c for c in node.children if c.is_named and c.type != "file_descriptor"), None)
    if dest is None or op in _DUP_OPS:
        return
    path = _literal(dest)
    if op in (">&", "<&") and (dest.type == "number" or path == "-"):
        return  # 2>&1, >&2, >&-: descriptors, not files
    if path is None:
        out.opaque.append(f"redirection to a computed path {_text(dest)!r}")
    elif path in _HARMLESS_FILES:
        return
    elif op in _WRITE_OPS or op == ">&":
        out.writes.append(path)
    elif op in _READ_OPS:
        out.reads.append(path)


def _literal(node: Node) -> str | None:
    """The word's value if it is known before running (quotes removed), else None."""
    t = node.type
    if t == "command_name":
        return _literal(node.children[0]) if node.children else None
    if t in ("word", "number", "export", "declare", "local", "readonly", "typeset", "unset", "unsetenv"):
        return re.sub(r"\\(.)", r"\1", _text(node))
    if t == "raw_string":
        return _text(node)[1:-1]
    if t == "string":
        parts = [c for c in node.children if c.is_named]
        if all(c.type == "string_content" for c in parts):
            return "".join(_text(c) for c in parts)
        return None
    if t == "concatenation":
        pieces = [_literal(c) for c in node.children]
        return None if any(p is None for p in pieces) else "".join(p for p in pieces if p is not None)
    if t == "variable_assignment":
        value = node.child_by_field_name("value")
        name = node.child_by_field_name("name")
        literal = _literal(value) if value is not None else ""
        return None if literal is None else f"{_text(name) if name else ''}={literal}"
    return None


def _text(node: Node) -> str:
    return node.text.decode("utf-8", errors="replace") if node.text is not None else ""
