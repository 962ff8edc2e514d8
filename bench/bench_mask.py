"""Masking cost (runner/record/mask.py): MB/s over typical tool output, with no secrets and with some (token shapes,
known values, their encoded forms); the same through the streaming path a spill file takes; µs per logged event; the
one-time setup. Prints figures; asserts nothing about wall time (only that the secrets were masked).

    python bench/bench_mask.py [--mb 4] [--repeats 7] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from runner.record.mask import MaskedStream, Masker

SECRETS = [
    "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "AKIA" + "Q3EXAMPLE7KEY2ZZ",
    "xoxb-123456789012-1234567890123-abcdefABCDEF0123456789",
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    "-----END RSA PRIVATE KEY-----",
    "sk-live-0123456789abcdefXYZ",  # the value of OPENAI_API_KEY below
    "68756e74657232" * 2,  # DEPLOY_PASSWORD's value below, hex-encoded
    "".join(f"%{byte:02x}" for byte in b"sk-live-0123456789abcdefXYZ"),  # OPENAI_API_KEY's, every byte percent-encoded
]
ENV = {"OPENAI_API_KEY": SECRETS[-1], "GITHUB_TOKEN": "ghs_" + "q" * 36, "DEPLOY_PASSWORD": "hunter2hunter2",
       "NPM_TOKEN": "npm_" + "z" * 36, "HOME": "/home/runner", "PATH": "/usr/bin:/bin"}


def typical_output(size: int, seed: int = 1) -> str:
    """Build and test output as a tool returns it: test runner lines, compiler lines, git log, JSON, paths,
    hashes and the odd base64 blob — the text shapes that detectors must scan past."""
    rng = random.Random(seed)
    hexs = "0123456789abcdef"
    b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    makers: list[Callable[[int], str]] = [
        lambda i: f"tests/test_module_{i % 97}.py::test_case_{i} PASSED{' ' * (i % 7)} [{i % 100:3d}%]",
        lambda i: f"   Compiling crate-{i % 53} v0.{i % 9}.{i % 31} (/home/runner/work/app/app/crates/c{i % 53})",
        lambda i: f"commit {''.join(rng.choice(hexs) for _ in range(40))}\nAuthor: Dev {i} <dev{i}@example.com>",
        lambda i: json.dumps({"id": i, "name": f"item-{i}", "tags": ["a", "b"], "ok": i % 3 == 0}),
        lambda i: f"src/pkg/sub_{i % 41}/file_{i}.ts:{i % 400}:{i % 80} - warning TS{6000 + i % 999}: unused var",
        lambda i: "".join(rng.choice(b64) for _ in range(76)),
        lambda i: f"2025-01-0{1 + i % 9}T12:{i % 60:02d}:00Z INFO request {i} took {i % 997} ms from 10.0.{i % 255}.1",
    ]
    lines, total, i = [], 0, 0
    while total < size:
        line = makers[i % len(makers)](i)
        lines.append(line)
        total += len(line) + 1
        i += 1
    return "\n".join(lines)[:size]


def with_secrets(text: str, every: int = 10_000) -> str:
    """One secret about every `every` characters, at a line start."""
    out, at, n = [], 0, 0
    while at < len(text):
        cut = text.find("\n", at + every)
        cut = len(text) if cut < 0 else cut
        out.append(text[at:cut] + f"\ntoken: {SECRETS[n % len(SECRETS)]}")
        at, n = cut, n + 1
    return "".join(out)


def median_time(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def stream(masker: Masker, text: str, chunk: int = 65536) -> str:
    s = MaskedStream(masker)
    return "".join(s.feed(text[i:i + chunk]) for i in range(0, len(text), chunk)) + s.end()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=4.0, help="size of each text, in MB")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", action="store_true", help="the figures as one JSON object")
    args = parser.parse_args()

    started = time.perf_counter()
    masker = Masker(ENV)
    setup_s = time.perf_counter() - started  # detect-secrets import + pattern compilation, once per process

    clean = typical_output(int(args.mb * 1_000_000))
    dirty = with_secrets(clean)
    masked, kinds = masker.mask(dirty)
    assert not any(s in masked for s in SECRETS) and len(kinds) >= 5, kinds
    assert masker.mask(clean)[0] == clean, "typical output must come through unmasked"
    assert stream(masker, dirty) == masked

    figures: dict[str, float] = {"setup_s": round(setup_s, 3), "mb": args.mb}
    for name, text in (("no_secrets", clean), ("with_secrets", dirty)):
        mb = len(text.encode()) / 1e6
        figures[f"mask_{name}_mb_s"] = round(mb / median_time(lambda t=text: masker.mask(t), args.repeats), 1)
        figures[f"stream_{name}_mb_s"] = round(mb / median_time(lambda t=text: stream(masker, t), args.repeats), 1)
    record = {"seq": 7, "ts": "2025-01-02T03:04:05.678Z", "run_id": "r", "type": "tool_result", "call_id": "call_3_0",
              "tool": "bash", "ok": True, "error_type": None, "bytes": 4000, "sha256": "0" * 64, "duration_s": 0.1,
              "details": {"exit_code": 0, "truncated": False, "lines": 80}, "content": clean[:4000],
              "redacted": None}
    per_event = median_time(lambda: [masker.mask_record(record, "content") for _ in range(100)], args.repeats) / 100
    figures["event_4kb_us"] = round(per_event * 1e6, 1)
    figures["secrets_per_mb"] = round(dirty.count("\ntoken: ") / (len(dirty) / 1e6), 1)

    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"setup (detect-secrets import, patterns): {figures['setup_s'] * 1000:.0f} ms once per run")
    print(f"typical tool output, {args.mb:g} MB, median of {args.repeats}:")
    print(f"  mask(text), no secrets      {figures['mask_no_secrets_mb_s']:8.1f} MB/s")
    print(f"  mask(text), with secrets    {figures['mask_with_secrets_mb_s']:8.1f} MB/s "
          f"({figures['secrets_per_mb']:.0f} secrets/MB)")
    print(f"  spill stream, no secrets    {figures['stream_no_secrets_mb_s']:8.1f} MB/s")
    print(f"  spill stream, with secrets  {figures['stream_with_secrets_mb_s']:8.1f} MB/s")
    print(f"  one 4 KB tool_result event  {figures['event_4kb_us']:8.1f} µs")


if __name__ == "__main__":
    main()
