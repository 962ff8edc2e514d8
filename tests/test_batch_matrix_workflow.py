"""examples/workflows/batch-matrix.yml: four shards from the matrix, each uploading its runs under a name of
its own, and a merge that runs even when a shard failed (schema, pinning and permissions are checked for
every workflow by tests/test_workflows.py)."""

from __future__ import annotations

from pathlib import Path

from ruamel.yaml import YAML

WORKFLOW = Path(__file__).resolve().parents[1] / "examples" / "workflows" / "batch-matrix.yml"


def test_the_matrix_shards_the_batch_and_one_job_merges_it():
    jobs = YAML(typ="safe", pure=True).load(WORKFLOW.read_text(encoding="utf-8"))["jobs"]
    shard, merge = jobs["shard"], jobs["merge"]
    assert shard["strategy"]["matrix"]["shard"] == [1, 2, 3, 4] and shard["strategy"]["fail-fast"] is False
    run = next(s for s in shard["steps"] if "agent-run batch" in s.get("run", ""))
    assert run["env"]["AGENT_RUN_SHARD"] == "${{ matrix.shard }}/4"
    assert run["run"].startswith("exec agent-run batch --shard auto ")
    upload = next(s for s in shard["steps"] if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["if"] == "always()" and upload["with"]["name"] == "agent-run-shard-${{ matrix.shard }}"
    assert upload["with"]["overwrite"] is True  # a re-run replaces its shard: a shard given twice is refused

    assert merge["needs"] == "shard" and merge["if"] == "always()"
    download = next(s for s in merge["steps"] if s.get("uses", "").startswith("actions/download-artifact@"))
    assert download["with"] == {"pattern": "agent-run-shard-*", "path": "shards"}
    assert next(s["run"] for s in merge["steps"] if "batch-merge" in s.get("run", "")).startswith(
        "exec agent-run batch-merge shards/* ")
