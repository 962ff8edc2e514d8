"""Shell commands as the policy sees them: parsed with tree-sitter-bash, never string-matched.

`analyze(command)` finds every simple command — across `;`, `&&`, `||`, pipes,
newlines, subshells, groups, `$( … )`, backticks, `<( … )`, function bodies and
the strings given to `bash -c` / `eval` — plus the files written by output
redirections and `tee`, the files read by input redirections, and the
directories entered with `cd`. The options of the programs in the option table
(`runner.policy.commands`: git, find, sed, sort, tee, wrappers such as `timeout`,
`env`, `xargs`, `sudo`) add the files they write and the commands they run.

Anything it cannot prove is a plain literal is reported as opaque (the policy
floors it at `ask`, never `allow`): a syntax error, a computed command name, a
redirection to `$VAR` or to a glob, and the places where bash evaluates a
variable's value as code — arithmetic with a variable operand (`$((x))`,
`((x))`, `[[ $x -eq 1 ]]`, array subscripts, substring offsets, `let`),
indirect expansion `${!x}`, `${x@P}` and the other `@` transformations,
namerefs and integer variables — and assignments to variables that change what
later commands run, read or write (`PATH`, `HOME`, `CDPATH`, `GIT_*`, `LD_*`, …).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from functools import cache

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from runner.policy.commands import SHELLS as _SHELLS
from runner.policy.commands import assignment_note, effects, sensitive_variable

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
    programs: list[str] = field(default_factory=list)  # the program (base name) of every command run
    high: dict[str, str] = field(default_factory=dict)  # a command (as in `commands`) -> why it is high risk


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
    elif (hidden := _unparsed(node)) is not None:
        _reparse(*hidden, out, depth)
    elif node.type == "command_substitution" and _text(node).startswith("`") and "`" in re.sub(
            r"\\.", "", _text(node)[1:-1]):
        out.opaque.append("backticks bash pairs otherwise than the parser (quotes do not hide a backtick)")
    elif node.type == "command_substitution" and _text(node).startswith("`") and "\\" in _text(node):
        # Between backticks bash drops the backslash before $, ` and \ (and " in double quotes)
        # before parsing: `echo "\$(cmd)"` runs cmd. Analyzed as bash reads it, not as written.
        escaped = r'\\([$`\\"])' if _quoting(node)[1] else r"\\([$`\\])"
        _nested(re.sub(escaped, r"\1", _text(node)[1:-1]), out, depth, "`…`")
        return
    else:
        _hazards(node, out)
    for child in node.children:
        _walk(child, out, depth)


def _command(node: Node, out: ShellAnalysis, depth: int) -> None:
    nodes = [c for c in node.children if c.type in _WORD_TYPES]
    words = [_literal(c) for c in nodes]  # None: a value only known at run time
    texts = [_canonical(c, w) for c, w in zip(nodes, words, strict=True)]
    out.commands.append(" ".join(texts))
    name_node = node.child_by_field_name("name")
    if name_node is not None and (_literal(name_node) is None or _expands(name_node)):
        out.opaque.append(f"computed command name {_text(name_node)!r}")
        return
    # Skip leading assignments (`FOO=1 git status`) to find the program and its arguments.
    start = next((i for i, c in enumerate(nodes) if c.type != "variable_assignment"), len(nodes))
    program = str(words[start]).rsplit("/", 1)[-1] if start < len(nodes) and words[start] is not None else None
    for c in nodes[:start]:
        _assignment(c, out, program)
    if node.type == "declaration_command":
        _declaration(nodes, words, out)
    elif node.type == "unset_command":
        for c, w in zip(nodes[1:], words[1:], strict=True):
            _name_argument(None if _expands(c) else w, "unset", out)
    elif program is not None:
        # Words bash expands at run time (globs, braces) are unknown to the option table: `git log *`
        # may expand to `--output=…`.
        argv = [None if _expands(c) else w for c, w in zip(nodes[start:], words[start:], strict=True)]
        _program(" ".join(texts), texts[start:], argv, out, depth)


def _program(line: str, texts: list[str], words: list[str | None], out: ShellAnalysis, depth: int) -> None:
    """The simple command `words` (its program first, a literal), recorded in `out.commands` as `line`, and what it
    runs in turn."""
    base, rest = str(words[0]).rsplit("/", 1)[-1], words[1:]
    out.programs.append(base)
    if base in ("cd", "pushd"):
        target = next((a for a in rest if a is None or a == "-" or not a.startswith("-")), "~")
        if target is None:
            out.opaque.append("cd to a computed directory")
        elif target == "-":
            out.opaque.append("cd - enters $OLDPWD, only known at run time")
        else:
            out.dirs.append(target)
        return
    if base in _SHELLS and _shell_c(rest)[0]:
        _nested(_shell_c(rest)[1], out, depth, f"{base} -c")
        return
    if base == "eval":
        _nested(None if None in rest else " ".join(str(a) for a in rest), out, depth, "eval")
        return
    if base == "trap" and rest and (rest[0] is None or not rest[0].startswith("-")) and rest[0] != "":
        _nested(rest[0], out, depth, "trap")  # the string runs later, as code
        return
    found = effects(words)
    out.writes += found.writes
    out.reads += found.reads
    out.opaque += found.reasons
    if found.high:
        out.high.setdefault(line, "; ".join(found.high))
    for who, script in found.scripts:
        _nested(script, out, depth, who)
    for begin, end in found.runs:
        if begin >= end:
            continue
        if words[begin] is None:
            out.opaque.append(f"{base} runs a computed command")
        elif depth >= _MAX_DEPTH:
            out.opaque.append("nested commands too deep")
        else:
            inner = " ".join(texts[begin:end])
            out.commands.append(inner)
            _program(inner, texts[begin:end], words[begin:end], out, depth + 1)


_EXPANDS = re.compile(r"[$`]|[<>]\(")


def _unparsed(node: Node) -> tuple[str, bool] | None:
    """Text tree-sitter left as one leaf that bash expands nonetheless, with whether it is expanded
    as if in double quotes; None for a leaf that is what it says. Inside `${…}`: its pattern (a
    `regex` node, as is the right side of `=~`) and a word tree-sitter did not split; and in the word
    of a `${…}` inside double quotes or an unquoted here-doc, '…' and $'…', whose quotes bash keeps
    as characters (`"${x:-'$(cmd)'}"` runs cmd). In a here-doc even "…" in a pattern is no quote."""
    text = _text(node)
    if node.type == "regex" or (node.type in ("word", "string_content") and _quoting(node)[0]):
        return (text, False) if _EXPANDS.search(re.sub(r"\\.", "", text)) else None
    start = [c for c in node.parent.children if c.type == "heredoc_start"] if node.parent else []
    if node.type == "heredoc_body" and "`" in re.sub(r"\\.", "", text) and start \
            and not re.search(r"['\"\\]", _text(start[0])):
        return text, True  # an unquoted here-doc expands `…`, which tree-sitter leaves as text there
    if node.type in ("raw_string", "ansi_c_string") and _quoting(node) == (True, True):
        content = text[text.index("'") + 1:-1]
        return (content, True) if _EXPANDS.search(content) else None
    return None


def _quoting(node: Node) -> tuple[bool, bool]:
    """Whether the node is in the word of a `${…}`, and whether it (or that `${…}`) is inside double
    quotes or an unquoted here-doc; both up to the nearest new quoting context."""
    in_expansion, quoted, parent = False, False, node.parent
    while parent is not None and parent.type not in ("command_substitution", "process_substitution", "command",
                                                     "program", "variable_assignment", "file_redirect"):
        in_expansion = in_expansion or parent.type == "expansion"
        quoted = quoted or parent.type in ("string", "translated_string", "heredoc_body")
        parent = parent.parent
    return in_expansion, quoted


def _reparse(text: str, quoted: bool, out: ShellAnalysis, depth: int) -> None:
    """The text parsed again as the word bash expands, as an argument of `:` (which is dropped). In a
    `${…}` word inside double quotes bash still runs `<(…)` for some operators (`?`, `#`, `/`), so such
    text is read unquoted too."""
    if depth >= _MAX_DEPTH or (quoted and ('"' in text or "\\" in text)):
        out.opaque.append(f"{text!r} expands at run time in a way the parser does not show")
        return
    both = quoted and re.search(r"[<>]\(", text)
    for view in ([f': "{text}"'] if quoted else []) + ([f": {text}"] if both or not quoted else []):
        inner = analyze(view, depth + 1)
        if inner.programs[:1] == [":"]:
            del inner.commands[0], inner.programs[0]
        _merge(out, inner)


def _merge(out: ShellAnalysis, inner: ShellAnalysis) -> None:
    out.commands += inner.commands
    out.writes += inner.writes
    out.reads += inner.reads
    out.dirs += inner.dirs
    out.opaque += inner.opaque
    out.programs += inner.programs
    out.high = {**inner.high, **out.high}


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
    _merge(out, analyze(script, depth + 1))


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
    if path is not None and _expands(dest):
        out.opaque.append(f"redirection to {_text(dest)!r}: a file name with a glob, a brace or ~- "
                          "is only known at run time")
    elif path is None:
        out.opaque.append(f"redirection to a computed path {_text(dest)!r}")
    elif path in _HARMLESS_FILES:
        return
    elif op in _WRITE_OPS or op == ">&":
        out.writes.append(path)
    elif op in _READ_OPS:
        out.reads.append(path)


# --- where bash evaluates a value as code ----------------------------------------------------------
# In arithmetic, a variable's value is itself evaluated as an expression, and an array subscript in
# it (`a[$(cmd)]`) runs cmd: `x='a[$(cmd)]'; echo $((x))` runs cmd. Only number literals are plain.

_NUMBER = re.compile(r"[+-]?\s*(0[xX][0-9a-fA-F]+|[0-9]+(#[0-9a-zA-Z@_]+)?)\s*")
_NUMERIC_SPECIALS = frozenset({"$#", "$?", "$$", "$!"})
_ARITH_STRUCTURE = frozenset({"binary_expression", "unary_expression", "ternary_expression",
                              "parenthesized_expression"})
_ARITH_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
_GLOB = re.compile(r"[*?]|\[.*\]")


def _hazards(node: Node, out: ShellAnalysis) -> None:
    t = node.type
    if t == "arithmetic_expansion" or (t == "compound_statement" and node.children
                                       and node.children[0].type == "(("):
        _arithmetic(node.named_children, out)
    elif t == "c_style_for_statement":
        _arithmetic([c for c in node.named_children if c.type not in ("do_group", "compound_statement")], out)
    elif t == "command_substitution" and _text(node).startswith("$(("):
        # tree-sitter reads `$((x))` in a heredoc as `$( (x) )`; bash reads arithmetic
        out.opaque.append(f"arithmetic with a variable operand {_text(node)!r}: bash evaluates its value as code")
    elif t == "test_command":
        # `[ … ]` compares integers without evaluating them; `[[ … ]]` evaluates both sides
        _test_command(node, out, arithmetic=bool(node.children) and node.children[0].type == "[[")
    elif t == "subscript":
        index = node.child_by_field_name("index")
        if index is not None and _text(index) not in ("@", "*"):
            _arithmetic([index], out)
    elif t == "expansion":
        _expansion(node, out)
    elif t == "variable_assignment" and (node.parent is None or node.parent.type != "command"):
        _assignment(node, out, None)  # prefix assignments are decided with their command
    elif t == "array":
        for c in node.named_children:
            key = re.match(r"\[([^]]*)\]=", _text(c))
            if key and not _NUMBER.fullmatch(key.group(1)):
                out.opaque.append(f"arithmetic with a variable operand {key.group(1)!r}: bash evaluates its "
                                  "value as code")
    elif t == "heredoc_redirect":
        # tree-sitter reads a here-doc whose body starts with a backslash as words of the command
        # (`\${x:-'$(cmd)'}` then looks quoted): anything but the body past the first line is a misreading
        row = next((c.end_point[0] for c in node.children if c.type == "heredoc_start"), None)
        if row is not None and any(c.end_point[0] > row for c in node.children
                                   if c.type not in ("heredoc_body", "heredoc_end")):
            out.opaque.append("a here-doc the parser cannot read")
    elif t == "for_statement":  # `for` and `select` assign their variable
        var = node.child_by_field_name("variable")
        if var is not None and sensitive_variable(_text(var)):
            out.opaque.append(assignment_note(_text(var)))


def _arith_operand(node: Node) -> str | None:
    """The first operand of an arithmetic expression that is not a number literal, or None."""
    if node.type in _ARITH_STRUCTURE:
        return next((bad for c in node.named_children if (bad := _arith_operand(c)) is not None), None)
    text = _text(node)
    if node.type in ("number", "variable_name", "word") and _NUMBER.fullmatch(text):
        return None
    if node.type == "simple_expansion" and text in _NUMERIC_SPECIALS:
        return None
    literal = _literal(node) if node.type in ("string", "raw_string") else None
    return None if literal is not None and _NUMBER.fullmatch(literal) else text


def _arithmetic(nodes: list[Node], out: ShellAnalysis) -> None:
    for n in nodes:
        bad = _arith_operand(n)
        if bad is not None:
            out.opaque.append(f"arithmetic with a variable operand {bad!r}: bash evaluates its value as code")


def _test_command(node: Node, out: ShellAnalysis, arithmetic: bool) -> None:
    """`[[ … ]]`: -eq, -lt, … compare arithmetic expressions; `-v NAME[…]` evaluates a subscript."""
    stack = list(node.named_children)
    while stack:
        n = stack.pop()
        op = n.child_by_field_name("operator") if n.type == "binary_expression" else None
        if op is not None and _text(op) in _ARITH_TESTS and arithmetic:
            _arithmetic([c for c in (n.child_by_field_name("left"), n.child_by_field_name("right")) if c], out)
        elif n.type == "unary_expression" and n.children and _text(n.children[0]) == "-v":
            operand = n.named_children[-1]
            _name_argument(_literal(operand) if "[" not in _text(operand) else _text(operand), "test -v", out)
        elif n.type in ("binary_expression", "unary_expression", "parenthesized_expression"):
            stack += n.named_children


def _expansion(node: Node, out: ShellAnalysis) -> None:
    kids = node.children
    if len(kids) > 2 and kids[1].type == "!":
        # ${!x} is the variable x names; ${!pre*}, ${!pre@}, ${!arr[@]} list names and keys
        target = kids[2]
        index = target.child_by_field_name("index") if target.type == "subscript" else None
        lists = (len(kids) > 3 and kids[3].type in ("*", "@")) or (index is not None and _text(index) in "@*")
        if not lists:
            out.opaque.append(f"indirect expansion {_text(node)!r}: the value names another variable, "
                              "evaluated with its subscript")
    for k, c in enumerate(kids):
        if c.type == "@" and k + 1 < len(kids) and kids[k + 1].type != "}":
            out.opaque.append(f"parameter transformation {_text(node)!r} (@P runs prompt expansion: $(…) in "
                              "the value runs)")
        elif c.type == ":":  # ${x:offset:length}: both are arithmetic
            _arithmetic([d for d in kids[k + 1:] if d.is_named], out)
            break
        elif c.type in (":=", "=") and kids[1].type == "variable_name" and sensitive_variable(_text(kids[1])):
            out.opaque.append(assignment_note(_text(kids[1])))


def _assignment(node: Node, out: ShellAnalysis, program: str | None) -> None:
    """`NAME=value`, standalone, as a prefix of `program`, or in a declaration."""
    name = node.child_by_field_name("name")
    if name is not None and name.type == "subscript":
        name = name.child_by_field_name("name")
    var = _text(name) if name is not None else ""
    if sensitive_variable(var) and not (var == "IFS" and program in ("read", "mapfile", "readarray")):
        out.opaque.append(assignment_note(var))  # `IFS= read -r line` only splits that line


def _declaration(nodes: list[Node], words: list[str | None], out: ShellAnalysis) -> None:
    """declare/typeset/local/export/readonly: their assignments are walked; here the options and
    the arguments that are assignments only at run time (`declare "$x"`, `export 'PATH=…'`)."""
    keyword = words[0] if words else ""
    for c, w in zip(nodes[1:], words[1:], strict=True):
        if c.type == "variable_assignment":
            continue
        if w is not None and w.startswith(("-", "+")):
            if w.startswith("-") and keyword in ("declare", "typeset", "local"):
                if "i" in w:
                    out.opaque.append(f"integer attribute ({keyword} {w}): later assignments to it are arithmetic")
                if "n" in w:
                    out.opaque.append(f"nameref ({keyword} {w}): the variable names another, evaluated with "
                                      "its subscript")
            continue
        name, eq, _ = (w or "").partition("=")
        if w is None or _expands(c):
            out.opaque.append(f"computed argument to {keyword} (it can set any variable)")
        elif "[" in name:
            _name_argument(name, str(keyword), out)
        elif eq and sensitive_variable(name):
            out.opaque.append(assignment_note(name))


def _name_argument(name: str | None, what: str, out: ShellAnalysis) -> None:
    if name is None:
        out.opaque.append(f"computed variable name for {what} (a subscript in it is arithmetic)")
    elif "[" in name:
        out.opaque.append(f"array subscript in a variable name {name!r} (bash evaluates it as arithmetic)")


def _expands(node: Node) -> bool:
    """Whether bash expands the word beyond its literal text at run time: a glob, a brace
    expansion, `~+` or `~-` (a file name that is only known then)."""
    if node.type == "command_name":
        return bool(node.children) and _expands(node.children[0])
    if node.type == "word":
        text = re.sub(r"\\.", "", _text(node))
        return bool(_GLOB.search(text) or re.match(r"~[-+0-9]", text))
    if node.type == "concatenation":
        unquoted = re.sub(r"\\.", "", "".join(_text(c) for c in node.children if c.type == "word"))
        return (any(c.type == "brace_expression" for c in node.children) or bool(re.search(r"\{[^}]*,", unquoted))
                or bool(_GLOB.search(unquoted)) or any(_expands(c) for c in node.children if c.type == "word"))
    return False


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
