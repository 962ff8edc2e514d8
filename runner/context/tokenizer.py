"""A tokenizer for the context's count, in place of the chars/4 estimate: `tiktoken:PATH` (AGENT_RUN_TOKENIZER).

PATH is a `.tiktoken` file (one `base64-token rank` a line), read from disk: tiktoken's named encodings are
downloaded at first use, which a CI job without network cannot. The split pattern is GPT-2's (r50k), so a count
is close for the other encodings, not exact. tiktoken is the `tokenizer` extra, imported only when one is set.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Callable
from pathlib import Path

from runner.core.outcome import UsageError

Count = Callable[[str], int]
# GPT-2's split pattern, as tiktoken_ext.openai_public's r50k_pat_str (that module ships no types).
R50K_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""


@functools.lru_cache(maxsize=4)
def load_tokenizer(spec: str) -> Count:
    """The token count of a text under `spec` (`tiktoken:PATH`); UsageError (exit 2) when it cannot be used."""
    kind, _, path = spec.partition(":")
    if kind != "tiktoken" or not path:
        raise UsageError(f"AGENT_RUN_TOKENIZER={spec!r}: expected tiktoken:PATH (a .tiktoken file)")
    try:
        import tiktoken
    except ImportError:
        raise UsageError("AGENT_RUN_TOKENIZER needs tiktoken: pip install 'agent-run[tokenizer]'") from None
    try:
        lines = Path(path).expanduser().read_bytes().splitlines()
        ranks = {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in lines if line)}
        encoding = tiktoken.Encoding(Path(path).stem, pat_str=R50K_PATTERN, mergeable_ranks=ranks, special_tokens={})
    except (OSError, ValueError) as exc:
        raise UsageError(f"AGENT_RUN_TOKENIZER={spec!r}: cannot read it as a .tiktoken file ({exc})") from None

    def count(text: str) -> int:
        return len(encoding.encode_ordinary(text))

    return count
