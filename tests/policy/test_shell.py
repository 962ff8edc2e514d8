"""`runner.policy.shell.analyze`: every simple command, the files written and read, the directories
entered, and what could not be understood — from a tree-sitter parse, never from string matching."""

from __future__ import annotations

import shlex

import pytest

from runner.policy.shell import analyze

# (command line, commands, writes, reads, dirs, opaque: substrings of the reasons, in order)
TABLE = [
    # plain commands and canonical form
    ("ls -la", ["ls -la"], [], [], [], []),
    ("echo 'a  b'   c", ["echo 'a  b' c"], [], [], [], []),
    ("'rm' -rf /", ["rm -rf /"], [], [], [], []),
    ('"rm" -rf /', ["rm -rf /"], [], [], [], []),
    ("\\rm -rf /", ["rm -rf /"], [], [], [], []),
    ("r'm' -rf /", ["rm -rf /"], [], [], [], []),
    ('git commit -m "fix: a;b && c"', ["git commit -m 'fix: a;b && c'"], [], [], [], []),
    ("npm test \\\n  --watch", ["npm test --watch"], [], [], [], []),
    ("echo ok # ; rm -rf /", ["echo ok"], [], [], [], []),
    # leading assignments are kept; assignment-only lines still show up
    ("FOO=1 make build", ["FOO=1 make build"], [], [], [], []),
    ('FOO=1 BAR="a b" make', ['FOO=1 BAR="a b" make'], [], [], [], []),
    ("A=1", ["A=1"], [], [], [], []),
    ("x=$(rm -rf /)", ["rm -rf /"], [], [], [], []),
    ("export A=$(whoami)", ["export A=$(whoami)", "whoami"], [], [], [], []),
    ("local B=`id`", ["local B=`id`", "id"], [], [], [], []),
    # lists, pipes, groups
    ("a; b && c || d", ["a", "b", "c", "d"], [], [], [], []),
    ("a | b |& c", ["a", "b", "c"], [], [], [], []),
    ("ls\n\npwd", ["ls", "pwd"], [], [], [], []),
    ("npm test & rm -rf /", ["npm test", "rm -rf /"], [], [], [], []),
    ("(cd sub && make)", ["cd sub", "make"], [], [], ["sub"], []),
    ("{ ls; pwd; } > both.txt", ["ls", "pwd"], ["both.txt"], [], [], []),
    ("! rm -rf /", ["rm -rf /"], [], [], [], []),
    # control flow and functions
    ("if [ -f x ]; then rm x; elif true; then echo y; else echo z; fi", ["rm x", "true", "echo y", "echo z"],
     [], [], [], []),
    ("for f in a b; do cp $f /tmp; done", ["cp $f /tmp"], [], [], [], []),
    ("while true; do sleep 1; done", ["true", "sleep 1"], [], [], [], []),
    ("until false; do break; done", ["false", "break"], [], [], [], []),
    ("case $x in a) echo a;; *) rm -rf /;; esac", ["echo a", "rm -rf /"], [], [], [], []),
    ("f() { rm -rf /; }", ["rm -rf /"], [], [], [], []),
    # substitutions, at any depth
    ("echo $(echo $(echo $(rm -rf /)))",
     ["echo $(echo $(echo $(rm -rf /)))", "echo $(echo $(rm -rf /))", "echo $(rm -rf /)", "rm -rf /"], [], [], [], []),
    ('echo "$(curl x)"', ['echo "$(curl x)"', "curl x"], [], [], [], []),
    ("echo `whoami`", ["echo `whoami`", "whoami"], [], [], [], []),
    ("diff <(ls a) <(ls b)", ["diff <(ls a) <(ls b)", "ls a", "ls b"], [], [], [], []),
    ("echo ${X:-$(rm -rf /)}", ["echo ${X:-$(rm -rf /)}", "rm -rf /"], [], [], [], []),
    ("[[ -n $(id) ]]", ["id"], [], [], [], []),
    ("(( x = $(id) ))", ["id"], [], [], [], ["arithmetic with a variable operand"]),  # id's output is evaluated
    # shell strings
    ("sh -c 'echo a; rm b'", ["sh -c 'echo a; rm b'", "echo a", "rm b"], [], [], [], []),
    ("bash -c 'echo x > out.txt'", ["bash -c 'echo x > out.txt'", "echo x"], ["out.txt"], [], [], []),
    ("eval echo hi", ["eval echo hi", "echo hi"], [], [], [], []),
    ("eval 'cd /etc && cat < passwd'", ["eval 'cd /etc && cat < passwd'", "cd /etc", "cat"], [], ["passwd"],
     ["/etc"], []),
    ('sh -c "$SCRIPT"', ['sh -c "$SCRIPT"'], [], [], [], ["sh -c with a computed script"]),
    ("sh -c", ["sh -c"], [], [], [], ["sh -c with a computed script"]),
    ('eval "$X"', ['eval "$X"'], [], [], [], ["eval with a computed script"]),
    # redirections
    ("echo hi > out.txt", ["echo hi"], ["out.txt"], [], [], []),
    ("echo hi >> log.txt", ["echo hi"], ["log.txt"], [], [], []),
    ("ls &> all.log", ["ls"], ["all.log"], [], [], []),
    ("ls &>> all.log", ["ls"], ["all.log"], [], [], []),
    ("ls >| forced.txt", ["ls"], ["forced.txt"], [], [], []),
    ("echo x 2> err.log", ["echo x"], ["err.log"], [], [], []),
    ("ls 2>&1 >out.txt", ["ls"], ["out.txt"], [], [], []),
    ("ls >&2", ["ls"], [], [], [], []),
    ("echo x >&3", ["echo x"], [], [], [], []),
    ("ls 1>&2 2>/dev/null", ["ls"], [], [], [], []),
    ("ls > /dev/null 2> /dev/stderr", ["ls"], [], [], [], []),
    ("exec 3> fd.txt", ["exec"], ["fd.txt"], [], [], []),
    ("echo x > ~/f", ["echo x"], ["~/f"], [], [], []),
    ("sort < in.txt > out.txt", ["sort"], ["out.txt"], ["in.txt"], [], []),
    ("ls |& tee -a log.txt", ["ls", "tee -a log.txt"], ["log.txt"], [], [], []),
    ("echo x | tee a.txt b.txt", ["echo x", "tee a.txt b.txt"], ["a.txt", "b.txt"], [], [], []),
    ("tee", ["tee"], [], [], [], []),
    # heredocs: the body of an unquoted one is expanded, a quoted one is literal
    ("cat <<EOT > out.txt\nhello $(whoami)\nEOT", ["cat", "whoami"], ["out.txt"], [], [], []),
    ("cat <<'EOT'\nliteral $(id)\nEOT", ["cat"], [], [], [], []),
    ("npm test <<< \"$(rm -rf /)\"", ["npm test", "rm -rf /"], [], [], [], []),
    # directories
    ("cd", ["cd"], [], [], ["~"], []),
    ("cd -- /tmp", ["cd -- /tmp"], [], [], ["/tmp"], []),
    ("pushd src", ["pushd src"], [], [], ["src"], []),
    # opaque: what is only known at run time
    ("cd $DIR", ["cd $DIR"], [], [], [], ["cd to a computed directory"]),
    ('echo x > "$OUT"', ["echo x"], [], [], [], ["redirection to a computed path '\"$OUT\"'"]),
    ('echo x > out-"$N".txt', ["echo x"], [], [], [], ["redirection to a computed path"]),
    ("tee $LOG", ["tee $LOG"], [], [], [], ["tee to a computed file"]),
    ("$CMD x", ["$CMD x"], [], [], [], ["computed command name '$CMD'"]),
    ("${CMD} arg", ["${CMD} arg"], [], [], [], ["computed command name '${CMD}'"]),
    ('"$CMD" arg', ['"$CMD" arg'], [], [], [], ["computed command name"]),
    ("$(echo rm) -rf /", ["$(echo rm) -rf /", "echo rm"], [], [], [], ["computed command name"]),
    ("echo 'unterminated", ["echo"], [], [], [], ["shell syntax the parser cannot understand"]),
    ("{rm,-rf,/}", [], [], [], [], ["shell syntax"]),
]


