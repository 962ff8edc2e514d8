"""Core tools. Each declares a name, a permission domain, a JSON Schema for its
arguments, the targets a policy decides, and a `run` that does the work; truncation and spill files.

May import workspace, policy, record and core; never the engine that calls them.
"""
