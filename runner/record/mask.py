"""Masking: what a log keeps of a secret is `[REDACTED:kind]`.

Pure. `Masker(environ)` is made once per run (runner.engine.recorder) and handed to every surface that
writes what a run saw — events.jsonl, spill files, summary.json, the stderr progress lines — while
the model keeps receiving the unmasked text. It finds:

- token shapes: the regex detectors of Yelp's detect-secrets (every `RegexBasedDetector` plugin's
  `denylist`, kind = its `secret_type` as a slug: `github-token`, `aws-access-key`, `private-key`,
  `json-web-token`, `slack-token`, …). Left out, because they are heuristics rather than shapes and
  would mask ordinary build output: the keyword and entropy plugins (not regex detectors), public IPs,
  and the `keyword = value` detectors of Cloudant, IBM Cloud IAM, IBM COS and SoftLayer, and
  Artifactory's `AP…` shape (also 90 % of the scan time). Private keys are masked from `-----BEGIN` to
  `-----END` (detect-secrets matches only the header), JWTs through their signature;
- shapes detect-secrets lacks: fine-grained GitHub tokens (`github_pat_…`) and `sk-…` API keys
  without OpenAI's legacy `T3BlbkFJ` marker (project keys and other vendors' keys);
- the values (8+ characters) of the secret-named variables in `environ` (the process environment
  over the `--env-file` files) and of every variable `handed` names (what a `bash.env.passthrough` or
  an MCP server's `env` hands out: a secret whatever its name), each line of a multi-line one (a key
  printed with other line endings), and their encoded forms (runner/record/derived.py: base64,
  percent, hex, JSON- and regex-escaped): kind `env:NAME`. They are found by RE2 alternations over the
  text's bytes: one for an ordinary run's few values, one more per ~20 beyond.

A run's masker is built when its run directory is, from the process environment, and told the rest of
the run's secrets (`learn`) as its inputs are read — the env files' when they are, the rest when the policy
is known — before anything the run writes could hold one (runner/run/secrets.py).
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import re2

from runner.core.jsonutil import canonical, sha256_text
from runner.record.derived import derived_spans, encoded_forms, text_forms

MARKER = "[REDACTED:"
MIN_VALUE_CHARS = 8
# Variable names whose values are secrets (compared upper-cased).
# Never `*AUTHOR*`: GIT_AUTHOR_NAME is not a secret (`*AUTH_TOKEN*` is `*TOKEN*`'s already).
SECRET_NAMES = ("*TOKEN*", "*SECRET*", "*PASSWORD*", "*PASSWD*", "*PASSPHRASE*", "*CREDENTIAL*", "*APIKEY*",
                "*API_KEY*", "*_KEY", "*_KEY_*", "*PRIVATE_KEY*", "*_PEM", "*_PAT", "*_PASS", "*_PWD", "*_AUTH",
                "*AUTHORIZATION*")
# Detectors left out (see the module docstring), by class name.
EXCLUDED = frozenset({"IPPublicDetector", "CloudantDetector", "IbmCloudIamDetector", "IbmCosHmacDetector",
                      "SoftlayerDetector", "ArtifactoryDetector"})
# Supplements, for shapes detect-secrets 1.5 does not know.
EXTRA = (
    ("github-token", re.compile(r"github_pat_[A-Za-z0-9_]{40,}"), None),
    # A literal start keeps the scan fast; `_fit_word` drops `task-…` and the like.
    ("api-key", re.compile(r"sk-(?=[A-Za-z_-]*[0-9])[A-Za-z0-9_-]{20,}"), "word"),
)
_PEM_END = re.compile(r"-----END [A-Z0-9 ]*-----")
_PEM_BODY = re.compile(r"(?:[A-Za-z0-9+/=:,. \t-]|\\[nr]|\r?\n)*")  # base64 lines, headers, escaped newlines
_JWT_TAIL = re.compile(r"[A-Za-z0-9_\-.+/=]*")
_PEM_SEARCH = 64 * 1024


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    kind: str


@dataclass(frozen=True)
class Detector:
    kind: str
    pattern: re.Pattern[str]
    # Adjusts a match to the secret in it: (text, match) -> (start, end), or None to drop it.
    fit: Callable[[str, re.Match[str]], tuple[int, int] | None] | None = None
    # Characters every match contains (case-folded when the pattern ignores case): a text without them is
    # not scanned. Halves the scan time of typical output (`bench/bench_mask.py`).
    needle: str = ""


def required_literal(pattern: re.Pattern[str]) -> str:
    """The longest run of literal characters in the pattern's top-level sequence (so in every match), or ""."""
    try:
        import re._constants as sre_constants
        import re._parser as sre_parse

        tree = sre_parse.parse(pattern.pattern, pattern.flags)
    except Exception:  # a private module of the re package: without it there is no shortcut, nothing else
        return ""
    best, run = "", ""
    for op, arg in tree:
        run = run + chr(arg) if op is sre_constants.LITERAL else ""
        best = max(best, run, key=len)
    return best.casefold() if pattern.flags & re.IGNORECASE else best


