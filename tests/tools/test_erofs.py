"""The paths a command's output names as refused by a read-only file system (runner/tools/erofs.py), in the forms
git, coreutils, bash and Python print them (taken from runs in the sandbox)."""

from __future__ import annotations

import pytest

from runner.tools.erofs import refused_writes

FORMS = [
    ("fatal: Unable to create '/ws/.git/index.lock': Read-only file system", ["/ws/.git/index.lock"]),
    ("fatal: cannot lock ref 'refs/heads/n': Unable to create '/ws/.git/refs/heads/n.lock': Read-only file system",
     ["/ws/.git/refs/heads/n.lock"]),
    ("error: could not lock config file .git/config: Read-only file system", [".git/config"]),
    ("error: cannot open '.git/FETCH_HEAD': Read-only file system", [".git/FETCH_HEAD"]),
    ("bash: line 1: .git/foo: Read-only file system", [".git/foo"]),
    ("touch: cannot touch '.git/bar': Read-only file system", [".git/bar"]),
    ("mkdir: cannot create directory ‘/usr/xx’: Read-only file system", ["/usr/xx"]),
    ("OSError: [Errno 30] Read-only file system: '.git/baz'", [".git/baz"]),
    ("error: insufficient permission for adding an object to repository database .git/objects", [".git/objects"]),
    ("error: unable to write file '.git/objects/ab/cdef'", [".git/objects/ab/cdef"]),
    ("cp: cannot create regular file: Read-only file system", []),  # said, no path: the caller picks the mount
    ("bash: x: Read-only file system", []),  # a bare word is no path
    ("everything is fine\nfatal: not a git repository", None),
]


@pytest.mark.parametrize(("output", "paths"), FORMS)
def test_each_form_names_its_path(output, paths):
    assert refused_writes(output) == paths


def test_each_path_once_in_the_order_printed():
    output = "a\nfatal: Unable to create '/w/.git/index.lock': Read-only file system\n" \
             "touch: cannot touch '/usr/x': Read-only file system\n" \
             "fatal: Unable to create '/w/.git/index.lock': Read-only file system\n"
    assert refused_writes(output) == ["/w/.git/index.lock", "/usr/x"]
