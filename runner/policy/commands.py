"""What a program does beyond its name: the per-command option table.

A rule such as `shell:git log *` means "git log reads history", but `git log --output=F` writes F
and `git -c core.fsmonitor=…` runs a program. `effects(argv)` reads a simple command's words
(literal values; None for what is only known at run time) the way the program parses them and
reports what its command line hides: files it writes (decided as `edit`), directories it reads,
commands it runs (decided like any other command), reasons to ask (a floor: never `allow`), and what
makes the command itself high risk (runner/policy/risk.py): it deletes, discards or rewrites history,
pushes, is a network client, or runs a script read from its input (`curl … | sh`): runner/policy/command_risk.py.
Like Codex's and Claude Code's tables it knows a few programs well; any other program is decided
on its command line alone, so allow it only if everything it can do is acceptable.

Options are read conservatively: a word that might be an option is checked as one, and a word only
known at run time where an option could be (`git log $ARGS`, a glob) is itself a reason to ask.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from runner.policy.command_risk import SHELLS, git_risk, program_risk
from runner.policy.sed import backup_name, sed_script_is_safe

Word = str | None

# Variables whose value changes what later commands run, read or write: bash's own (PATH, CDPATH,
# BASH_ENV, PS4 with `set -x`, …), git's (GIT_*, HOME and XDG_CONFIG_HOME locate its config), the
# dynamic loader's and the language runtimes' (code loaded at start-up), and the tools' config files.
SENSITIVE_NAMES = frozenset({
    "PATH", "HOME", "CDPATH", "IFS", "ENV", "PS0", "PS1", "PS2", "PS3", "PS4", "PROMPT_COMMAND", "SHELLOPTS",
    "GLOBIGNORE", "EXECIGNORE", "FIGNORE", "HISTFILE", "HOSTFILE", "INPUTRC", "MAIL", "MAILPATH", "OLDPWD", "PWD",
    "TMPDIR", "SHELL", "EDITOR", "VISUAL", "PAGER", "MANPAGER", "BROWSER", "TERMINFO", "TERMINFO_DIRS",
    "POSIXLY_CORRECT", "CC", "CXX", "CPP", "LD", "AR", "AS", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "MAKEFLAGS",
    "MAKEFILES", "MFLAGS", "CLASSPATH", "MAVEN_OPTS", "MAVEN_ARGS", "GRADLE_OPTS", "GRADLE_USER_HOME", "RUSTFLAGS",
    "RUSTDOCFLAGS", "GOFLAGS", "GOROOT", "GOPATH", "GOTOOLCHAIN", "GOPROXY", "GOENV", "KUBECONFIG", "VIRTUAL_ENV",
    "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
    "all_proxy", "NO_PROXY", "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
    "GCONV_PATH", "LOCPATH", "NLSPATH", "HOSTALIASES",
})
SENSITIVE_PREFIXES = (
    "BASH", "GIT_", "LD_", "DYLD_", "PYTHON", "PERL", "RUBY", "NODE_", "NPM_CONFIG_", "npm_config_", "YARN_", "JAVA_",
    "_JAVA_", "JDK_JAVA_", "XDG_", "CARGO_", "RUSTC", "RUSTUP_", "PIP_", "UV_", "CONDA", "GEM_", "BUNDLE_", "DOCKER_",
    "AWS_", "CLOUDSDK_", "AZURE_", "SSH_", "SUDO_", "LESS", "LUA_", "TOX_",
)


def sensitive_variable(name: str) -> bool:
    return name in SENSITIVE_NAMES or name.startswith(SENSITIVE_PREFIXES)


def assignment_note(name: str) -> str:
    return f"sets {name}, which changes what later commands run, read or write"


@dataclass
class Effects:
    writes: list[str] = field(default_factory=list)  # files written (decided as edit)
    reads: list[str] = field(default_factory=list)  # directories read (decided as read)
    reasons: list[str] = field(default_factory=list)  # why to ask
    runs: list[tuple[int, int]] = field(default_factory=list)  # argv[start:end] is a command it runs
    scripts: list[tuple[str, Word]] = field(default_factory=list)  # (who, shell script it runs)
    high: list[str] = field(default_factory=list)  # why the command is high risk (its effect, not a floor)

    def write(self, path: Word, what: str) -> None:
        if path is None:
            self.reasons.append(f"{what} writes a file only known at run time")
        else:
            self.writes.append(path)

    def assign(self, name: Word, what: str) -> None:
        """`what` sets the variable `name` (read, printf -v, env NAME=…)."""
        if name is None:
            self.reasons.append(f"computed variable name for {what} (a subscript in it is arithmetic)")
        elif "[" in name:
            self.reasons.append(f"array subscript in a variable name {name!r} (bash evaluates it as arithmetic)")
        elif sensitive_variable(name):
            self.reasons.append(assignment_note(name))


def effects(argv: list[Word]) -> Effects:
    """What the simple command `argv` (its program first, a literal) does beyond its name."""
    eff = Effects()
    handler = TABLE.get(str(argv[0]).rsplit("/", 1)[-1])
    if handler is not None:
        handler(argv, eff)
    if (why := program_risk(argv)) is not None:
        eff.high.append(why)
    return eff


# --- option parsing ------------------------------------------------------------------------------

def _at(args: list[Word], i: int) -> Word:
    return args[i] if i < len(args) else None


def _is(given: str, full: str) -> bool:
    """`given` is the long option `full`, or an abbreviation getopt_long would accept for it."""
    return given == full or (len(given) >= 4 and full.startswith(given) and given not in _EXACT_ELSEWHERE)


_EXACT_ELSEWHERE = frozenset({"--text"})  # real options that are prefixes of dangerous ones


def _getopt(args: list[Word], start: int, short_value: str = "", long_value: frozenset[str] = frozenset(),
            *, short_optional: str = "", longs: frozenset[str] = frozenset(), permute: bool = True,
            ) -> tuple[list[tuple[str, Word]], list[int], bool]:
    """GNU-style options from args[start:]: ([(name, value)], operand indices, whether a word only
    known at run time stood where an option may be). Long names are resolved through abbreviations
    of `longs | long_value`; without `permute` the first operand ends the options (a wrapper's command)."""
    opts: list[tuple[str, Word]] = []
    operands: list[int] = []
    computed = False
    known = longs | long_value
    i = start
    while i < len(args):
        a = args[i]
        if a is None or a == "-" or not a.startswith("-"):
            computed = computed or a is None
            if not permute:
                return opts, [*operands, *range(i, len(args))], computed
            operands.append(i)
            i += 1
            continue
        if a == "--":
            operands += range(i + 1, len(args))
            break
        if a.startswith("--"):
            name, eq, value = a.partition("=")
            matches = [k for k in known if k.startswith(name)]
            full = name if name in known or len(matches) != 1 else matches[0]
            takes_next = full in long_value and not eq
            opts.append((full, _at(args, i + 1) if takes_next else value if eq else None))
            i += 2 if takes_next else 1
            continue
        for j in range(1, len(a)):
            ch = a[j]
            if ch in short_optional:
                opts.append(("-" + ch, a[j + 1:]))
                break
            if ch in short_value:
                opts.append(("-" + ch, a[j + 1:] or _at(args, i + 1)))
                i += 0 if a[j + 1:] else 1
                break
            opts.append(("-" + ch, None))
        i += 1
    return opts, operands, computed


# --- git -----------------------------------------------------------------------------------------

_GIT_LONG = {  # long options (any subcommand) that run a program, read outside, or install hooks
    "--ext-diff": "git --ext-diff runs an external diff program",
    "--textconv": "git --textconv runs text conversion filters",
    "--no-index": "git --no-index compares files outside the repository",
    "--upload-pack": "git --upload-pack runs a program",
    "--receive-pack": "git --receive-pack runs a program",
    "--exec": "git --exec runs a program",
    "--template": "git --template installs hooks from a directory",
    "--open-files-in-pager": "git grep --open-files-in-pager runs a pager program",
    "--config": "git clone --config sets configuration, which can run programs",
}
_GIT_SHORT = {  # (subcommand, short option letter): why
    ("clone", "u"): "git clone -u is --upload-pack: it runs a program",
    ("ls-remote", "u"): "git ls-remote -u is --upload-pack: it runs a program",
    ("clone", "c"): "git clone -c sets configuration, which can run programs",
    ("grep", "O"): "git grep -O runs a pager program",
    ("rebase", "x"): "git rebase -x runs a command",
}
_GIT_RUNS = {("bisect", "run"), ("submodule", "foreach")}
_GIT_CONFIG_GETS = frozenset({"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--get-color",
                              "--get-colorbool", "--list", "-l", "--blob"})
_GIT_CONFIG_SETS = frozenset({"--unset", "--unset-all", "--add", "--replace-all", "--rename-section",
                              "--remove-section", "--edit", "-e"})
_GIT_CONFIG_FILES = {"--global": "~/.gitconfig", "--system": "/etc/gitconfig", "--worktree": ".git/config.worktree"}


def _git(args: list[Word], eff: Effects) -> None:
    i = 1
    while i < len(args):
        a = args[i]
        if a is None:
            eff.reasons.append("computed argument to git (it could be an option)")
            return
        if a == "--" or not a.startswith("-"):
            break
        name, eq, value = a.partition("=")
        if a.startswith("-C"):
            d, i = (a[2:], i + 1) if len(a) > 2 else (_at(args, i + 1), i + 2)
            eff.reads += [d] if d is not None else []
            eff.reasons.append("git -C runs git in another directory, with that repository's configuration")
            continue
        if a.startswith("-c"):
            eff.reasons.append("git -c sets configuration, which can run programs (core.fsmonitor, core.pager, …)")
            i += 1 if len(a) > 2 else 2
            continue
        if name in ("--git-dir", "--work-tree"):
            d, i = (value, i + 1) if eq else (_at(args, i + 1), i + 2)
            eff.reads += [d] if d is not None else []
            eff.reasons.append(f"git {name} uses another repository or work tree, with its configuration")
            continue
        if name in ("--config-env", "--namespace", "--super-prefix"):
            eff.reasons.append(f"git {name} changes which configuration or refs git uses")
            i += 1 if eq else 2
            continue
        if name == "--exec-path":
            eff.reasons.append("git --exec-path chooses the directory git runs its programs from")
        elif name == "--bare":
            eff.reasons.append("git --bare treats the current directory as a repository, with its configuration")
        i += 1
    if i >= len(args):
        return
    sub = str(args[i])
    if sub == "config":
        _git_config(args[i + 1:], eff)
    if (why := git_risk(sub, args[i + 1:])) is not None:
        eff.high.append(why)
    if (sub, str(_at(args, i + 1))) in _GIT_RUNS:
        eff.reasons.append(f"git {sub} {args[i + 1]} runs a command")
    j = i + 1
    while j < len(args):
        a = args[j]
        if a is None:
            eff.reasons.append("computed argument to git (it could be an option)")
        elif a == "--":
            break
        elif a.startswith("--"):
            name, eq, value = a.partition("=")
            if _is(name, "--output") or (sub == "format-patch" and _is(name, "--output-directory")):
                eff.write(value if eq else _at(args, j + 1), f"git {name}")
                j += 1 if eq else 2
                continue
            eff.reasons += [why for flag, why in _GIT_LONG.items() if _is(name, flag)]
        elif a.startswith("-") and len(a) > 1:
            if sub in ("format-patch", "archive") and a.startswith("-o"):
                eff.write(a[2:] or _at(args, j + 1), f"git {sub} -o")
                j += 1 if len(a) > 2 else 2
                continue
            eff.reasons += [why for (s, letter), why in _GIT_SHORT.items() if s == sub and letter in a[1:]]
        j += 1


def _git_config(args: list[Word], eff: Effects) -> None:
    """`git config` writes the repository's config (a hard limit) unless it only reads."""
    opts, operands, _ = _getopt(args, 0, "f", frozenset({"--file", "--type", "--default", "--comment", "--value"}))
    names = {n for n, _ in opts}
    first = args[operands[0]] if operands else None
    if names & _GIT_CONFIG_GETS or first in ("get", "list"):
        return
    if names & _GIT_CONFIG_SETS or first in ("set", "unset", "rename-section", "remove-section", "edit") or \
            len(operands) >= 2:
        where: Word = ".git/config"
        for n, v in opts:
            if n in ("-f", "--file"):
                where = v
            elif n in _GIT_CONFIG_FILES:
                where = _GIT_CONFIG_FILES[n]
        eff.write(where, "git config")


# --- find, sed, sort, tee ------------------------------------------------------------------------

def _find(args: list[Word], eff: Effects) -> None:
    """Every word is checked as a primary: a test's value that looks like one only asks more."""
    i = 1
    while i < len(args):
        a = args[i]
        if a is None:
            eff.reasons.append("computed argument to find (it could be -delete or -exec)")
        elif a in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next((k for k in range(i + 1, len(args)) if args[k] in (";", "+")), len(args))
            eff.reasons.append(f"find {a} runs a command on every file it finds")
            eff.runs.append((i + 1, end))
            i = end
        elif a == "-delete":
            eff.reasons.append("find -delete deletes the files it finds")
            eff.high.append("find -delete deletes the files it finds")
        elif a in ("-fprint", "-fprint0", "-fls", "-fprintf"):
            eff.write(_at(args, i + 1), f"find {a}")
            i += 2 if a == "-fprintf" else 1
        i += 1


_SED_LONGS = frozenset({"--in-place", "--sandbox", "--quiet", "--silent", "--regexp-extended", "--separate",
                        "--null-data", "--zero-terminated", "--unbuffered", "--follow-symlinks", "--posix",
                        "--debug", "--binary", "--help", "--version"})
_SED_SCRIPT = "sed script that can write files or run commands (w, W, e, s///w, s///e, or a script file)"


def _sed(args: list[Word], eff: Effects) -> None:
    opts, operands, computed = _getopt(args, 1, "efl", frozenset({"--expression", "--file", "--line-length"}),
                                       short_optional="i", longs=_SED_LONGS)
    names = [n for n, _ in opts]
    scripts = [v for n, v in opts if n in ("-e", "--expression")]
    if not scripts and not any(n in ("-f", "--file") for n in names) and operands:
        scripts.append(args[operands.pop(0)])
    unsafe = any(n in ("-f", "--file") for n in names) or not all(s and sed_script_is_safe(s) for s in scripts)
    if unsafe and "--sandbox" not in names:
        eff.reasons.append(_SED_SCRIPT)
    in_place = [v for n, v in opts if n in ("-i", "--in-place")]
    if computed and in_place:
        eff.reasons.append("computed argument to sed -i (the files it rewrites are only known at run time)")
    elif computed:
        eff.reasons.append("computed argument to sed (it could be an option such as -i)")
    if in_place:
        suffix = in_place[-1] or ""
        for k in operands:
            path = args[k]
            if path is not None:
                eff.writes.append(path)
                if suffix:
                    eff.writes.append(backup_name(path, suffix))


_SORT_VALUE = frozenset({"--key", "--field-separator", "--output", "--buffer-size", "--temporary-directory",
                         "--parallel", "--batch-size", "--compress-program", "--files0-from", "--random-source",
                         "--sort"})


def _sort(args: list[Word], eff: Effects) -> None:
    opts, _, computed = _getopt(args, 1, "ktoST", _SORT_VALUE)
    if computed:
        eff.reasons.append("computed argument to sort (it could be -o FILE)")
    for name, value in opts:
        if name in ("-o", "--output"):
            eff.write(value, f"sort {name}")
        elif name == "--compress-program":
            eff.reasons.append("sort --compress-program runs a program")


def _tee(args: list[Word], eff: Effects) -> None:
    _, operands, _ = _getopt(args, 1, longs=frozenset({"--append", "--ignore-interrupts", "--output-error"}))
    for k in operands:
        if args[k] is None:
            eff.reasons.append("tee to a computed file (only known at run time)")
        else:
            eff.writes.append(str(args[k]))


# --- builtins that set variables by name ---------------------------------------------------------
# A name with a subscript (`a[$(cmd)]`) is evaluated as arithmetic; a sensitive name changes what runs.
# (short options taking a value, those whose value is a variable name, which operands are names)
_SETTERS: dict[str, tuple[str, str, slice]] = {
    "read": ("adinNptu", "a", slice(None)), "mapfile": ("dnOsuCc", "", slice(0, 1)),
    "readarray": ("dnOsuCc", "", slice(0, 1)), "printf": ("v", "v", slice(0, 0)),
    "getopts": ("", "", slice(1, 2)), "wait": ("p", "p", slice(0, 0)),
}


def _setter(args: list[Word], eff: Effects) -> None:
    prog = str(args[0])
    short, named, names = _SETTERS[prog]
    opts, operands, computed = _getopt(args, 1, short, permute=False)  # bash builtins stop at an operand
    if computed and operands and args[operands[0]] is None and prog == "printf":
        eff.reasons.append("computed first argument to printf (it could be -v NAME)")
    for name, value in opts:
        if name[1:] in named:
            eff.assign(value, f"{prog} {name}")
        elif name == "-C":
            eff.reasons.append(f"{prog} -C evaluates a callback as code")
    for k in operands[names]:
        eff.assign(args[k], prog)


def _test(args: list[Word], eff: Effects) -> None:
    for k in range(1, len(args) - 1):
        if args[k] == "-v" and (args[k + 1] is None or "[" in str(args[k + 1])):
            eff.assign(args[k + 1], "test -v")


_ARITH_LITERAL = re.compile(r"[\s0-9+\-*/%<>=!&|^~?:(),]*")


def _let(args: list[Word], eff: Effects) -> None:
    if not all(a is not None and _ARITH_LITERAL.fullmatch(a) for a in args[1:]):
        eff.reasons.append("let: arithmetic with a variable operand (bash evaluates the variable's value as code)")


# --- wrappers: programs that run another command -------------------------------------------------

@dataclass(frozen=True)
class Wrapper:
    short_value: str = ""  # short options that take a value
    long_value: frozenset[str] = frozenset()
    short_optional: str = ""  # short options whose value is attached or absent
    assignments: bool = False  # NAME=VALUE words before the command (env, sudo)
    no_command: frozenset[str] = frozenset()  # options that mean nothing is run (`command -v`)
    asks: dict[tuple[str, ...], str] = field(default_factory=dict)  # options -> why
    script: frozenset[str] = frozenset()  # options whose value is a shell script (`su -c`)
    writes: frozenset[str] = frozenset()  # options whose value is a file written (`time -o`)


WRAPPERS: dict[str, Wrapper] = {
    "env": Wrapper("uCSP", frozenset({"--unset", "--chdir", "--split-string"}), assignments=True,
                   asks={("-S", "--split-string"): "env -S splits a string into a command",
                         ("-C", "--chdir"): "env -C runs the command in another directory",
                         ("-P",): "env -P searches another PATH for the command"}),
    "nice": Wrapper("n", frozenset({"--adjustment"})),
    "nohup": Wrapper(),
    "timeout": Wrapper("sk", frozenset({"--signal", "--kill-after"})),
    "time": Wrapper("fo", frozenset({"--format", "--output"}), writes=frozenset({"-o", "--output"})),
    "command": Wrapper(no_command=frozenset({"-v", "-V"})),
    "builtin": Wrapper(),
    "exec": Wrapper("a"),
    "sudo": Wrapper("ugCDhprtUTR", frozenset({"--user", "--group", "--close-from", "--chdir", "--host", "--prompt",
                                               "--role", "--type", "--other-user", "--command-timeout", "--chroot"}),
                    assignments=True, asks={("-e", "--edit"): "sudo -e edits files",
                                            ("-D", "--chdir"): "sudo -D runs the command in another directory",
                                            ("-R", "--chroot"): "sudo -R runs the command in another root"}),
    "doas": Wrapper("uC"),
    "su": Wrapper("csgGw", frozenset({"--command", "--session-command", "--shell", "--group", "--supp-group",
                                       "--whitelist-environment"}),
                  script=frozenset({"-c", "--command", "--session-command"})),
    "stdbuf": Wrapper("ioe", frozenset({"--input", "--output", "--error"})),
    "setsid": Wrapper(),
    "ionice": Wrapper("cnp", frozenset({"--class", "--classdata", "--pid"})),
    "flock": Wrapper("wEc", frozenset({"--timeout", "--wait", "--conflict-exit-code", "--command"}),
                     script=frozenset({"-c", "--command"})),
    "watch": Wrapper("ndq", frozenset({"--interval", "--differences", "--equexit"})),
    "xargs": Wrapper("adEILnPs", frozenset({"--arg-file", "--delimiter", "--max-args", "--max-procs",
                                            "--max-chars", "--process-slot-var"}), short_optional="eil"),
}


def _wrapper(args: list[Word], eff: Effects) -> None:
    prog = str(args[0]).rsplit("/", 1)[-1]
    spec = WRAPPERS[prog]
    opts, operands, _ = _getopt(args, 1, spec.short_value, spec.long_value, short_optional=spec.short_optional,
                                permute=False)
    names = {n for n, _ in opts}
    for name, value in opts:
        eff.reasons += [why for options, why in spec.asks.items() if name in options]
        if name in spec.script:
            eff.scripts.append((f"{prog} {name}", value))
        if name in spec.writes:
            eff.write(value, f"{prog} {name}")
        if name == "--process-slot-var":
            eff.assign(value, "xargs --process-slot-var")
    if names & (spec.no_command | spec.script):
        return
    rest = list(operands)
    if prog == "flock" and rest:  # flock [options] FILE (COMMAND… | -c SCRIPT)
        eff.write(args[rest[0]], "flock")
        rest = rest[1:]
        if rest and args[rest[0]] in ("-c", "--command"):
            eff.scripts.append(("flock -c", _at(args, rest[0] + 1)))
            return
    elif prog == "timeout":  # timeout [options] DURATION COMMAND…
        rest = rest[1:]
    while spec.assignments and rest and args[rest[0]] is not None and "=" in str(args[rest[0]]):
        eff.assign(str(args[rest[0]]).split("=", 1)[0], prog)
        rest = rest[1:]
    if not rest:
        return
    start = rest[0]
    if prog == "watch" and not names & {"-x", "--exec"}:
        # watch joins its arguments with spaces and gives them to `sh -c`
        words = args[start:]
        eff.scripts.append(("watch", None if None in words else " ".join(str(w) for w in words)))
        return
    if prog != "xargs" or _xargs_command(args, start, opts, eff):
        eff.runs.append((start, len(args)))


def _xargs_command(args: list[Word], start: int, opts: list[tuple[str, Word]], eff: Effects) -> bool:
    """xargs appends words read at run time: harmless for most programs, not for those whose options
    or arguments this table decides (or that run what they are given). False: the command is unknown."""
    replace = [v or "{}" for n, v in opts if n in ("-I", "-i", "--replace")]
    prog = args[start]
    if prog is None or any(r in prog for r in replace):
        eff.reasons.append("xargs runs a computed command")
        return False
    base = prog.rsplit("/", 1)[-1]
    if base in TABLE or base in (*SHELLS, "eval", "source", "."):
        eff.reasons.append(f"xargs passes arguments read at run time to {base}, whose arguments decide what it does")
    return True


TABLE: dict[str, Callable[[list[Word], Effects], None]] = {
    "git": _git, "find": _find, "sed": _sed, "gsed": _sed, "sort": _sort, "tee": _tee,
    **dict.fromkeys(_SETTERS, _setter), "test": _test, "[": _test, "let": _let,
    **dict.fromkeys(WRAPPERS, _wrapper),
}