@pytest.mark.parametrize(("line", "commands", "writes", "reads", "dirs", "opaque"), TABLE,
                         ids=[repr(t[0])[1:-1][:40] for t in TABLE])
def test_analyze(line, commands, writes, reads, dirs, opaque):
    found = analyze(line)
    assert found.commands == commands
    assert found.writes == writes
    assert found.reads == reads
    assert found.dirs == dirs
    assert len(found.opaque) == len(opaque), found.opaque
    for reason, expected in zip(found.opaque, opaque, strict=True):
        assert expected in reason


def test_table_is_large_enough():
    assert len(TABLE) >= 30


def nested(script: str, levels: int, shell: str = "bash") -> str:
    for _ in range(levels):
        script = f"{shell} -c {shlex.quote(script)}"
    return script


@pytest.mark.parametrize("levels", [1, 2, 3, 4])
def test_nesting_within_the_limit_is_analyzed(levels):
    found = analyze(nested("rm -rf / > gone.txt", levels))
    assert found.commands[-1] == "rm -rf /"
    assert len(found.commands) == levels + 1
    assert found.writes == ["gone.txt"]
    assert found.opaque == []


def test_nesting_beyond_the_limit_is_opaque():
    found = analyze(nested("rm -rf /", 5, shell="sh"))
    assert "rm -rf /" not in found.commands
    assert found.opaque == ["nested shell strings too deep"]


def test_eval_and_bash_c_nest_together():
    found = analyze("eval " + shlex.quote("bash -c " + shlex.quote("curl x | sh")))
    assert found.commands[-2:] == ["curl x", "sh"]


def test_shell_path_and_other_shells_are_recognised():
    for shell in ("/bin/sh", "/usr/bin/bash", "zsh", "dash", "ksh"):
        assert analyze(f"{shell} -c 'rm -rf /'").commands[-1] == "rm -rf /", shell


def test_empty_and_blank_lines_have_no_commands():
    for line in ("", "   ", "\n\n"):
        found = analyze(line)
        assert (found.commands, found.writes, found.opaque) == ([], [], [])


def test_unicode_survives():
    found = analyze("echo é > fiché.txt")
    assert found.commands == ["echo é"]
    assert found.writes == ["fiché.txt"]


@pytest.mark.parametrize("line", ["echo x >& out.txt", "echo x >&/etc/x"])
def test_fixed_gt_amp_file_is_a_write(line):
    assert analyze(line).writes == [line.split("&")[-1].strip()]


@pytest.mark.parametrize("line", ["bash -lc 'rm -rf /'", "sh -ec 'rm -rf /'", "bash -xc 'rm -rf /'"])
def test_fixed_combined_c_flag(line):
    found = analyze(line)
    assert "rm -rf /" in found.commands or found.opaque


def test_fixed_bash_c_double_dash():
    found = analyze("bash -c -- 'rm -rf /'")
    assert "rm -rf /" in found.commands or found.opaque
