"""`runner.policy.shell.analyze` on what bash evaluates at run time: arithmetic with variable operands,
indirect expansion, `@` transformations, array subscripts, assignments to variables that change what
later commands do, and globs in file names. Each must give a reason (the policy floors it at `ask`);
the ordinary forms beside them must not."""

from __future__ import annotations

import pytest

from runner.policy.shell import analyze

# (command line, a substring of one of the reasons)
ASK = [
    # arithmetic: a variable's value is evaluated as an expression, and `a[$(cmd)]` in it runs cmd
    ("echo $((x))", "arithmetic with a variable operand 'x'"),
    ("echo $(( $x + 1 ))", "arithmetic with a variable operand"),
    ("echo $((${x:-'a[$(id)]'}))", "arithmetic with a variable operand"),
    ("echo $(( $(cat n) ))", "arithmetic with a variable operand"),
    ("echo \"$((x))\"", "arithmetic with a variable operand"),
    ("echo $[x+1]", "arithmetic with a variable operand"),
    ("((x))", "arithmetic with a variable operand"),
    ("(( i++ )); true", "arithmetic with a variable operand"),
    ("for ((i=0; i<n; i++)); do true; done", "arithmetic with a variable operand"),
    ("[[ $x -eq 1 ]]", "arithmetic with a variable operand"),
    ("[[ 1 -lt y ]]", "arithmetic with a variable operand"),
    ("[[ -v a[$i] ]]", "array subscript"),
    ("[ -v 'a[$(id)]' ]", "array subscript"),
    ("test -v \"$x\"", "computed"),
    ("echo ${a[i]}", "arithmetic with a variable operand"),
    ("echo ${a[$i]}", "arithmetic with a variable operand"),
    ("echo ${#a[x]}", "arithmetic with a variable operand"),
    ("a[$i]=1", "arithmetic with a variable operand"),
    ("a=([k]=1)", "arithmetic with a variable operand"),
    ("echo ${x:off}", "arithmetic with a variable operand"),
    ("echo ${x:0:n}", "arithmetic with a variable operand"),
    ("let x=1", "let"),
    ("declare -i n=1", "integer"),
    ("local -ri n", "integer"),
    ("local -n ref=x", "nameref"),
    ("unset 'a[$(id)]'", "array subscript"),
    ("unset \"$x\"", "computed"),
    ("read 'a[$(id)]' <<< x", "array subscript"),
    ("printf -v 'a[$(id)]' x", "array subscript"),
    ("declare \"$x\"", "computed"),
    ("true <<EOF\n$((x))\nEOF", "arithmetic"),
    ("true <<EOF\n$((echo))\nEOF", "arithmetic"),
    # indirection and transformations
    ("echo ${!x}", "indirect expansion"),
    ("echo ${!x[0]}", "indirect expansion"),
    ("true <<EOF\n${!x}\nEOF", "indirect expansion"),
    ("echo ${x@P}", "parameter transformation '${x@P}'"),
    ("echo \"${x@E}\"", "parameter transformation"),
    ("echo ${x@A}", "parameter transformation"),
    ("echo ${x@Q}", "parameter transformation"),
    # assignments that change what later commands run, read or write
    ("PATH=/tmp ls", "sets PATH"),
    ("CDPATH=x; cd a", "sets CDPATH"),
    ("export HOME=/tmp; git status", "sets HOME"),
    ("GIT_DIR=x git status", "sets GIT_DIR"),
    ("export GIT_CONFIG_GLOBAL=x", "sets GIT_CONFIG_GLOBAL"),
    ("LD_PRELOAD=x.so true", "sets LD_PRELOAD"),
    ("PYTHONSTARTUP=x python", "sets PYTHONSTARTUP"),
    ("NODE_OPTIONS=--require=./x node", "sets NODE_OPTIONS"),
    ("BASH_ENV=x bash -c true", "sets BASH_ENV"),
    ("ENV=x sh -c true", "sets ENV"),
    ("IFS=: ; true", "sets IFS"),
    ("PS4='$(id)'; set -x", "sets PS4"),
    ("PROMPT_COMMAND=id", "sets PROMPT_COMMAND"),
    ("declare -x PERL5OPT=-Mx", "sets PERL5OPT"),
    ("RUBYOPT=-rx ruby", "sets RUBYOPT"),
    ("JAVA_TOOL_OPTIONS=-javaagent:x java", "sets JAVA_TOOL_OPTIONS"),
    ("SHELLOPTS=xtrace bash -c true", "sets SHELLOPTS"),
    ("BASHOPTS=x bash -c true", "sets BASHOPTS"),
    ("GLOBIGNORE=x; echo *", "sets GLOBIGNORE"),
    ("XDG_CONFIG_HOME=$PWD git status", "sets XDG_CONFIG_HOME"),
    ("BASH_CMDS[ls]=/tmp/x; ls", "sets BASH_CMDS"),
    ("for PATH in /tmp; do ls; done", "sets PATH"),
    ("read -r HOME <<< /tmp", "sets HOME"),
    ("printf -v PATH x", "sets PATH"),
    ("mapfile -t PATH < f", "sets PATH"),
    ("echo ${CDPATH:=/tmp}", "sets CDPATH"),
    ("export 'PATH=/x'", "sets PATH"),
    ("local PATH=/x", "sets PATH"),
    ("cd -", "OLDPWD"),
    # what a glob, a brace or `~-` names is only known at run time
    ("echo x > .git/conf*", "only known at run time"),
    ("echo x > .git/c?nfig", "only known at run time"),
    ("echo x > .git/[c]onfig", "only known at run time"),
    ("echo x | tee .git/{config,x}", "only known at run time"),
    ("echo x > ~-/f", "only known at run time"),
    ("cat < /etc/pass*", "only known at run time"),
    ("cd /e*", "computed directory"),
]

