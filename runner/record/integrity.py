"""Tamper evidence for a run directory: what `replay` executes is what the human saw.

Each `events.jsonl` record carries `prev`, the sha256 of the line before it (the first
carries GENESIS), so no line can be changed, dropped or inserted without breaking every
later link. At the end, `summary.json`'s `integrity` seals the chain's head together
with the sha256 of `task.md`, `policy.json`, `changes.patch`, `audit.jsonl` and the other SEALED_FILES:

    {"events_head": H_events, "files": {"task.md": …}, "sha256": H}

H is printed in the step summary and as the action output `events-sha256`, outside the
artifact, so a downloaded run can be checked with `replay --expect-hash H`. Pure
functions but for reading files.

Keyed: with `AGENT_RUN_AUDIT_KEY` in the job's environment, `prev` is the hex HMAC-SHA256 of the
line under that key instead, and `run_started.audit_key_id` names the key (the first 16 hex of
HMAC(key, "agent-run key id")). Whoever rewrites the log without the key cannot chain it again; a
plain chain can be rebuilt by anyone, which only `--expect-hash` catches. The run claims it
(`integrity.keyed`) only when its commands ran in the sandbox: outside it they could read the key
from the runner's /proc environ.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from runner.core.jsonutil import canonical
from runner.record.jsonl import BadLine, Long, iter_events, iter_lines, parse_text, torn, whole_length

GENESIS = "0" * 64
SEALED_FILES = ("task.md", "policy.json", "changes.patch", "ignored.patch", "tools.json", "workspace.json",
                "output.json", "findings.json", "findings.sarif", "audit.jsonl")


AUDIT_KEY_ENV = "AGENT_RUN_AUDIT_KEY"  # trusted (the job's own environment); never passed to a process
_KEY_ID_MESSAGE = b"agent-run key id"


class TamperError(ValueError):
    """The run directory does not match its own record: refuse to act on it (exit 2)."""


class Unkeyed(TamperError):
    """A run that the key given now cannot vouch for: refused unless --allow-unkeyed."""


def audit_key(environ: Mapping[str, str]) -> bytes | None:
    value = environ.get(AUDIT_KEY_ENV)
    return value.encode("utf-8") if value else None


def key_id(key: bytes) -> str:
    """Names the key in run_started without revealing it: the verifier compares ids before links."""
    return hmac.new(key, _KEY_ID_MESSAGE, hashlib.sha256).hexdigest()[:16]


def line_hash(line: str, key: bytes | None = None) -> str:
    """The next record's `prev`: sha256 of the line (without its newline), or its HMAC-SHA256 under `key`."""
    data = line.rstrip("\n").encode("utf-8")
    return hmac.new(key, data, hashlib.sha256).hexdigest() if key else hashlib.sha256(data).hexdigest()


def file_hashes(run_dir: Path) -> dict[str, str]:
    return {name: hashlib.sha256((run_dir / name).read_bytes()).hexdigest()
            for name in SEALED_FILES if (run_dir / name).is_file()}


def seal(run_dir: Path, events_head: str, keyed: bool = False) -> dict[str, Any]:
    """`keyed` stays out of H (an unkeyed run's H is what it always was): the verifier reads the run's own
    claim from its log (`run_started`), and refuses a summary that says otherwise."""
    files = file_hashes(run_dir)
    return {"events_head": events_head, "files": files, "keyed": keyed, "sha256": _final(events_head, files)}


def _final(events_head: str, files: dict[str, str]) -> str:
    return hashlib.sha256(canonical({"events_head": events_head, "files": files}).encode("utf-8")).hexdigest()


def check_chain(path: Path, key: bytes | None = None, links: bool = True, end: int | None = None) -> str:
    """The head of an intact chain (HMACs under `key` when given); TamperError naming the first broken line.
    `links` False: whole JSON lines only (a keyed log without its key, let through by --allow-unkeyed).
    `end`: only the first `end` bytes (the whole lines before a torn tail, record/jsonl.py whole_length)."""
    prev = GENESIS
    for n, raw in enumerate(iter_lines(path, end), start=1):
        if torn(raw):
            raise TamperError(f"{path}:{n}: the last line is incomplete")
        if isinstance(raw, Long):  # over the line cap: the writer never makes one
            raise TamperError(f"{path}:{n}: {raw.why()}")
        try:
            line = raw.decode("utf-8")
        except ValueError:
            raise TamperError(f"{path}:{n}: not a JSON record") from None
        record = parse_text(line, n)
        if isinstance(record, BadLine):  # not JSON, or nested past what the writer makes
            raise TamperError(f"{path}:{n}: " + ("not a JSON record" if record.why.startswith("not ") else record.why))
        if links and record.get("prev") != prev:
            raise TamperError(f"{path}:{n}: the hash chain is broken here (the record was changed, "
                              "removed or inserted)")
        prev = line_hash(line, key)
    return prev


