"""sed, read as GNU sed reads it: whether a script only edits its stream, and where `-i SUFFIX` puts
its backup file. Pure functions for the option table (runner/policy/commands.py).
"""

from __future__ import annotations

import posixpath
import re


def backup_name(path: str, suffix: str) -> str:
    """GNU sed's backup file: `*` in the suffix is the file's name; without `/` it is beside the file."""
    if "*" not in suffix:
        return path + suffix
    name = suffix.replace("*", posixpath.basename(path))
    return name if "/" in name else posixpath.join(posixpath.dirname(path), name)


_SED_ADDRESS = r"(?:\d+(?:~\d+)?|\$|/(?:\\.|[^\\/\n])*/[IM]*)"
_SED_PART = r"(?:\\.|(?!(?P=d))[^\\])*(?P=d)"  # up to the next unescaped delimiter
# One sed command that neither writes a file nor runs a program (no w, W, e, s///w, s///e).
_SED_COMMAND = re.compile(rf"""
    [\s;]* (?:{_SED_ADDRESS} (?:\s*,\s*(?:[+~]\d+|{_SED_ADDRESS}))? )? [\s!]*   # addresses, negation
    (?: [{{}}=dDgGhHnNpPxzFlLqQ][ \t\d]*                                    # no file, no program
      | [\#:btT][^\n;]* | [rRv][^\n]*                                        # comment, label, file read
      | [aic](?:\\.|[^\\\n])*                                                 # text
      | [sy](?P<d>[^\\\n]){_SED_PART}{_SED_PART}[gpiImM\d \t]*(?=[\n;}}]|$)   # s and y, harmless flags
    )""", re.VERBOSE | re.DOTALL)


def sed_script_is_safe(script: str) -> bool:
    """Whether a sed script only edits its stream: no `w`/`W`/`e` command, no `s///w` or `s///e`
    flag. A script this reader cannot follow command by command is not safe."""
    i = 0
    while i < len(script.rstrip(" \t\n;")):
        found = _SED_COMMAND.match(script, i)
        if found is None or found.end() == i:
            return False
        i = found.end()
    return True
