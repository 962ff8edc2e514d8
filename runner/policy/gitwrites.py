"""Whether a simple command is git writing its repository (`git commit`, `git add`, `git stash`, …): what meets the
sandbox's read-only `.git` (runner/sandbox/gitmounts.py) however the policy decides it, so `policy explain` says so
beside an allow. Pure over the command's words; the forms of a subcommand that only read (`git branch`, `git tag -l`,
`git stash list`, `git config --get`) are not writes.
"""

from __future__ import annotations

import shlex

# The subcommands that write the repository's `.git` (its index, refs, objects or config) in their usual forms.
WRITES = ("commit", "add", "rm", "mv", "checkout", "switch", "restore", "reset", "stash", "tag", "branch", "merge",
          "rebase", "cherry-pick", "am", "fetch", "pull", "gc", "config")
# git's own options before the subcommand that take the next word as their value.
_VALUED = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix"})
_LISTS = frozenset({"-l", "--list", "--show-current", "-v", "-vv", "--verbose", "--contains", "--no-contains",
                    "--merged", "--no-merged", "--points-at"})
_REF_CHANGES = frozenset({"-d", "-D", "--delete", "-m", "-M", "--move", "-c", "-C", "--copy", "-u",
                          "--set-upstream-to", "--unset-upstream", "--edit-description"})
_CONFIG_READS = frozenset({"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l"})
_CONFIG_SETS = frozenset({"--unset", "--unset-all", "--add", "--replace-all", "--rename-section", "--remove-section",
                          "--edit", "-e"})
_CONFIG_VERBS = ("set", "unset", "rename-section", "remove-section", "edit")
_CONFIG_ELSEWHERE = frozenset({"--global", "--system", "-f", "--file", "--blob"})  # not the repository's config


def git_write(command: str) -> str | None:
    """The subcommand (`commit`) when `command`, one simple command as the policy's shell targets name it, is git
    writing its repository; else None."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if not words or words[0] != "git":
        return None
    i = 1
    while i < len(words) and words[i].startswith("-"):
        i += 2 if words[i] in _VALUED else 1
    if i >= len(words) or words[i] not in WRITES:
        return None
    sub, rest = words[i], words[i + 1:]
    options = {w.partition("=")[0] for w in rest if w.startswith("-")}
    operands = [w for w in rest if not w.startswith("-")]
    if sub in ("branch", "tag"):
        writes = bool(options & _REF_CHANGES) or (bool(operands) and not options & _LISTS)
    elif sub == "stash":
        writes = not operands or operands[0] not in ("list", "show")
    elif sub == "config":
        sets = bool(options & _CONFIG_SETS) or len(operands) >= 2 or operands[:1] in ([v] for v in _CONFIG_VERBS)
        writes = sets and not options & (_CONFIG_READS | _CONFIG_ELSEWHERE) and operands[:1] not in (["get"], ["list"])
    else:
        writes = True
    return sub if writes else None
