"""runner/record/mask.py: token shapes from detect-secrets plus ours, the environment's secret values, and
masking of text that arrives in pieces."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from urllib.parse import quote, quote_plus

import pytest

from runner.core.jsonutil import canonical, sha256_text
from runner.record.mask import MARKER, MaskedLines, MaskedStream, Masker, secret_values

GHP = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
PEM = ("-----BEGIN OPENSSH PRIVATE KEY-----\n"
       "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
       "QyNTUxOQAAACBoZXJlIGlzIG5vIGtleSBoZXJlLCBqdXN0IGEgdGVzdC4uLi4uLi4uLi4u\n"
       "-----END OPENSSH PRIVATE KEY-----")
JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIn0"
       ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c")


@pytest.fixture(scope="module")
def masker() -> Masker:
    return Masker({"OPENAI_API_KEY": "sk-abc-not-a-real-key-000", "DEPLOY_PASSWORD": "hunter2hunter2",
                   "SHORT_TOKEN": "1234567", "GITHUB_REPOSITORY": "octo/repository-name",
                   "GITHUB_APP_PEM": PEM.replace("\n", "\r\n") + "\r\n"})


@pytest.mark.parametrize(("secret", "kind"), [
    (GHP, "github-token"),
    ("gho_" + "x" * 36, "github-token"),
    ("github_pat_11ABCDEFG0123456789_" + "a" * 59, "github-token"),
    ("AKIA" + "IOSFODNN7EXAMPLE", "aws-access-key"),
    ("sk-proj-" + "Ab3" * 16, "api-key"),
    ("sk-" + "a1" * 10 + "T3BlbkFJ" + "b2" * 10, "openai-token"),
    ("xoxb-123456789012-1234567890123-abcdefABCDEF0123456789", "slack-token"),
    (JWT, "json-web-token"),
    (PEM, "private-key"),
    ("glpat-" + "x1Y2" * 5, "gitlab-token"),
    ("hunter2hunter2", "env:DEPLOY_PASSWORD"),
    ("sk-abc-not-a-real-key-000", "env:OPENAI_API_KEY"),
])
def test_each_shape_is_masked_whole(masker, secret, kind):
    text = f"before {secret} after"
    assert masker.mask(text) == (f"before {MARKER}{kind}] after", [kind])


def test_what_is_not_a_secret_stays(masker):
    ordinary = "\n".join([
        "commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904 (HEAD -> main)",
        "uuid 123e4567-e89b-12d3-a456-426614174000, https://github.com/octo/repository-name/pull/1",
        "tests/test_api.py::test_task_runner_handles_skip PASSED [ 50%]",
        "ask-for-confirmation-before-deleting-files-2024 sk-learn 1234567 BEGIN_PRIVATE_KEY_TEST",
        "dGhpcyBpcyBqdXN0IGJhc2U2NCBlbmNvZGVkIHRleHQgb2Ygbm8gaW1wb3J0YW5jZQ==",
        "192.168.0.1 8.8.8.8 password = os.environ['X'] ::add-mask:: /home/runner/work/_temp",
    ])
    assert masker.mask(ordinary) == (ordinary, [])


def test_private_keys_are_masked_to_their_end_escaped_or_cut(masker):
    escaped = json.dumps({"command": f"printf '%s' '{PEM}' > k"})
    assert masker.mask(escaped)[0] == json.dumps({"command": f"printf '%s' '{MARKER}private-key]' > k"})
    cut = PEM.split("-----END")[0] + "[… 99 bytes …]"
    assert masker.mask(cut)[0] == f"{MARKER}private-key][… 99 bytes …]"
    prose = "detect-secrets looks for BEGIN RSA PRIVATE KEY headers"
    assert masker.mask(prose)[0] == f"detect-secrets looks for {MARKER}private-key] headers"


def test_basic_auth_keeps_user_and_host(masker):
    assert masker.mask("remote: https://x-access-token:s3cr3tv4lue@github.com/o/r.git")[0] == \
        f"remote: https://x-access-token:{MARKER}basic-auth-credentials]@github.com/o/r.git"


def test_environment_values_and_their_lines():
    env = {"GITHUB_PAT": "pat-value-123", "RUNNER_APIKEY": "apikey-value", "NPM_TOKEN": "short",
           "HOME": "/home/runner-home", "MY_KEY": "k" * 8,
           "KEY_PAIR_PEM": "-----BEGIN X-----\nline-one-of-it\n-----END X-----",
           "aws_secret_access_key": "lower-case-name"}
    values = dict(secret_values(env))
    assert values == {"pat-value-123": "GITHUB_PAT", "apikey-value": "RUNNER_APIKEY", "k" * 8: "MY_KEY",
                      env["KEY_PAIR_PEM"]: "KEY_PAIR_PEM", "line-one-of-it": "KEY_PAIR_PEM",
                      "lower-case-name": "aws_secret_access_key"}
    masker = Masker(env)
    assert masker.mask("a line-one-of-it b")[0] == f"a {MARKER}env:KEY_PAIR_PEM] b"
    assert masker.mask("/home/runner-home short")[0] == "/home/runner-home short"


def test_a_windows_style_multiline_value_is_found_by_its_lines(masker):
    line = PEM.splitlines()[1]
    assert masker.mask(f"x {line} y")[0] == f"x {MARKER}env:GITHUB_APP_PEM] y"


def test_overlaps_merge_and_masking_is_idempotent(masker):
    text = f"{GHP}{GHP} and hunter2hunter2hunter2hunter2"
    once, kinds = masker.mask(text)
    assert once == f"{MARKER}github-token]{MARKER}github-token] and {MARKER}env:DEPLOY_PASSWORD]{MARKER}env:" \
                   "DEPLOY_PASSWORD]"
    assert kinds == ["env:DEPLOY_PASSWORD", "github-token"]
    assert masker.mask(once) == (once, [])


def test_mask_obj_masks_every_string_value(masker):
    obj = {"a": [GHP, {"b": ("x", JWT)}], GHP: 3, "n": None, "ok": True}
    masked, kinds = masker.mask_obj(obj)
    assert masked == {"a": [f"{MARKER}github-token]", {"b": ["x", f"{MARKER}json-web-token]"]}], GHP: 3,
                      "n": None, "ok": True}
    assert kinds == ["github-token", "json-web-token"]
    assert obj["a"][0] == GHP, "the original is left alone"


def test_mask_record_says_what_was_masked_in_the_content(masker):
    message = {"role": "assistant", "content": f"the token is {GHP}"}
    record = {"type": "model_response", "message": message, "turn": 1, "note": GHP}
    out = masker.mask_record(record, "message")
    assert out["message"]["content"] == f"the token is {MARKER}github-token]"
    assert out["note"] == f"{MARKER}github-token]"
    assert out["redacted"] == {"kinds": ["github-token"], "sha256": sha256_text(canonical(message))}
    assert masker.mask_record({"arguments": "{}"}, "arguments")["redacted"] is None
    assert "redacted" not in masker.mask_record({"type": "run_finished", "reason": GHP}, None)


@pytest.mark.parametrize("hold", [64, 1000])
def test_a_stream_finds_secrets_split_between_pieces(masker, hold):
    text = "".join(f"line {i} {GHP} {PEM if i % 7 == 0 else ''} hunter2hunter2\n" for i in range(60))
    expected = masker.mask(text)[0]
    for size in (1, 7, 50, 333):
        stream = MaskedStream(masker, hold=hold, batch=hold * 2)
        out = "".join(stream.feed(text[i:i + size]) for i in range(0, len(text), size)) + stream.end()
        assert out == expected, size


def test_masking_cost_is_linear_enough():
    """A guard against a pattern that backtracks: 1 MB of build-like output is masked (to itself: no secret in it).
    A backtracking pattern would take minutes or hours over it, where masking takes a fraction of a second: the
    child process's timeout only stops that hang. How fast masking is, is bench/bench_mask.py's to measure."""
    script = f"""
