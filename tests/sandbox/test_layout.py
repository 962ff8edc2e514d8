"""runner/sandbox/layout.py and bwrap.py, pure: what a sandboxed process sees, over a fake filesystem."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import pytest

from runner.policy.match import compile_pattern
from runner.policy.model import Rule
from runner.sandbox.bwrap import bwrap_argv
from runner.sandbox.layout import Layout, LayoutInput, Mount, build_layout, policy_paths

HOME = "/home/u"
WS = Path("/tmp/job/ws")
SCRATCH = Path("/tmp/agent-run-sandbox-x")
RUNS = WS / ".agent-run" / "runs"
PATH = os.pathsep.join([f"{HOME}/.pyenv/shims", "/opt/hostedtoolcache/node/20/x64/bin", "/usr/local/bin", "/usr/bin",
                        "/bin", "/usr/sbin", "/sbin"])

DIRS = {"/usr", "/usr/bin", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/sys", "/etc/ssl/private",
        "/opt/hostedtoolcache", "/opt/hostedtoolcache/node/20/x64/bin",
        HOME, f"{HOME}/.ssh", f"{HOME}/.aws", f"{HOME}/.pyenv", f"{HOME}/.pyenv/shims", f"{HOME}/.cargo",
        f"{HOME}/.cargo/bin", f"{HOME}/.rustup", f"{HOME}/projects",
        "/tmp", "/tmp/job", str(WS), str(WS / ".git"), str(WS / ".git/hooks"), str(WS / ".agent-run"), str(RUNS),
        str(SCRATCH)}
FILES = {"/etc/shadow", "/etc/passwd", f"{HOME}/.ssh/id_ed25519", f"{HOME}/.aws/credentials",
         f"{HOME}/.cargo/credentials.toml", f"{HOME}/.netrc", str(WS / "agent-run.policy.jsonc")}
SYMLINKS = {"/bin": "usr/bin", "/sbin": "usr/sbin", "/lib": "usr/lib", "/lib64": "usr/lib64"}


class FakeFS:
    """The four callables build_layout takes, over a set of paths (parents need not be listed)."""

    def __init__(self, dirs: Iterable[str] = DIRS, files: Iterable[str] = FILES,
                 symlinks: dict[str, str] | None = None) -> None:
        self.dirs = set(dirs)
        self.files = set(files)
        self.symlinks = dict(SYMLINKS if symlinks is None else symlinks)

    def exists(self, p: str) -> bool:
        return p in self.dirs or p in self.files or p in self.symlinks

    def is_symlink(self, p: str) -> bool:
        return p in self.symlinks

    def readlink(self, p: str) -> str:
        return self.symlinks[p]

    def is_dir(self, p: str) -> bool:
        return p in self.dirs

    def layout(self, inp: LayoutInput) -> Layout:
        return build_layout(inp, exists=self.exists, is_symlink=self.is_symlink, readlink=self.readlink,
                            is_dir=self.is_dir)


def _input(**overrides: object) -> LayoutInput:
    environ = {"HOME": HOME, "PATH": PATH}
    environ.update(overrides.pop("environ_extra", {}))  # type: ignore[arg-type]
    args: dict[str, object] = {"workspace": WS, "scratch": SCRATCH, "protected": (RUNS, WS / "agent-run.policy.jsonc"),
                               "environ": environ}
    args.update(overrides)
    return LayoutInput(**args)  # type: ignore[arg-type]


def _build(fs: FakeFS | None = None, **overrides: object) -> Layout:
    return (fs or FakeFS()).layout(_input(**overrides))


def _index(layout: Layout, dest: str | Path, kind: str | None = None) -> int:
    found = [i for i, m in enumerate(layout.mounts) if m.dest == str(dest) and (kind is None or m.kind == kind)]
    assert found, f"no {kind or ''} mount at {dest}: {layout.mounts}"
    return found[-1]


def _kinds(layout: Layout, dest: str | Path) -> list[str]:
    return [m.kind for m in layout.mounts if m.dest == str(dest)]


def _inside(path: str, base: str) -> bool:
    return path == base or path.startswith(base.rstrip("/") + "/")


def _shown_by(layout: Layout, path: str) -> Mount | None:
    """The mount that decides what `path` looks like inside: the last one at or above it."""
    covering = [m for m in layout.mounts if _inside(path, m.dest)]
    return covering[-1] if covering else None


def _visible(layout: Layout, path: str) -> bool:
    m = _shown_by(layout, path)
    return m is not None and m.kind in ("ro", "rw")


# --- the workspace -------------------------------------------------------------------------------


def test_the_workspace_is_writable_and_the_working_directory() -> None:
    layout = _build()
    assert _kinds(layout, WS) == ["rw"]
    assert layout.chdir == str(WS)


def test_git_and_protected_paths_are_read_only_after_the_workspace() -> None:
    layout = _build()
    ws = _index(layout, WS, "rw")
    for path in (WS / ".git", RUNS, WS / "agent-run.policy.jsonc"):
        assert _kinds(layout, path) == ["ro"], path
        assert _index(layout, path) > ws, path
    assert _shown_by(layout, str(WS / ".git/hooks/pre-commit")) == Mount("ro", str(WS / ".git"), str(WS / ".git"))
    assert _shown_by(layout, str(WS / "src/a.py")) == Mount("rw", str(WS), str(WS))


def test_a_protected_path_below_git_is_not_mounted_twice() -> None:
    layout = _build(protected=(WS / ".git" / "hooks",))
    assert _kinds(layout, WS / ".git" / "hooks") == []
    assert _kinds(layout, WS / ".git") == ["ro"]


def test_a_missing_protected_path_or_one_outside_the_workspace_is_not_mounted() -> None:
    layout = _build(protected=(WS / "missing.jsonc", Path("/etc/passwd")))
    assert _kinds(layout, WS / "missing.jsonc") == [] and _kinds(layout, "/etc/passwd") == []


def test_a_read_only_workspace() -> None:
    layout = _build(workspace_writable=False)
    assert _kinds(layout, WS) == ["ro"]
    assert not any(m.kind == "rw" and _inside(m.dest, str(WS)) for m in layout.mounts)


# --- home, toolchains, system ----------------------------------------------------------------------


def test_the_real_home_is_not_mounted_but_toolchains_in_it_are() -> None:
    layout = _build()
    assert not any(m.dest in (HOME, "/home", "/") for m in layout.mounts), layout.mounts
    assert _kinds(layout, f"{HOME}/.pyenv") == ["ro"]
    assert _kinds(layout, f"{HOME}/.pyenv/shims") == []  # shown by ~/.pyenv
    assert _kinds(layout, f"{HOME}/.cargo") == ["ro"] and _kinds(layout, f"{HOME}/.rustup") == ["ro"]
    assert _kinds(layout, f"{HOME}/.nvm") == []  # not installed here
    assert not _visible(layout, f"{HOME}/projects") and not _visible(layout, f"{HOME}/.netrc")


def test_a_toolchain_on_path_is_mounted_from_its_root() -> None:
    fs = FakeFS(dirs=DIRS | {f"{HOME}/.asdf", f"{HOME}/.asdf/shims", "/opt/tool", "/opt/tool/1.0/bin", "/snap",
                             "/snap/bin"})
    layout = _build(fs, environ_extra={"PATH": f"{HOME}/.asdf/shims:/opt/tool/1.0/bin:/snap/bin:/usr/bin"})
    assert _kinds(layout, f"{HOME}/.asdf") == ["ro"]
    assert _kinds(layout, "/opt/tool") == ["ro"]
    assert _kinds(layout, "/snap") == ["ro"]
    assert not _visible(layout, HOME + "/x") and not _visible(layout, "/opt/other")


def test_the_hosted_tool_cache_is_read_only() -> None:
    layout = _build()
    assert _kinds(layout, "/opt/hostedtoolcache") == ["ro"]
    assert _kinds(layout, "/opt/hostedtoolcache/node/20/x64/bin") == []
    assert _kinds(layout, "/opt") == []


def test_system_paths_on_path_never_mount_the_root() -> None:
    layout = _build(environ_extra={"PATH": "/bin:/sbin:/usr/bin:/usr/sbin:/usr/local/bin:/usr/local/sbin:/bin/"})
    assert all(m.dest != "/" for m in layout.mounts), layout.mounts
    assert _kinds(layout, "/usr") == ["ro"]
    assert _kinds(layout, "/usr/bin") == [] and _kinds(layout, "/usr/local") == []


def test_top_level_symlinks_stay_symlinks_and_come_first() -> None:
    layout = _build()
    assert layout.mounts[:4] == [Mount("symlink", "/bin", "usr/bin"), Mount("symlink", "/sbin", "usr/sbin"),
                                 Mount("symlink", "/lib", "usr/lib"), Mount("symlink", "/lib64", "usr/lib64")]
    assert _kinds(layout, "/bin") == ["symlink"]


def test_a_real_bin_directory_is_bound_read_only() -> None:
    layout = _build(FakeFS(symlinks={}))
    assert _kinds(layout, "/bin") == ["ro"] and _kinds(layout, "/lib") == ["ro"]
    assert _kinds(layout, "/lib32") == []  # absent here


def test_the_ssh_directory_is_never_visible() -> None:
    assert not _visible(_build(), f"{HOME}/.ssh/id_ed25519")
    # Not even when the policy makes the whole home readable: then it is masked, after the home.
    layout = _build(readable=(Path(HOME),))
    home = _index(layout, HOME, "ro")
    assert _kinds(layout, f"{HOME}/.ssh") == ["tmpfs"]  # a directory: hidden under an empty tmpfs
    assert _index(layout, f"{HOME}/.ssh") > home
    assert _kinds(layout, f"{HOME}/.netrc") == ["mask-file"] and _index(layout, f"{HOME}/.netrc") > home
    assert _kinds(layout, f"{HOME}/.aws") == ["tmpfs"]
    assert _shown_by(layout, f"{HOME}/.ssh/id_ed25519") == Mount("tmpfs", f"{HOME}/.ssh")
    assert _visible(layout, f"{HOME}/projects")


def test_a_secret_inside_a_visible_toolchain_is_masked_after_it() -> None:
    layout = _build()
    cargo = _index(layout, f"{HOME}/.cargo", "ro")
    assert _kinds(layout, f"{HOME}/.cargo/credentials.toml") == ["mask-file"]
    assert _index(layout, f"{HOME}/.cargo/credentials.toml") > cargo
    assert _visible(layout, f"{HOME}/.cargo/bin/cargo")


def test_secrets_that_are_hidden_anyway_or_absent_get_no_mount() -> None:
    layout = _build()
    assert _kinds(layout, f"{HOME}/.ssh") == [] and _kinds(layout, f"{HOME}/.aws") == []  # home is not shown
    assert _kinds(layout, f"{HOME}/.cargo/credentials") == []  # does not exist
    assert _kinds(layout, "/etc/gshadow") == []


def test_system_secrets_are_masked_after_etc() -> None:
    layout = _build()
    etc = _index(layout, "/etc", "ro")
    assert _kinds(layout, "/etc/shadow") == ["mask-file"] and _index(layout, "/etc/shadow") > etc
    assert _kinds(layout, "/etc/ssl/private") == ["tmpfs"] and _index(layout, "/etc/ssl/private") > etc
    assert _visible(layout, "/etc/passwd")


def test_the_github_runner_file_commands_are_masked_when_visible() -> None:
    temp = "/home/runner/work/_temp"
    commands = f"{temp}/_runner_file_commands"
    fs = FakeFS(dirs=DIRS | {temp, commands}, files=FILES | {f"{commands}/set_env_1"})
    layout = _build(fs, readable=(Path(temp),),
                    environ_extra={"RUNNER_TEMP": temp, "GITHUB_ENV": f"{commands}/set_env_1"})
    assert _kinds(layout, commands) == ["tmpfs"] and _index(layout, commands) > _index(layout, temp)
    assert _kinds(layout, f"{commands}/set_env_1") == ["mask-file"]


# --- /tmp and ordering -------------------------------------------------------------------------------


def test_tmp_is_private_and_comes_before_what_lives_under_it() -> None:
    layout = _build(FakeFS(dirs=DIRS | {"/tmp/data"}), readable=(Path("/tmp/data"),))
    assert {"/tmp", "/var/tmp"} <= {m.dest for m in layout.mounts if m.kind == "tmpfs"}
    tmp = _index(layout, "/tmp", "tmpfs")
    assert tmp < _index(layout, SCRATCH, "rw")
    assert tmp < _index(layout, WS, "rw")
    assert tmp < _index(layout, "/tmp/data", "ro")
    assert not _visible(layout, "/tmp/other-job/secret")


def test_the_private_tmp_wins_over_a_readable_tmp() -> None:
    layout = _build(readable=(Path("/tmp"),))
    assert _shown_by(layout, "/tmp/x") == Mount("tmpfs", "/tmp")


def test_parents_always_precede_children() -> None:
    fs = FakeFS(dirs=DIRS | {"/data", "/data/sub", "/var/cache/build", "/tmp/data/deep/er"})
    layout = _build(fs, readable=(Path("/tmp/data/deep/er"), Path("/data/sub"), Path(HOME)),
                    writable=(Path("/var/cache/build"), Path("/data")))
    mounts = layout.mounts
    assert {"/tmp/data/deep/er", "/data/sub", "/data", HOME, "/var/cache/build"} <= {m.dest for m in mounts}
    for i, child in enumerate(mounts):
        for parent in mounts[i + 1:]:
            assert not (parent.dest != child.dest and _inside(child.dest, parent.dest)), (child, parent, mounts)


def test_extra_readable_and_writable_paths() -> None:
    fs = FakeFS(dirs=DIRS | {"/data", "/var/cache/build"})
    layout = _build(fs, readable=(Path("/data"), Path("/nonexistent"), WS / "sub"),
                    writable=(Path("/var/cache/build"),), python_prefixes=("/usr", "/opt/py"))
    assert _kinds(layout, "/data") == ["ro"]
    assert _kinds(layout, "/nonexistent") == []
    assert _kinds(layout, WS / "sub") == []  # inside the writable workspace: not made read-only
    assert _kinds(layout, "/var/cache/build") == ["rw"]
    assert _kinds(layout, "/opt/py") == []  # absent in this fake filesystem
    assert _kinds(layout, "/usr") == ["ro"]  # listed twice, mounted once


# --- the environment -------------------------------------------------------------------------------


def test_home_and_tmpdir_point_into_the_scratch_dir() -> None:
    env = _build().env
    assert env["HOME"] == str(SCRATCH / "home")
    for var in ("TMPDIR", "TMP", "TEMP"):
        assert env[var] == str(SCRATCH / "tmp")


def test_toolchain_homes_keep_pointing_at_the_real_ones() -> None:
    env = _build().env
    assert env["CARGO_HOME"] == f"{HOME}/.cargo"
    assert env["RUSTUP_HOME"] == f"{HOME}/.rustup"
    assert env["PYENV_ROOT"] == f"{HOME}/.pyenv"
    assert "NVM_DIR" not in env  # ~/.nvm does not exist


def test_toolchain_homes_already_set_are_left_alone() -> None:
    env = _build(environ_extra={"CARGO_HOME": "/opt/cargo", "RUSTUP_HOME": "/opt/rustup"}).env
    assert "CARGO_HOME" not in env and "RUSTUP_HOME" not in env


def test_no_toolchain_homes_when_none_exist() -> None:
    fs = FakeFS(dirs={d for d in DIRS if not d.startswith(HOME)}, files=set())
    env = _build(fs).env
    assert set(env) == {"HOME", "TMPDIR", "TMP", "TEMP"}


# --- policy_paths ----------------------------------------------------------------------------------


def _rules(*specs: tuple[str, str, str]) -> list[Rule]:
    return [Rule(domain, compile_pattern(pattern), decision, "test", i)
            for i, (domain, pattern, decision) in enumerate(specs)]


def test_policy_paths_takes_the_fixed_directory_of_allow_rules() -> None:
    rules = _rules(("read", "fs:/data/**", "allow"), ("read", "fs:/srv/fixtures/*.json", "allow"),
                   ("*", "fs:/shared/file.txt", "allow"))
    assert policy_paths(rules, "read", WS) == [Path("/data"), Path("/srv/fixtures"), Path("/shared/file.txt")]


@pytest.mark.parametrize("spec", [
    ("read", "fs:/data/**", "deny"),
    ("read", "fs:/data/**", "ask"),
    ("read", "workspace:**", "allow"),
    ("read", "fs:**", "allow"),
    ("read", "**/fixtures/**", "allow"),
    ("edit", "fs:/data/**", "allow"),  # another domain
    ("read", f"fs:{WS}/vendor/**", "allow"),  # inside the workspace: already visible
    ("read", "regex:fs:/data/.*", "allow"),
])
def test_policy_paths_gives_nothing_for(spec: tuple[str, str, str]) -> None:
    assert policy_paths(_rules(spec), "read", WS) == []


def test_policy_paths_by_domain() -> None:
    rules = _rules(("read", "fs:/data/**", "allow"), ("edit", "fs:/var/cache/build/**", "allow"))
    assert policy_paths(rules, "edit", WS) == [Path("/var/cache/build")]
    assert policy_paths(rules, "read", WS) == [Path("/data")]


# --- bwrap_argv ------------------------------------------------------------------------------------


def _argv(share_net: bool, **kwargs: object) -> list[str]:
    layout = Layout(mounts=[Mount("symlink", "/bin", "usr/bin"), Mount("ro", "/usr", "/usr"), Mount("tmpfs", "/tmp"),
                            Mount("rw", str(WS), str(WS)), Mount("mask-file", "/etc/shadow")], chdir=str(WS))
    return bwrap_argv("/usr/bin/bwrap", layout, ["bash", "-c", "echo hi -- there"], share_net=share_net,
                      **kwargs)  # type: ignore[arg-type]


def test_bwrap_argv_isolates() -> None:
    argv = _argv(False)
    assert argv[0] == "/usr/bin/bwrap"
    head = argv[:argv.index("--")]
    for flag in ("--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session"):
        assert flag in head, flag
    assert head[head.index("--cap-drop") + 1] == "ALL"
    assert head[head.index("--proc") + 1] == "/proc"
    assert head[head.index("--dev") + 1] == "/dev"
    assert head[head.index("--chdir") + 1] == str(WS)
    assert "--share-net" not in argv


def test_bwrap_argv_shares_the_network_only_when_asked() -> None:
    argv = _argv(True)
    assert "--share-net" in argv[:argv.index("--")]
    assert argv.index("--share-net") > argv.index("--unshare-all")  # re-enables what --unshare-all took


def test_bwrap_argv_ends_with_the_command() -> None:
    argv = _argv(False)
    first = argv.index("--")
    assert argv[first:] == ["--", "bash", "-c", "echo hi -- there"]


def test_bwrap_argv_mounts_in_layout_order() -> None:
    argv = _argv(False, binds=[("/private/proxy.sock", "/run/agent-run/proxy.sock")])
    body = argv[argv.index("ALL") + 1:argv.index("--proc")]
    assert body == ["--symlink", "usr/bin", "/bin", "--ro-bind", "/usr", "/usr", "--tmpfs", "/tmp",
                    "--bind", str(WS), str(WS), "--ro-bind", "/dev/null", "/etc/shadow",
                    "--ro-bind", "/private/proxy.sock", "/run/agent-run/proxy.sock"]


def test_a_local_bin_on_path_does_not_expose_the_rest_of_local() -> None:
    keyring = f"{HOME}/.local/share/python_keyring/keyring_pass.cfg"
    fs = FakeFS(dirs=DIRS | {f"{HOME}/.local", f"{HOME}/.local/bin", f"{HOME}/.local/share/python_keyring"},
                files=FILES | {keyring})
    layout = _build(fs, environ_extra={"PATH": f"{HOME}/.local/bin:/usr/bin"})
    assert _visible(layout, f"{HOME}/.local/bin/black")
    assert not _visible(layout, keyring)


@pytest.mark.parametrize("entry", ["/", HOME, "/home"])
def test_a_path_entry_holding_the_home_mounts_nothing(entry: str) -> None:
    layout = _build(environ_extra={"PATH": f"{entry}:/usr/bin", "VIRTUAL_ENV": entry})
    assert not _visible(layout, f"{HOME}/.ssh/id_ed25519") and not _visible(layout, f"{HOME}/notes.txt")
    assert "/" not in [m.dest for m in layout.mounts if m.kind in ("ro", "rw")]


def test_read_only_mount_is_the_deepest_mount_holding_a_path():
    """Where a write refused with EROFS was refused (runner/tools/erofs.py): the read-only mount that shows the path,
    never a writable one, a tmpfs or nothing."""
    from runner.sandbox.layout import Layout, Mount, read_only_mount

    layout = Layout([Mount("ro", "/usr", "/usr"), Mount("tmpfs", "/tmp"), Mount("rw", "/ws", "/ws"),
                     Mount("ro", "/ws/.git", "/ws/.git"), Mount("mask-file", "/ws/.git/config")])
    assert read_only_mount(layout, "/ws/.git/index.lock") == "/ws/.git"
    assert read_only_mount(layout, "/ws/.git/../.git/HEAD") == "/ws/.git"
    assert read_only_mount(layout, "/ws/.git/config") == "/ws/.git/config"
    assert read_only_mount(layout, "/usr/lib/x") == "/usr"
    assert read_only_mount(layout, "/ws/.gitignore") is None
    assert read_only_mount(layout, "/tmp/x") is None
    assert read_only_mount(layout, "/home/u/x") is None
