from __future__ import annotations

from pathlib import Path

import pytest

from runner.engine.cancel import RunCancel
from runner.tools.base import ToolContext


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    # Resolved, as the runner resolves it: tmp dirs may sit behind a symlink (macOS /tmp).
    path = (tmp_path / "ws").resolve()
    path.mkdir()
    return path


@pytest.fixture
def ctx(ws: Path) -> ToolContext:
    return ToolContext(workspace=ws, cancel=RunCancel())