# Ordinary forms: no reason at all.
OK = [
    "echo $((1 + 2 * 3))",
    "echo $(( 0x1f + 2#101 - -1 ))",
    "echo ${a[0]} ${a[@]} ${#a[*]} ${!a[@]} ${!pre*}",
    "echo ${x:1:2} ${x: -1}",
    "echo ${x:-d} ${x#a} ${x/a/b} ${x^^} ${#x} ${x,}",
    "FOO=1 make",
    "IFS= read -r line",
    "while IFS=, read -r a b; do echo $a; done < f.csv",
    "x=1; echo $x",
    "local out=$(ls)",
    "export FOO=bar",
    "[[ -n $x && $x == y* ]]",
    "[[ 1 -eq 1 ]]",
    "[[ -v x ]]",
    "[ \"$x\" -eq 1 ]",
    "echo x > 'a*.txt'",
    "echo x > a\\*",
    "cd src",
    "cd -P src",
    "echo x > ~/f",
    "find . -name '*.py' -type f",
    "read -r a b",
    "printf '%s [%s]\\n' a b",
]


@pytest.mark.parametrize(("line", "reason"), ASK, ids=[repr(a[0])[1:-1][:40] for a in ASK])
def test_asks(line, reason):
    found = analyze(line)
    assert any(reason in r for r in found.opaque), found.opaque


@pytest.mark.parametrize("line", OK)
def test_ordinary_forms_do_not_ask(line):
    assert analyze(line).opaque == []


def test_the_hidden_command_is_still_decided():
    # Literal `$(...)` in a default word inside arithmetic: the substitution bash does run is decided too.
    found = analyze("echo $((${x:-$(id)}))")
    assert "id" in found.commands


def test_a_glob_redirect_is_not_a_literal_write():
    found = analyze("echo x > .git/conf*")
    assert found.writes == []