from {Masker.__module__} import Masker
text = ("compiling src/module_%d.rs ... ok 0x%08x\\n" * 25_000) % tuple(x for i in range(25_000) for x in (i, i))
print("unchanged" if Masker({{"DEPLOY_PASSWORD": "hunter2hunter2"}}).mask(text)[0] == text else "changed")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.strip()) == (0, "unchanged"), done.stderr


def test_required_literals_only_skip_texts_that_cannot_match(masker):
    from runner.record.mask import required_literal

    assert required_literal(re.compile(r"ab(c|d)efg[0-9]")) == "efg"
    assert required_literal(re.compile(r"xyz|abc")) == ""
    assert required_literal(re.compile(r"XOX-\d+", re.IGNORECASE)) == "xox-"
    assert masker.mask("XOXB-123456789-ABCDEF")[0] == f"{MARKER}slack-token]"  # the needle is case-folded


# Derived forms (issue 25): a secret encoded as a header, a URL's userinfo or a base64 blob is still a secret.
GHS = "ghs_" + "Zq7" * 12


def _b64(text: str) -> str:
    import base64

    return base64.b64encode(text.encode()).decode()


@pytest.mark.parametrize(("text", "kept"), [
    # What actions/checkout persists in .git/config: the job token inside base64("x-access-token:…").
    (f"\textraheader = AUTHORIZATION: basic {_b64('x-access-token:' + GHS)}", "\textraheader = AUTHORIZATION: basic "),
    (f"-H 'authorization: Basic {_b64('u:hunter2hunter2')}'", "-H 'authorization: Basic "),
    (f"Authorization: Bearer {_b64(GHS)}", "Authorization: Bearer "),
    (f"git clone https://x-access-token:{GHS.replace('_', '%5F')}@github.com/o/r", "git clone https://"),
    (f'{{"auths": {{"ghcr.io": {{"auth": "{_b64("bot:" + GHS)}"}}}}}}', '{"auths": {"ghcr.io": {"auth": "'),
    (f"echo {_b64('github_pat_11ABCDEFG0123456789_' + 'a' * 59).replace('+', '-').replace('/', '_')}", "echo "),
])
def test_encoded_secrets_are_masked_whole(masker, text, kept):
    masked, kinds = masker.mask(text)
    assert masked.startswith(kept + MARKER) and kinds, masked
    assert GHS not in masked and "hunter2" not in masked
    assert masker.mask(masked) == (masked, []), "idempotent"


