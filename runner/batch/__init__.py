"""A batch of tasks beyond one machine: the shard rule (`shard.py`), the shards' outputs read and merged
into one result (`merge.py`), batch.json's entries and exit rule (`result.py`), which `batch` and `batch-merge`
both write; how the tasks share the workspace (`isolation.py`) and run as processes of their own (`tasks.py`).

Just under `runner.cli` (only it imports this); may import `runner.report` and everything below it.
"""
