"""Git's configuration as an agent may see it: without the credentials git stores in it.

Pure. `actions/checkout` persists the job token in `.git/config` as
`http.https://github.com/.extraheader = AUTHORIZATION: basic …` (newer releases: in a file under
`$RUNNER_TEMP` pulled in by `includeIf`). What reads a repository's configuration for the model — the
file tools (`read`, `grep`) and, through a sanitized copy mounted over it, commands in the sandbox —
sees `sanitize(text)`: every line that can bear a credential removed, the rest as written, so git
still works for local operations (`git status`, `git log`, `git diff`). Removed:

- `http.*.extraheader` (an `Authorization` header), in any `http` section;
- every key whose value holds a URL with userinfo (`remote.*.url`, `pushurl`, `submodule.*.url`,
  `url.*.insteadOf`, `http.proxy`, …), and every section whose subsection name holds one
  (`[url "https://TOKEN@github.com/"]`, `[credential "https://user:pass@host"]`);
- every `credential` section (a helper may be a shell snippet with the secret inline);
- every `include` and `includeIf` section (they pull in files the agent cannot be shown).

A removed line leaves a comment saying so. The workspace is never written: the sanitized text is
returned (the tools) or written to a file of the runner's own (the sandbox).
"""

from __future__ import annotations

import re
from pathlib import PurePath

# A config file of a repository: `.git/config`, `.git/config.worktree`, `.git/worktrees/*/config.worktree`,
# `.git/modules/**/config`, and the same in a nested repository (`sub/.git/config`).
CONFIG_NAMES = frozenset({"config", "config.worktree"})
CREDENTIAL_FILE = ".git-credentials"  # `git credential-store`'s file: `https://user:token@host` lines
NOTE = "# [agent-run: a setting that may hold credentials was removed here]"

_HEADER = re.compile(r'^\s*\[\s*([^\]"\s]+)\s*(?:"((?:[^"\\]|\\.)*)")?\s*\](.*)$', re.DOTALL)
_KEY = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:=|$|[#;])")
_USERINFO = re.compile(r"://[^\s/@]*@")
_DROPPED_SECTIONS = frozenset({"include", "includeif", "credential"})


def is_git_config(path: PurePath) -> bool:
    """Whether `path` is a repository's config file: named `config` or `config.worktree` below a `.git`."""
    if path.name.casefold() not in CONFIG_NAMES:  # first: this runs once per file grep meets
        return False
    return ".git" in (p.casefold() for p in path.parts[:-1])  # `.GIT/CONFIG` is `.git/config` where case is ignored


def is_credential_file(path: PurePath) -> bool:
    return path.name.casefold() == CREDENTIAL_FILE


def seen_as(path: PurePath, data: bytes) -> bytes:
    """A file's bytes as the model may see them: a repository config sanitized, a `.git-credentials` empty,
    anything else as it is."""
    if is_credential_file(path):
        return b""
    if is_git_config(path):
        return sanitize(data.decode("utf-8", errors="surrogateescape")).encode("utf-8", errors="surrogateescape")
    return data


def sanitize(text: str) -> str:
    """`text` (a git config file) without the lines that may hold credentials (see the module docstring)."""
    out: list[str] = []
    section, dropping_section, continued, dropping_key = "", False, False, False
    for line in text.splitlines(keepends=True):
        if continued:  # the rest of a value that ended with a backslash
            continued = _continues(line)
            if not (dropping_key or dropping_section):
                out.append(line)
            continue
        header = _HEADER.match(line)
        if header:
            name, sub, rest = header.group(1), header.group(2) or "", header.group(3)
            section = name.split(".", 1)[0].casefold()
            dropping_section = section in _DROPPED_SECTIONS or bool(_USERINFO.search(f"{name} {sub}"))
            if dropping_section:
                out.append(NOTE + "\n")
                continued, dropping_key = _continues(rest), True
                continue
            key_part = rest.strip()
            if key_part and not key_part.startswith(("#", ";")) and _drops_key(section, key_part):
                out.append(line[:len(line) - len(rest)] + "\n" + NOTE + "\n")
                continued, dropping_key = _continues(rest), True
                continue
            out.append(line)
            continued, dropping_key = _continues(rest), False
            continue
        if dropping_section:
            continued, dropping_key = _continues(line), True
            continue
        dropping_key = _drops_key(section, line)
        continued = _continues(line)
        out.append(NOTE + "\n" if dropping_key else line)
    return "".join(out)


def _drops_key(section: str, line: str) -> bool:
    key = _KEY.match(line)
    if key is None:
        return False
    if section == "http" and key.group(1).casefold() == "extraheader":
        return True
    return bool(_USERINFO.search(line))


def _continues(line: str) -> bool:
    """A value that ends with a backslash goes on on the next line (a comment after it does not count)."""
    return line.rstrip("\r\n").endswith("\\") and not line.rstrip("\r\n").endswith("\\\\")