@pytest.mark.parametrize("offset", [0, 1, 2, 3, 4, 5])
def test_a_known_value_is_found_at_any_offset_of_a_base64_blob(masker, offset):
    import base64

    blob = base64.b64encode(b"p" * offset + b"DEPLOY=hunter2hunter2 rest of the file\n" * 3).decode()
    masked, kinds = masker.mask(f"data: {blob}")
    assert kinds == ["env:DEPLOY_PASSWORD"], masked
    for form in __import__("runner.record.derived", fromlist=["encoded_forms"]).encoded_forms("hunter2hunter2"):
        assert form not in masked


def test_encoded_forms_are_the_characters_that_depend_on_the_value_alone():
    import base64

    from runner.record.derived import encoded_forms

    forms = encoded_forms("hunter2hunter2")
    for prefix in (b"", b"a", b"ab", b"abc", b"\xff\xfe"):
        for suffix in (b"", b"z", b"\x00\x01"):
            encoded = base64.b64encode(prefix + b"hunter2hunter2" + suffix).decode()
            assert any(f in encoded for f in forms), (prefix, suffix)
    assert encoded_forms("short") == []


def test_base64_that_holds_no_secret_stays(masker):
    import base64

    ordinary = " ".join([_b64("just some configuration text, nothing secret in it"),
                         base64.b64encode(bytes(range(256))).decode(), "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
                         "src/pkg/sub_module/some_file_name.ts", _b64("user:not-a-secret-at-all"),
                         "Authorization: Bearer $TOKEN", "https://user%40corp@example.com/x"])
    assert masker.mask(ordinary) == (ordinary, [])


@pytest.mark.parametrize("name", ["DB_PASS", "MYSQL_PWD", "NPM_AUTH", "X_AUTH_TOKEN_FILE", "PROXY_AUTHORIZATION",
                                  "http_authorization_header", "db_pwd"])
