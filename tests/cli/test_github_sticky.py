"""Who the sticky comment is written as, and how long it may be (issue 41, item 9): the real `agent-run github
respond` against the scripted model server and the scripted GitHub REST API (tests/fakes/github_server.py), whose
comments are written as the token's identity and which refuses a body over GitHub's 65,536 characters."""

from __future__ import annotations

import re

from tests.cli.test_github_respond import gh, respond, stickies  # noqa: F401  (gh, respond: fixtures)
from tests.fakes.github_server import BOT, MAX_BODY
from tests.fakes.openai_server import reply
from tests.github import payloads

APP = {"login": "agent-app[bot]", "id": 5150, "type": "Bot"}  # an App's installation token writes as this
KEY = "<!-- agent-run:issue-comment-90001 -->"


def _two_stickies(gh):  # noqa: F811
    """The job token's comment for the same trigger (another workflow's) and this App's own earlier one."""
    gh.writer = APP  # GET /user is refused, as it is to every installation token
    theirs = gh.add_comment(5, f"{KEY}\n✅ another workflow's answer", BOT)
    mine = gh.add_comment(5, f"{KEY}\n⏳ working", APP)
    return theirs, mine


def test_an_app_token_learns_its_login_from_its_post_and_never_edits_the_job_tokens_comment(fake, gh, respond):  # noqa: F811
    theirs, mine = _two_stickies(gh)
    fake.add(reply("second answer"))
    r = respond("issue_comment", payloads.issue_comment("@agent-run go"), env={"AGENT_RUN_GITHUB_LOGIN": ""})
    assert r.code == 0 and r.summary["status"] == "success" and r.events[-1]["type"] == "run_finished", r.stderr
    assert gh.comments[theirs["id"]]["body"].endswith("another workflow's answer")  # github-actions[bot]'s: untouched
    # The login is the first POST's user.login: the comment it posted is dropped for the earlier one of that login.
    [posted] = gh.of("POST", "/issues/5/comments")
    assert [d.path for d in gh.of("DELETE")] == [f"/repos/octo/hello/issues/comments/{int(theirs['id']) + 2}"]
    assert "working" in posted.json["body"]
    assert [c["id"] for c in stickies(gh, 5)] == [theirs["id"], mine["id"]]
    assert "second answer" in gh.comments[mine["id"]]["body"]
    assert {p.path for p in gh.of("PATCH")} == {f"/repos/octo/hello/issues/comments/{mine['id']}"}


def test_the_login_the_environment_names_finds_the_apps_own_comment_at_once(fake, gh, respond):  # noqa: F811
    theirs, mine = _two_stickies(gh)
    fake.add(reply("second answer"))
    r = respond("issue_comment", payloads.issue_comment("@agent-run go"),
                env={"AGENT_RUN_GITHUB_LOGIN": APP["login"]})
    assert r.code == 0 and r.summary["status"] == "success" and r.events[-1]["type"] == "run_finished", r.stderr
    assert gh.comments[theirs["id"]]["body"].endswith("another workflow's answer")
    assert gh.of("POST") == [] and gh.of("DELETE") == []
    assert "second answer" in gh.comments[mine["id"]]["body"]


def _fences_closed(body: str) -> bool:
    """Every fenced block of `body` (at most three spaces in, as ours are) is closed."""
    fence = None
    for line in body.splitlines():
        m = re.match(r" {0,3}(`{3,}|~{3,})", line)
        if fence is None and m:
            fence = m.group(1)
        elif fence is not None and m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                and not line.strip().lstrip(fence[0]):
            fence = None
    return fence is None


def test_a_final_comment_over_githubs_limit_is_cut_to_fit_with_its_fence_closed(fake, gh, respond,  # noqa: F811
                                                                                 tmp_path):
    # A 40,000-character answer, 40 changed files with 498-character paths, 15 denied 300-character commands: about
    # 67,000 characters of outcome.
    policy = tmp_path / "policy.json"
    policy.write_text('{"mode": "agent", "permission": {"maxDenials": 50, "rules": ['
                      '{"domain": "*", "pattern": "**", "decision": "ask"},'
                      '{"domain": "edit", "pattern": "workspace:**", "decision": "allow"}]}}')
    paths = [f"{'a' * 245}/{'b' * 245}/{i:02d}.txt" for i in range(40)]
    calls = [("write", {"path": p, "content": "x\n"}) for p in paths]
    calls += [("bash", {"command": f"echo {i:02d} {'z' * 300}"}) for i in range(15)]
    fake.add(reply(calls=calls), reply("y" * 40_000))
    r = respond("issue_comment", payloads.issue_comment("@agent-run go"), "--sandbox", "off", "--policy", str(policy))
    assert r.code == 3 and len(r.summary["changed_files"]) == 40 and len(r.summary["denials"]) == 15, r.stderr
    [sticky] = stickies(gh, 5)
    body = sticky["body"]
    assert len(body) <= MAX_BODY and "could not edit" not in r.stderr, r.stderr
    assert body.startswith(KEY) and "`denied` (exit 3)" in body and "working" not in body
    assert _fences_closed(body)
    # what was cut is said, with where the whole outcome is: the run's directory, the job's artifact
    assert re.search(r"cut at [\d,]+ of its [\d,]+ characters", body), body[-2000:]
    assert r.summary["run_id"] in body[-1500:] and "actions/runs/4242" in body[-1500:]

