"""The shard rule as a pure function: task k of the batch's order (the paths sorted by code point) runs in
shard k mod N + 1, so the shards partition the list on every machine, whatever order the paths came in."""

from __future__ import annotations

import random

import pytest

from runner.batch.shard import MAX_SHARDS, Shard, ShardError, cut, parse, resolve, shard_of, task_order, tasks_sha256


def test_the_shards_partition_the_sorted_list_round_robin():
    tasks = [f"tasks/t{i:02}.md" for i in range(10)]
    random.Random(7).shuffle(tasks)
    cuts = [cut(tasks, Shard(i, 4)) for i in range(1, 5)]
    assert cuts[0] == ["tasks/t00.md", "tasks/t04.md", "tasks/t08.md"]
    assert cuts[3] == ["tasks/t03.md", "tasks/t07.md"]
    assert sorted(t for c in cuts for t in c) == sorted(tasks)  # each task in exactly one shard
    assert [shard_of(k, 4) for k in range(6)] == [1, 2, 3, 4, 1, 2]


@pytest.mark.parametrize("total", [1, 2, 3, 7, 13])
def test_every_task_in_exactly_one_shard_for_any_count(total):
    tasks = [f"{c}{i}.md" for i in range(11) for c in "bA_é"]  # mixed case and non-ASCII: code-point order
    seen = [t for i in range(1, total + 1) for t in cut(tasks, Shard(i, total))]
    assert sorted(seen) == sorted(tasks) and len(seen) == len(tasks)


def test_the_order_and_the_hash_do_not_depend_on_the_order_given():
    tasks = ["b.md", "B.md", "a.md", "é.md", "a.md"]
    assert task_order(tasks) == ["B.md", "a.md", "a.md", "b.md", "é.md"]  # code points, not a locale
    assert tasks_sha256(tasks) == tasks_sha256(list(reversed(tasks)))
    assert tasks_sha256(["a\nb"]) != tasks_sha256(["a", "b"])  # a newline in a path is no separator


def test_parse_takes_one_based_i_of_n_only():
    assert parse("2/4") == Shard(2, 4) and parse(" 1/1 ") == Shard(1, 1)
    for bad in ("0/4", "5/4", "4", "a/b", "1/0", "-1/2", "", f"1/{MAX_SHARDS + 1}"):
        with pytest.raises(ShardError):
            parse(bad)


def test_auto_reads_gitlab_then_agent_run_shard_and_refuses_neither():
    assert resolve("auto", {"CI_NODE_INDEX": "3", "CI_NODE_TOTAL": "5", "AGENT_RUN_SHARD": "1/2"}) == Shard(3, 5)
    assert resolve("auto", {"AGENT_RUN_SHARD": "2/3"}) == Shard(2, 3)
    assert resolve("1/2", {"CI_NODE_INDEX": "3", "CI_NODE_TOTAL": "5"}) == Shard(1, 2)  # given wins
    for env in ({}, {"AGENT_RUN_SHARD": "auto"}, {"CI_NODE_INDEX": "2"}, {"AGENT_RUN_SHARD": "3/2"}):
        with pytest.raises(ShardError):
            resolve("auto", env)
