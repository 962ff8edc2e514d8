"""JSON Schemas the docs publish (events.jsonl and audit.jsonl records, summary.json, the result on stdout);
data files, no code."""
