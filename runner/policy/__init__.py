"""Permission policy: load (JSONC + schema), match patterns, decide calls."""