# Issue 25, found by the differential test (test_shell_differential.py): text tree-sitter leaves as one
# leaf that bash expands. (line, the command bash runs in it; None: only a reason, the policy asks)
UNPARSED = [
    # inside double quotes, the single quotes in a ${…} word are characters: what is between them expands
    ("echo \"${x:-'$(touch P1)'}\"", "touch P1"),
    ("echo \"${x-'`touch P2`'}\"", "touch P2"),
    ("echo \"${x:='$(touch M)'}\"", "touch M"),
    ("echo \"${x:+a'$(touch M)'b}\"", "touch M"),
    ("echo \"${x:-\"${y:-'$(touch M)'}\"}\"", "touch M"),
    ("echo \"${u-$'$(touch M)'}\"", "touch M"),
    ("x=\"${u:-'$(touch M)'}\"", "touch M"),
    ("true <<EOF\n${x:-'$(touch M)'}\nEOF", "touch M"),
    ("echo \"${x:-'$(touch M); echo \\\"'}\"", None),
    # a ${…} pattern is a `regex` leaf, and some words in a ${…} are not split
    ("echo ${y%$(touch M)}", "touch M"),
    ("echo \"${x/#`touch M`}\"", "touch M"),
    ("echo ${x//<(touch M)}", "touch M"),
    ("x=${y->(touch M)}; true", "touch M"),
    # backticks: in an unquoted here-doc, and the escapes bash removes between them before parsing
    ("true <<EOF\na`touch M`b\nEOF", "touch M"),
    ("true <<-EOF | cat\n\t`touch M`\n\tEOF", "touch M"),
    ("true <<EOF\n\"`touch M`\"\nEOF", None),
    ("echo `echo \"\\$(touch M)\"`", "touch M"),
    ("echo `echo \\`touch M\\``", "touch M"),
    # in a double-quoted ${…} word, `?`, `#` and `/` still run <(…); in a here-doc "…" in a pattern is no quote
    ("echo \"${u?<(touch M)}\"", "touch M"),
    ("echo \"${x/a/<(touch M)}\"", "touch M"),
    ("echo <<EOF\n'${x/\"\\\"<(touch M)\\\"\"}'\nEOF", "touch M"),
    # bash ends `…` at the next backtick, quotes or not; outside double quotes \" stays escaped in it
    ("echo `echo '`[[ a =~ <(touch M) ]]`'`", None),
    ("echo `echo \"\\\"${u?$'<(touch M)'}\\\"\"`", "touch M"),
    # a here-doc body starting with a backslash is misread as words of the command
    ("echo <<EOF\n\\${x##'$(touch M)'\"\"}\nEOF", None),
]


@pytest.mark.parametrize(("line", "hidden"), UNPARSED, ids=[repr(a[0])[1:-1][:40] for a in UNPARSED])
def test_text_bash_expands_is_analyzed(line, hidden):
    found = analyze(line)
    if hidden is None:
        assert found.opaque, found
    else:
        assert hidden in found.commands, found


# ... and where the quotes are quotes, or the text is data, nothing is added
QUOTED = [
    ("echo ${x:-'$(touch M)'}", ["echo ${x:-'$(touch M)'}"]),
    ("echo \"${x:-'a b'}\"", ["echo \"${x:-'a b'}\""]),
    ("echo \"${x#'$y'}\"", ["echo \"${x#'$y'}\""]),
    ("echo ${x%.$ext}", ["echo ${x%.$ext}"]),
    ("true <<'EOF'\n`touch M` ${x:-'$(touch M)'}\nEOF", ["true"]),
    ("echo \"$(echo '${x:-$(touch M)}')\"", ["echo \"$(echo '${x:-$(touch M)}')\"", "echo '${x:-$(touch M)}'"]),
]


@pytest.mark.parametrize(("line", "commands"), QUOTED, ids=[repr(a[0])[1:-1][:40] for a in QUOTED])
def test_quoted_text_stays_data(line, commands):
    found = analyze(line)
    assert (found.commands, found.opaque) == (commands, [])
