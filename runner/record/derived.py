"""Secrets in derived forms: what a log keeps of an encoded secret is `[REDACTED:kind]` too.

Pure. A secret rarely travels only as itself: `actions/checkout` stores the job token as
`AUTHORIZATION: basic <base64("x-access-token:ghs_…")>` in `.git/config`, a URL carries it
percent-encoded as its userinfo, a Docker `config.json` holds `base64(user:token)`. The masker
(runner/record/mask.py) finds each form here and asks its own direct scan (known values, token
shapes) about the decoded text:

- every `Authorization: basic|bearer VALUE` (any case): VALUE decoded from base64 (basic, and a
  bearer value that is base64), or as it is;
- every URL userinfo (`scheme://USERINFO@`), percent-decoded;
- every printable base64 run of 20+ characters (standard or URL-safe alphabet), decoded from its
  start.

The span masked is the encoded text, whole. Known secret values are also matched in their base64
forms inside a longer blob at any byte offset: `encoded_forms` gives the three offset-aligned
encodings of a value (the characters that depend on it alone), and the forms a command or a program
writes a value in — percent-encoded (only what needs it, or every byte) and hex, with upper and lower
case digits, JSON-escaped, and regex-escaped —, all of which the masker searches like values.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable
from urllib.parse import quote, quote_plus

MIN_RUN = 20
# Runs are found on a copy of the text with each alphabet character made `a` and any other a space (one byte per
# character, so positions agree): one plain pattern scans that faster than a character class with a lookbehind
# scans the text (bench/bench_mask.py).
_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-"
_MARKS = bytes(0x61 if i in _ALPHABET else 0x20 for i in range(256))
_B64_RUN = re.compile(rb"a{" + str(MIN_RUN).encode() + rb",}")
_AUTH = re.compile(r"authorization[\"']?\s*[:=]\s*[\"']?(?:basic|bearer)\s+([A-Za-z0-9+/=._~%-]{8,})", re.IGNORECASE)
_USERINFO = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://([^\s/?#@'\"<>]+)@")
# A control character other than tab and line ends: not text, so not a secret written as text.
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_URLSAFE = str.maketrans("-_", "+/")
_ESCAPE = re.compile(r"%[0-9A-F]{2}")
# The first character of each 4-character group holds a byte's top 6 bits: for a printable ASCII byte, tab or
# line end, one of these. Checked before decoding, it turns away hashes, paths and binary blobs at once.
_TEXT_FIRSTS = "CDIJKLMNOPQRSTUVWXYZabcdef"

# What the masker answers for a decoded text: the kinds of the secrets in it (empty: none).
Inner = Callable[[str], list[str]]


def encoded_forms(value: str) -> list[str]:
    """The base64 encodings of `value` at each of the three byte offsets a blob may put it at, each cut to
    the characters that depend on `value` alone, plus their URL-safe spellings where they differ."""
    raw = value.encode()
    out: list[str] = []
    for pad in range(3):
        encoded = base64.b64encode(b"\0" * pad + raw).decode().rstrip("=")
        start = -(-8 * pad // 6)  # the first character made only of the value's bits
        stop = 8 * (pad + len(raw)) // 6  # past the last such character
        core = encoded[start:stop]
        if len(core) >= 8:
            out.append(core)
            safe = core.replace("+", "-").replace("/", "_")
            if safe != core:
                out.append(safe)
    return list(dict.fromkeys(out))


def text_forms(value: str) -> list[str]:
    """`value` as `quote`/`quote_plus` write it and with every byte percent-encoded, as hex, each with upper and
    lower case digits, and JSON-escaped (`\\uXXXX` or UTF-8 for what is not ASCII); then each of these and `value`
    regex-escaped (a denial's `--approve regex:…` suggestion writes its target so): the forms that differ from it."""
    raw = value.encode("utf-8", "surrogatepass")
    every = "".join(f"%{byte:02X}" for byte in raw)
    percent = [quote(value, safe="", errors="surrogatepass"), quote_plus(value, safe="", errors="surrogatepass"),
               every]
    out = [value, *percent, *(_lower_escapes(form) for form in percent), raw.hex(), raw.hex().upper(),
           json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]]
    out += [re.escape(form) for form in out]
    return [form for form in dict.fromkeys(out) if form != value]


def _lower_escapes(percent: str) -> str:
    return _ESCAPE.sub(lambda m: m.group().lower(), percent)


def derived_spans(text: str, lower: str, inner: Inner) -> list[tuple[int, int, str]]:
    """(start, end, kind) of every encoded form in `text` (`lower`: it case-folded) whose decoded text holds a
    secret."""
    found: list[tuple[int, int, str]] = []
    if "authorization" in lower:
        for m in _AUTH.finditer(text):
            value = m.group(1)
            kinds = _first_kinds(inner, (_b64_text(value), _percent(value), value))
            if kinds:
                found.append((m.start(1), m.end(1), kinds[0]))
    if "://" in text and "@" in text:
        for m in _USERINFO.finditer(text):
            userinfo = m.group(1)
            if "%" in userinfo and (kinds := inner(_percent(userinfo))):
                found.append((m.start(1), m.end(1), kinds[0]))
    marks = text.encode("latin-1", errors="replace").translate(_MARKS)
    for run in _B64_RUN.finditer(marks):
        start, end = run.span()
        decoded = _b64_text(text[start:end])
        if decoded is not None and (kinds := inner(decoded)):
            end += len(text[end:end + 2]) - len(text[end:end + 2].lstrip("="))  # its padding too
            found.append((start, end, kinds[0]))
    return found


def _first_kinds(inner: Inner, candidates: tuple[str | None, ...]) -> list[str]:
    for candidate in candidates:
        if candidate and (kinds := inner(candidate)):
            return kinds
    return []


def _b64_text(run: str) -> str | None:
    """The printable ASCII text `run` decodes to (standard or URL-safe base64, padding optional), or None."""
    body = run.rstrip("=")
    if body[::4].strip(_TEXT_FIRSTS):
        return None
    if len(body) % 4 == 1:
        body = body[:-1]  # a stray last character: the bytes before it still decode
    if ("-" in body or "_" in body) and ("+" in body or "/" in body):
        return None  # two alphabets: a path or a word, not base64
    if "-" in body or "_" in body:
        body = body.translate(_URLSAFE)
    try:
        data = binascii.a2b_base64(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        return None
    if len(data) < 8 or not data.isascii() or _CONTROL.search(data):
        return None
    return data.decode("ascii")


def _percent(text: str) -> str:
    from urllib.parse import unquote

    return unquote(text) if "%" in text else text
