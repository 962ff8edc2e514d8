"""runner/record/jsonl.py: the one reader of a run's JSON-lines files, its line cap and depth cap, on small files
(the cap given small: the logic is the same at MAX_LINE_BYTES)."""

from __future__ import annotations

from runner.record.jsonl import BadLine, Long, iter_events, iter_lines, parse_line

CHUNK = 1 << 16


def test_a_line_over_the_cap_is_measured_never_held_and_the_next_lines_are_read(tmp_path):
    log = tmp_path / "events.jsonl"
    long = b'{"x":"' + b"y" * (3 * CHUNK) + b'"}\n'
    log.write_bytes(b'{"a":1}\n' + long + b'{"b":2}\n')
    lines = list(iter_lines(log, cap=2 * CHUNK))
    assert lines == [b'{"a":1}\n', Long(len(long), torn=False), b'{"b":2}\n']
    assert list(iter_lines(log, cap=4 * CHUNK))[1] == long  # under the cap: read whole
    bad = parse_line(lines[1], 2, cap=2 * CHUNK)
    assert isinstance(bad, BadLine) and bad.why == f"longer than {2 * CHUNK:,} bytes ({len(long):,})"


def test_a_torn_tail_past_one_chunk_is_never_held_and_a_short_one_is_read(tmp_path):
    log = tmp_path / "events.jsonl"
    log.write_bytes(b'{"a":1}\n' + b'{"x":"' + b"y" * (2 * CHUNK))
    assert list(iter_lines(log))[1] == Long(2 * CHUNK + 6, torn=True)
    told: list[BadLine] = []
    assert list(iter_events(log, on_bad=told.append)) == [{"a": 1}] and told == []  # a killed run's tail: no news
    log.write_bytes(b'{"a":1}\n{"b":2}')  # a short last line without its newline reads as before
    assert list(iter_events(log)) == [{"a": 1}, {"b": 2}]


def test_lines_nested_past_the_depth_cap_or_not_records_are_told_and_left_out(tmp_path):
    log = tmp_path / "events.jsonl"
    deep_parsed = b'{"x":' + b"[" * 250 + b"]" * 250 + b"}\n"  # parses, but deeper than 200
    deep_unparsed = b'{"x":' + b"[" * 50_000 + b"]" * 50_000 + b"}\n"  # the parser's own recursion gives out
    log.write_bytes(b'{"a":1}\n' + deep_parsed + deep_unparsed + b"[1]\nnot json\n" + b'{"x":' + b"[" * 199
                    + b"]" * 199 + b"}\n")
    told: list[BadLine] = []
    records = list(iter_events(log, on_bad=told.append))
    assert len(records) == 2 and records[0] == {"a": 1}  # 200 levels deep is a record
    assert [(b.number, b.why.split(" (")[0]) for b in told] == [
        (2, "nested deeper than 200 levels"), (3, "nested deeper than 200 levels"), (4, "not a JSON object"),
        (5, "not JSON")]


def test_end_stops_before_a_line_that_crosses_it(tmp_path):
    log = tmp_path / "events.jsonl"
    log.write_bytes(b'{"a":1}\n{"b":2}\n{"c"')
    assert list(iter_events(log, end=16)) == [{"a": 1}, {"b": 2}]
    assert list(iter_events(log, end=10)) == [{"a": 1}]
