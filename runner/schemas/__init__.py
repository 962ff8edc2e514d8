"""JSON Schemas the docs publish (events.jsonl records, the result on stdout); data files, no code."""
