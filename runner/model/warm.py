"""The openai SDK imported ahead of its first use, on a thread of its own.

Importing it (and the client modules on it) costs about a second of a run's start on a small CI machine; nothing
needs it before the first model client is built (`engine/build.make_model`), while the run's start spends much of
its time waiting on other processes (git for the workspace snapshot, the sandbox probe) and files (the policy).
`start()` at a run's beginning lets the import go on meanwhile; the client's own `import` then finds the module
loaded, or waits for this thread to finish it (Python's per-module import lock). An import that fails here fails
again, with its traceback, where the client imports it.
"""

from __future__ import annotations

import contextlib
import importlib
import threading

CLIENT = "runner.model.openai_chat"


def start() -> threading.Thread:
    # A daemon: a run that ends before it asks a model (a usage error) does not wait for the import to finish.
    thread = threading.Thread(target=_load, name="agent-run-import-openai", daemon=True)
    thread.start()
    return thread


def _load() -> None:
    with contextlib.suppress(Exception):  # raised again, with its traceback, where the client is built
        importlib.import_module(CLIENT)