def slug(secret_type: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", secret_type.lower()).strip("-")


def _fit_private_key(text: str, m: re.Match[str]) -> tuple[int, int]:
    start, end = m.span()
    armoured = start >= 5 and text.startswith("-----", start - 5)  # `-----BEGIN …`, not the words in prose
    if not armoured:  # a PuTTY key file's lines follow its first; prose only names a header
        return start, _run_end(_PEM_BODY, text, end) if m.group().startswith("PuTTY") else end
    last = _PEM_END.search(text, end, end + _PEM_SEARCH)
    return start - 5, last.end() if last else _run_end(_PEM_BODY, text, end)


def _run_end(run: re.Pattern[str], text: str, pos: int) -> int:
    """Where `run` (a pattern that matches the empty string too, so always) ends when matched at `pos`."""
    m = run.match(text, pos)
    return m.end() if m else pos


def _fit_word(text: str, m: re.Match[str]) -> tuple[int, int] | None:
    """Only a match that starts a word."""
    before = text[m.start() - 1] if m.start() else " "
    return None if before.isalnum() or before in "_-" else m.span()


def _fit_password(_text: str, m: re.Match[str]) -> tuple[int, int]:
    return m.span(1)  # `://user:PASSWORD@`: the user and host stay readable


def _fit_jwt(valid: Callable[[str], bool]) -> Callable[[str, re.Match[str]], tuple[int, int] | None]:
    def fit(text: str, m: re.Match[str]) -> tuple[int, int] | None:
        start, end = m.span()
        whole = _run_end(_JWT_TAIL, text, end)  # detect-secrets' lazy pattern stops before the signature
        for stop in (whole, end):
            if valid(text[start:stop].rstrip(".")):
                return start, stop
        return None

    return fit


@functools.cache
def detectors() -> tuple[Detector, ...]:
    """detect-secrets' regex detectors (imported once: the package takes ~0.1 s to import), then ours."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector
    from detect_secrets.plugins.basic_auth import BasicAuthDetector
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.plugins.private_key import PrivateKeyDetector

    found: list[Detector] = []
    # Its annotation names an unbound TypeVar (read as no class at all): the classes are detect-secrets' plugins.
    classes: dict[str, type[Any]] = get_mapping_from_secret_type_to_class()
    for secret_type, cls in sorted(classes.items()):
        if not issubclass(cls, RegexBasedDetector) or cls.__name__ in EXCLUDED:
            continue
        fits = {PrivateKeyDetector: _fit_private_key, BasicAuthDetector: _fit_password,
                JwtTokenDetector: _fit_jwt(JwtTokenDetector.is_formally_valid)}
        fit = fits.get(cls)
        found += [Detector(slug(secret_type), pattern, fit) for pattern in cls().denylist]
    found += [Detector(kind, pattern, _fit_word if fit else None) for kind, pattern, fit in EXTRA]
    return tuple(Detector(d.kind, d.pattern, d.fit, n if len(n := required_literal(d.pattern)) > 1 else "")
                 for d in found)


def secret_values(environ: Mapping[str, str], handed: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """(value, name) for every secret-named variable of `environ` and every variable of `handed` with a value of 8+
    characters, longest first (a value both give is named by `environ`); a multi-line value also gives each of its
    lines (armour lines like `-----BEGIN …-----` aside)."""
    out: dict[str, str] = {}
    named = [(n, v) for n, v in sorted(environ.items()) if any(fnmatch.fnmatchcase(n.upper(), p) for p in SECRET_NAMES)]
    for name, value in [*named, *sorted((handed or {}).items())]:
        whole = value.strip()
        lines = [line.strip() for line in whole.splitlines()] if "\n" in whole else []
        for part in (whole, *(line for line in lines if not line.startswith("-----"))):
            if len(part) >= MIN_VALUE_CHARS:
                out.setdefault(part, name)
    return sorted(out.items(), key=lambda item: -len(item[0]))


def with_forms(values: Iterable[str]) -> list[str]:
    """Each value, then every encoded form the masker searches for it: for GitHub's `::add-mask::`, which hides
    literals only, so a secret the masker finds percent-encoded in a record is hidden so in the job's log too."""
    return [form for value in values for form in (value, *encoded_forms(value), *text_forms(value))]


class _Found(Protocol):
    def span(self) -> tuple[int, int]: ...


class _Literals(Protocol):
    """A compiled RE2 alternation (google-re2 ships no types)."""

    def search(self, text: bytes, pos: int) -> _Found | None: ...


# The bytes of forms one alternation holds: at 32 KiB its DFA may outgrow RE2's memory, and the search falls back to
# an NFA a hundred times slower (and says so on stderr); more forms make more alternations, each a scan of ~1 ms/MB.
_ALTERNATION_BYTES = 16 * 1024


@dataclass(frozen=True)
class _Known:
    """The known values and their encoded forms, as RE2 alternations over bytes (Latin-1: byte for byte, so any
    text's UTF-8 is searched, lone surrogates too), the longest first so that at each start the longest wins: one
    for the few values of an ordinary run, one more per 16 KiB of forms beyond (about 20 values)."""

    values: list[tuple[str, str]]
    names: dict[bytes, tuple[str, int]]  # a form's UTF-8 -> (its variable's name, its length in characters)
    patterns: tuple[_Literals, ...]
    longest: int

    @classmethod
    def of(cls, values: list[tuple[str, str]]) -> _Known:
        plain = dict(values)
        forms = {form: name for value, name in values for form in (*encoded_forms(value), *text_forms(value))
                 if form not in plain}
        names: dict[bytes, tuple[str, int]] = {}
        for form, name in sorted([*values, *forms.items()], key=lambda item: -len(item[0])):
            names.setdefault(form.encode("utf-8", "surrogatepass"), (name, len(form)))
        chunks: list[list[bytes]] = []
        size = _ALTERNATION_BYTES
        for encoded in names:
            if size + len(encoded) > _ALTERNATION_BYTES:
                chunks.append([])
                size = 0
            chunks[-1].append(re2.escape(encoded))
            size += len(chunks[-1][-1]) + 1
        options = re2.Options()
        options.encoding = re2.Options.Encoding.LATIN1
        options.max_mem = 32 << 20  # room for the DFA of a text that keeps many forms' prefixes alive at once
        patterns = tuple(re2.compile(b"|".join(chunk), options) for chunk in chunks)
        return cls(values, names, patterns, max((length for _, length in names.values()), default=0))

    def spans(self, text: str) -> list[Span]:
        """Every occurrence of a known form in `text`: another form's overlapping it too (a search resumes one past
        each match), not the same form's (as `str.find` would find it again past its end)."""
        if not self.patterns:
            return []
        is_ascii = text.isascii()
        data = text.encode("ascii") if is_ascii else text.encode("utf-8", "surrogatepass")
        return [span for pattern in self.patterns for span in self._scan(pattern, data, is_ascii)]

    def _scan(self, pattern: _Literals, data: bytes, is_ascii: bool) -> list[Span]:
        found: list[Span] = []
        ends: dict[bytes, int] = {}
        pos = byte_at = char_at = 0
        while (m := pattern.search(data, pos)) is not None:
            start, end = m.span()
            pos = start + 1
            form = data[start:end]
            if start < ends.get(form, 0):
                continue
            ends[form] = end
            name, length = self.names[form]
            if not is_ascii:  # a form starts with a whole character: decode only what lies between two matches
                char_at += len(data[byte_at:start].decode("utf-8", "surrogatepass"))
                byte_at = start
            at = start if is_ascii else char_at
            found.append(Span(at, at + length, f"env:{name}"))
        return found


class Masker:
    """`mask(text) -> (masked, kinds)`; `mask_obj(obj) -> (masked copy, kinds)` for JSON-like values."""

    def __init__(self, environ: Mapping[str, str], handed: Mapping[str, str] | None = None) -> None:
        self._detectors = detectors()
        self._known = _Known.of(secret_values(environ, handed))

    def learn(self, environ: Mapping[str, str], handed: Mapping[str, str] | None = None) -> None:
        """Also mask the secrets of `environ` and `handed` (as the constructor reads them) from now on. A run's
        masker learns the rest of its secrets once, when they are known: before its first tool call or request."""
        values = dict(self._known.values)
        for value, name in secret_values(environ, handed):
            values.setdefault(value, name)
        self._known = _Known.of(sorted(values.items(), key=lambda item: -len(item[0])))  # one assignment: atomic

    @property
    def values(self) -> list[str]:
        """The known secret values (for GitHub's `::add-mask::`)."""
        return [value for value, _ in self._known.values]

    @property
    def longest(self) -> int:
        """The length of the longest known value or encoded form: what a stream must hold back to find one whole."""
        return self._known.longest

    def spans(self, text: str) -> list[Span]:
        """Every secret in `text`, sorted, overlaps merged (the earliest, then longest, names the kind): as
        itself, and in the derived forms runner/record/derived.py decodes."""
        if len(text) < MIN_VALUE_CHARS:
            return []
        found, lower = self._direct(text)
        found += [Span(*s) for s in derived_spans(text, lower or text.casefold(), self._kinds_in)]
        return _merge(found)

    def _kinds_in(self, decoded: str) -> list[str]:
        """The kinds of the secrets a decoded text holds, the first found first (not decoded again)."""
        return [s.kind for s in self._direct(decoded)[0]] if len(decoded) >= MIN_VALUE_CHARS else []

    def _direct(self, text: str) -> tuple[list[Span], str]:
        """The secrets in `text` as themselves (unmerged), and `text` case-folded when that was needed."""
        found = self._known.spans(text)  # first: on a tie the variable's name is the better kind
        lower = ""
        for d in self._detectors:
            if d.needle:
                if d.pattern.flags & re.IGNORECASE:
                    lower = lower or text.casefold()
                    if d.needle not in lower:
                        continue
                elif d.needle not in text:
                    continue
            for m in d.pattern.finditer(text):
                bounds = d.fit(text, m) if d.fit else m.span()
                if bounds is not None and bounds[1] > bounds[0]:
                    found.append(Span(*bounds, d.kind))
        return found, lower

    def mask(self, text: str) -> tuple[str, list[str]]:
        spans = self.spans(text)
        return redact(text, spans), sorted({s.kind for s in spans})

    def mask_obj(self, obj: object) -> tuple[Any, list[str]]:
        """A copy of a JSON-like value with every string in it masked (values, not keys)."""
        kinds: set[str] = set()

        def walk(value: object) -> object:
            if isinstance(value, str):
                masked, found = self.mask(value)
                kinds.update(found)
                return masked
            if isinstance(value, dict):
                return {k: walk(v) for k, v in value.items()}
            if isinstance(value, list | tuple):
                return [walk(v) for v in value]
            return value

        return walk(obj), sorted(kinds)

    def mask_record(self, record: dict[str, Any], content_field: str | None) -> dict[str, Any]:
        """An event record as a log keeps it: every string masked; when the event carries content (what the
        model sent or received: `content_field`), `redacted` says what was masked in it and the sha256 of
        the unmasked text (a string as UTF-8, a message as canonical JSON), or is null when nothing was."""
        rest, _ = self.mask_obj({k: v for k, v in record.items() if k != content_field})
        if content_field is None or content_field not in record:
            return rest
        value = record[content_field]
        masked, kinds = self.mask_obj(value)
        rest[content_field] = masked
        rest["redacted"] = ({"kinds": kinds, "sha256": sha256_text(value if isinstance(value, str) else
                                                                   canonical(value))} if kinds else None)
        return rest


def redact(text: str, spans: list[Span]) -> str:
    """`text` with each (sorted, disjoint) span replaced by `[REDACTED:kind]`."""
    if not spans:
        return text
    out, at = [], 0
    for s in spans:
        out += [text[at:s.start], f"{MARKER}{s.kind}]"]
        at = s.end
    out.append(text[at:])
    return "".join(out)


def _merge(spans: list[Span]) -> list[Span]:
    merged: list[Span] = []
    for s in sorted(spans, key=lambda s: (s.start, -s.end)):
        if merged and s.start < merged[-1].end:
            last = merged[-1]
            if s.end > last.end:
                merged[-1] = Span(last.start, s.end, last.kind)
            continue
        merged.append(s)
    return merged


class MaskedStream:
    """Masks text that arrives in pieces (a command's output on its way to a spill file): the last
    `hold` characters wait for the next piece, so a secret split between pieces is found whole.
    `feed` returns what can be written now, `end` the rest."""

    def __init__(self, masker: Masker, hold: int = 16 * 1024, batch: int = 256 * 1024) -> None:
        self.masker = masker
        self.hold = hold
        self.batch = batch
        self._pending: list[str] = []
        self._size = 0

    def feed(self, text: str) -> str:
        self._pending.append(text)
        self._size += len(text)
        return self._take(final=False) if self._size >= self.batch + self.hold else ""

    def end(self) -> str:
        return self._take(final=True)

    def _take(self, *, final: bool) -> str:
        text = "".join(self._pending)
        return self._cut(text, len(text) if final else len(text) - self.hold)

    def _cut(self, text: str, cut: int) -> str:
        """`text[:cut]` masked, the rest kept for the next piece; a secret across the cut waits whole."""
        spans = self.masker.spans(text)
        for s in spans:
            if s.start < cut < s.end:  # a secret across the cut waits whole for the next piece
                cut = s.start if s.start > 0 or len(text) < 4 * self.batch else s.end
        rest = text[cut:]
        self._pending, self._size = ([rest], len(rest)) if rest else ([], 0)
        return redact(text[:cut], [s for s in spans if s.end <= cut])



class MaskedLines(MaskedStream):
    """A MaskedStream for a log read while it is written (an MCP server's stderr, which `tail -f` follows): a
    piece's whole lines go out at once, masked together; an open line waits for its end, so a secret split between
    pieces is found whole. An open line past twice `hold` characters goes out but for its last `hold`."""

    def __init__(self, masker: Masker, hold: int = 16 * 1024) -> None:
        super().__init__(masker, hold=hold, batch=hold)

    def feed(self, text: str) -> str:
        self._pending.append(text)
        self._size += len(text)
        if "\n" not in text and self._size < 2 * self.hold:
            return ""
        whole = "".join(self._pending)
        ended = whole.rfind("\n") + 1
        return self._cut(whole, ended or len(whole) - self.hold)