def test_more_secret_looking_names(name):
    assert secret_values({name: "value-12345"}) == [("value-12345", name)]


@pytest.mark.parametrize("name", ["GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "AUTHORS", "PASSTHROUGH", "PWD", "OLDPWD",
                                  "SSH_AUTH_SOCK", "COMPASS_PATH"])
def test_names_that_only_look_alike_are_not_secrets(name):
    assert secret_values({name: "value-12345"}) == []


def test_a_handed_out_value_is_a_secret_whatever_its_name_unless_it_is_short():
    masker = Masker({"GIT_AUTHOR_NAME": "Grace Hopper"}, handed={"NODE_ENV": "production-eu", "LEVEL": "debug12"})
    assert masker.mask("NODE_ENV=production-eu LEVEL=debug12 by Grace Hopper")[0] == \
        f"NODE_ENV={MARKER}env:NODE_ENV] LEVEL=debug12 by Grace Hopper"


def test_learn_adds_secrets_and_keeps_what_was_known():
    masker = Masker({"DEPLOY_TOKEN": "known-token-1"})
    assert masker.mask("file-secret-22")[0] == "file-secret-22"
    masker.learn({"FILE_PASSWORD": "file-secret-22", "DEPLOY_TOKEN": "other-token-3"}, {"CONN": "conn-value-4"})
    assert masker.mask("known-token-1 file-secret-22 other-token-3 conn-value-4")[0] == \
        f"{MARKER}env:DEPLOY_TOKEN] {MARKER}env:FILE_PASSWORD] {MARKER}env:DEPLOY_TOKEN] {MARKER}env:CONN]"
    assert masker.longest >= len(b"file-secret-22".hex())


SPECIAL = 'p"a\\s/s é-1234'


@pytest.mark.parametrize("form", [
    quote(SPECIAL, safe=""), re.sub("%..", lambda m: m.group().lower(), quote(SPECIAL, safe="")),
    "".join(f"%{b:02x}" for b in SPECIAL.encode()), "".join(f"%{b:02X}" for b in SPECIAL.encode()),
    SPECIAL.encode().hex(), SPECIAL.encode().hex().upper(), json.dumps(SPECIAL)[1:-1],
    json.dumps(SPECIAL, ensure_ascii=False)[1:-1], re.escape(SPECIAL), quote_plus(SPECIAL, safe=""),
])
def test_a_known_values_percent_hex_json_and_regex_forms_are_masked(form):
    masker = Masker({"DB_PASS": SPECIAL})
    assert form != SPECIAL
    assert masker.mask(f"é sent {form}!")[0] == f"é sent {MARKER}env:DB_PASS]!"  # offsets past a non-ASCII text


def test_known_values_overlapping_each_other_are_all_masked():
    masker = Masker({"A_TOKEN": "abcdef12", "B_TOKEN": "ef12345678"})
    assert masker.mask("x abcdef12345678 y")[0] == f"x {MARKER}env:A_TOKEN] y"


def test_lines_go_out_when_they_end_and_a_secret_split_between_pieces_is_masked(masker):
    lines = MaskedLines(masker)
    assert lines.feed("connecting with hunt") == ""  # an open line waits
    assert lines.feed("er2hunter2 failed\nnext li") == f"connecting with {MARKER}env:DEPLOY_PASSWORD] failed\n"
    assert lines.feed("ne") == ""
    assert lines.end() == "next line"
    long = MaskedLines(masker, hold=64)
    out = long.feed("x" * 100 + " hunter2hunter2 " + "y" * 100)
    assert out == "x" * 100 + f" {MARKER}env:DEPLOY_PASSWORD] " + "y" * 36  # past twice the hold: all but the hold
    assert long.end() == "y" * 64


def test_many_known_values_are_all_found_across_alternations():
    env = {f"S{i:03d}_TOKEN": f"value-{i:03d}-" + "x" * 40 for i in range(100)}
    masker = Masker(env)
    text = " ".join(env.values()) + " " + env["S099_TOKEN"].encode().hex()
    masked, kinds = masker.mask(text)
    assert "value-" not in masked and len(kinds) == 100
