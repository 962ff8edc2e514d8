"""What makes a command high risk by its effect (runner/policy/risk.py), read from its words like the option table
(runner/policy/commands.py) reads what it writes: it deletes (`rm`, `git clean`), discards work or rewrites history
(`git reset --hard`, `git push --force`), pushes or is another network client (`git push`, `curl`, `wget`), or is a
shell running a script read from its input (`curl … | sh`). Each answer is the reason, shown when the policy asks.
"""

from __future__ import annotations

Word = str | None

SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
_DELETERS = frozenset({"rm", "rmdir", "unlink", "shred"})
_NETWORK_CLIENTS = frozenset({"curl", "wget", "aria2c", "nc", "ncat", "netcat", "ssh", "scp", "sftp", "telnet", "ftp"})
_SHELL_VALUE = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})  # shell options taking a value

_GIT_HIGH = {
    "clean": "git clean deletes untracked files",
    "rm": "git rm deletes files",
    "fetch": "git fetch is a network client", "pull": "git pull is a network client",
    "clone": "git clone is a network client", "ls-remote": "git ls-remote is a network client",
}
_GIT_FORCE = frozenset({"--force", "--force-with-lease", "--force-if-includes", "--mirror", "--delete", "--prune"})


def program_risk(argv: list[Word]) -> str | None:
    """Why the simple command `argv` (its program first, a literal) is high risk by its program, or None."""
    prog = str(argv[0]).rsplit("/", 1)[-1]
    if prog in _DELETERS:
        return f"{prog} deletes files"
    if prog in _NETWORK_CLIENTS:
        return f"{prog} is a network client"
    if prog in SHELLS and _reads_script_from_input(argv):
        return f"{prog} runs a script read from its input (what is piped into it)"
    return None


def git_risk(sub: str, rest: list[Word]) -> str | None:
    """Why `git SUB REST…` is high risk, or None. A word only known at run time could be the option that is."""
    if sub == "rm" and "--cached" in rest and None not in rest:
        return None  # only the index: the files stay
    if sub in _GIT_HIGH:
        return _GIT_HIGH[sub]
    if sub == "reset" and any(a is None or _abbreviates(a, "--hard") for a in rest):
        return "git reset --hard discards uncommitted changes"
    if sub == "push":
        force = any(a is None or a.startswith("+") or a.partition("=")[0] in _GIT_FORCE or
                    (a.startswith("-") and not a.startswith("--") and bool(set(a[1:]) & set("fd"))) for a in rest)
        return "git push --force rewrites the remote's history" if force else \
            "git push publishes commits (a network client)"
    return None


def _abbreviates(given: str, full: str) -> bool:
    return given == full or (len(given) >= 4 and full.startswith(given))


def _reads_script_from_input(argv: list[Word]) -> bool:
    """A shell without `-c` (decided apart: its script is parsed) runs a script file, or one read from its input:
    what was piped into it is code nobody decided. A script file is the workspace's code, like `make`'s."""
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "--":
            return i + 1 >= len(argv)
        if a is None or not a.startswith(("-", "+")):
            return False
        if a in _SHELL_VALUE:
            i += 2
            continue
        if not a.startswith("--") and "s" in a[1:]:
            return True  # -s: the script is its input
        i += 1
    return True