def recorded_claim(path: Path) -> tuple[str | None, bool]:
    """The run's own `run_started`: the key id its chain is under (None: a plain chain), and whether the run
    claims it keyed (a key id, and its commands sandboxed)."""
    for record in iter_events(path):
        if record.get("type") == "run_started" and record.get("agent") is None:
            kid = record.get("audit_key_id")
            kid = kid if isinstance(kid, str) else None
            return kid, kid is not None and bool((record.get("sandbox") or {}).get("active"))
    return None, False


def _chain_key(run_dir: Path, kid: str | None, keyed: bool, key: bytes | None, allow_unkeyed: bool,
               warn: Callable[[str], None]) -> tuple[bytes | None, bool]:
    """The key to check the links with, and whether they can be checked at all; Unkeyed when the key given now
    cannot vouch for the run and --allow-unkeyed was not given."""
    allow = " (pass --allow-unkeyed to accept it)"
    if kid is not None and (key is None or key_id(key) != kid):
        why = (f"{run_dir.name} was recorded under audit key {kid}, and "
               + (f"{AUDIT_KEY_ENV} is not set" if key is None else f"{AUDIT_KEY_ENV} is another key ({key_id(key)})")
               + ": its hash chain cannot be checked")
        if not allow_unkeyed:
            raise Unkeyed(why + (allow if key is not None else f"; set {AUDIT_KEY_ENV} to that key" + allow))
        warn(why + "; going on because of --allow-unkeyed")
        return None, False
    if key is not None and not keyed:
        why = (f"{run_dir.name} is not keyed: " + ("its log is a plain hash chain, which anyone can rebuild"
               if kid is None else "its commands ran without the sandbox, where they could read the key"))
        if not allow_unkeyed:
            raise Unkeyed(f"{why}, and {AUDIT_KEY_ENV} is set{allow}")
        warn(why + "; going on because of --allow-unkeyed")
    return (key if kid is not None else None), True


def verify(run_dir: Path, expect: str | None = None, key: bytes | None = None, allow_unkeyed: bool = False,
           warn: Callable[[str], None] = lambda _msg: None) -> str | None:
    """The run's final hash when it verifies; None when the run was never sealed (killed before
    its summary) and no hash is expected. Raises TamperError otherwise. With `key` (AGENT_RUN_AUDIT_KEY
    now), a run that is not keyed under that key is refused (Unkeyed) unless `allow_unkeyed`."""
    events = run_dir / "events.jsonl"
    kid, keyed = recorded_claim(events)
    chain_key, links = _chain_key(run_dir, kid, keyed, key, allow_unkeyed, warn)
    whole, torn = whole_length(events)
    # A torn last line is what a kill mid-write leaves: the chain is checked up to it (the caller reads no
    # further and records how much it left out). A sealed run was not killed: there it is tampering.
    head = check_chain(events, chain_key, links, end=whole)
    try:
        summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        summary = None
    except (OSError, ValueError) as exc:
        raise TamperError(f"{run_dir}/summary.json: unreadable: {exc}") from None
    sealed = (summary or {}).get("integrity") if isinstance(summary, dict) else None
    if torn and isinstance(sealed, dict):
        raise TamperError(f"{events}: the last line is incomplete ({torn} bytes after the last whole line), but "
                          "summary.json seals the log: it was written to after the run ended")
    if not isinstance(sealed, dict):
        if expect is not None:
            raise TamperError(f"{run_dir} was never sealed (no summary.json integrity): cannot match --expect-hash")
        return None
    if links and sealed.get("events_head") != head:
        raise TamperError(f"{run_dir}/events.jsonl does not end where summary.json says it does")
    if bool(sealed.get("keyed")) != keyed:
        raise TamperError(f"{run_dir}/summary.json: integrity.keyed does not match the run's own log")
    head = str(sealed.get("events_head"))
    files = file_hashes(run_dir)
    for name in sorted(set(files) | set(sealed.get("files") or {})):
        if files.get(name) != (sealed.get("files") or {}).get(name):
            raise TamperError(f"{run_dir}/{name} was changed after the run (its sha256 does not match)")
    final = _final(head, files)
    if sealed.get("sha256") != final:
        raise TamperError(f"{run_dir}/summary.json: the integrity hash does not match its own fields")
    if expect is not None and expect.lower() != final:
        raise TamperError(f"{run_dir}: hash {final} is not the expected {expect}")
    return final
