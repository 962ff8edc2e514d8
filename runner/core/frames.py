"""Frames around untrusted text sent to the model: tags that carry a random nonce.

Text someone else wrote (a GitHub comment, a diff, a tool's output) goes to the model inside a frame whose
tag ends in `-NONCE`, a value drawn from `secrets` for the run and unknown to whoever wrote the text: the text
cannot close its frame or open another, since it would have to name the nonce. The framed text itself is
byte-exact (escaping `<` would corrupt a diff or a suggestion); only attribute values are escaped, as HTML's.
"""

from __future__ import annotations

import hashlib
import html
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

NONCE_BYTES = 8  # 16 hex digits: 64 bits, never guessed by text written before the run drew them


@dataclass(frozen=True)
class Frames:
    nonce: str

    @classmethod
    def new(cls) -> Frames:
        return cls(secrets.token_hex(NONCE_BYTES))

    def tag(self, name: str) -> str:
        """`name` as this run's frames spell it: `name-NONCE`."""
        return f"{name}-{self.nonce}"

    def frame(self, tag: str, text: str, /, **attrs: str) -> str:
        """`text` framed as `<tag-NONCE k="v">\\ntext\\n</tag-NONCE>`: the text as given, the values escaped."""
        attr = "".join(f' {k}="{html.escape(v, quote=True).replace(chr(10), "&#10;")}"' for k, v in attrs.items())
        return f"<{self.tag(tag)}{attr}>\n{text}\n</{self.tag(tag)}>"


_NONCE = re.compile(f"[0-9a-f]{{{2 * NONCE_BYTES}}}")
_KEY = re.compile("[0-9a-f]{64}")


def result_key(call_id: str, content: str) -> str:
    """A tool result as the frames' record names it: sha256 of its call id and its text."""
    return hashlib.sha256(f"{call_id}\n{content}".encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class ResultFrames:
    """The frames a run sends its tool results in as user messages (AGENT_RUN_TOOL_RESULTS=user): its own nonce's,
    but a result a continued run carries goes in the frame it was sent in (`earlier`: result_key -> nonce), so the
    continuation's first request extends the earlier run's last one byte for byte (the prompt cache). Only a
    result whose call id and text are exactly the recorded one's is framed with a recorded nonce: whatever a
    continuation reads itself — a result of its own, a replay's approved call in a recorded call's place — is
    framed with its own nonce, which no record, published or forged, can name."""

    own: Frames
    earlier: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def drawn(cls, earlier: Mapping[str, str] | None = None) -> ResultFrames:
        return cls(Frames.new(), dict(earlier or {}))

    def of(self, call_id: str, content: str) -> Frames:
        nonce = self.earlier.get(result_key(call_id, content)) if self.earlier else None
        # A record lies in the workspace: a forged one may pair a text with the nonce that text could close.
        return Frames(nonce) if nonce is not None and nonce not in content else self.own

    def recorded(self) -> dict[str, Any]:
        """run_started.result_frames: this run's nonce and the earlier ones its carried results were sent in."""
        return {"nonce": self.own.nonce, "earlier": dict(sorted(self.earlier.items()))}


def carried(recorded: object, messages: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """What a continuation's ResultFrames takes from the run it continues (`recorded`: its
    run_started.result_frames) for the tool results of `messages`, the conversation it starts from: the nonce each
    was framed in by that run, as its `of` chose it. A record this version did not write gives nothing (the
    results are framed anew: a cache miss, never a frame a record's text could choose for new text)."""
    if not isinstance(recorded, Mapping) or not isinstance(nonce := recorded.get("nonce"), str) \
            or not _NONCE.fullmatch(nonce):
        return {}
    given = recorded.get("earlier")
    earlier = {k: v for k, v in given.items() if isinstance(k, str) and _KEY.fullmatch(k)
               and isinstance(v, str) and _NONCE.fullmatch(v)} if isinstance(given, Mapping) else {}
    out: dict[str, str] = {}
    for m in messages:
        if m.get("role") == "tool":
            key = result_key(str(m.get("tool_call_id")), str(m.get("content") or ""))
            out[key] = earlier.get(key, nonce)
    return out
