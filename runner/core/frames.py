"""Frames around untrusted text sent to the model: tags that carry a random nonce.

Text someone else wrote (a GitHub comment, a diff, a tool's output) goes to the model inside a frame whose
tag ends in `-NONCE`, a value drawn from `secrets` for the run and unknown to whoever wrote the text: the text
cannot close its frame or open another, since it would have to name the nonce. The framed text itself is
byte-exact (escaping `<` would corrupt a diff or a suggestion); only attribute values are escaped, as HTML's.
"""

from __future__ import annotations

import html
import secrets
from dataclasses import dataclass

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
