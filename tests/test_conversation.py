"""Reading a recorded conversation back (runner/record/conversation.py): the files a log names are read only
when they are regular files — a run directory is untrusted, and a FIFO or a device would hang the read."""

from __future__ import annotations

import os
import threading

import pytest

from runner.record.conversation import ConversationError, load_messages
from tests.fakes.wait import HANG_S


@pytest.mark.parametrize("where", ["snapshot", "device"])
def test_a_snapshot_that_is_not_a_regular_file_is_refused_not_waited_on(tmp_path, where):
    if where == "snapshot":
        os.mkfifo(tmp_path / "snap.json")  # no writer: a blocking open waits for good
        ref = {"path": "snap.json", "sha256": "0" * 64}
    else:
        ref = {"path": "/dev/zero", "sha256": "0" * 64}  # a path the log names: never read to its end
    errors: list[str] = []

    def load() -> None:
        try:
            load_messages(tmp_path, ref)
        except ConversationError as exc:
            errors.append(str(exc))

    reader = threading.Thread(target=load, daemon=True)
    reader.start()
    reader.join(HANG_S)
    assert errors and "not a regular file" in errors[0], "load_messages waited on, or read, a non-regular file"
