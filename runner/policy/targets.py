"""What a policy decides: (domain, target) pairs built from what a tool receives.

Pure functions over a workspace path; the tools and `policy explain` share them,
so what explain prints is exactly what a run decides.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import stat
import string
import tempfile
from functools import cache
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

import idna

from runner.policy.egress import url_net_target
from runner.policy.model import Target
from runner.policy.shell import analyze


def resolve_path(workspace: Path, raw: str) -> Path:
    """Relative to the workspace; `~` expanded; `..` and symlinks resolved.

    Raises UnresolvablePath for a symlink loop (and other resolution failures)."""
    p = Path(os.path.expanduser(raw))
    if not p.is_absolute():
        p = workspace / p
    try:
        return p.resolve(strict=False)
    except (RuntimeError, OSError) as exc:  # RuntimeError: a symlink loop on Python < 3.13
        raise UnresolvablePath(f"cannot resolve {raw!r}: {exc}") from None


class UnresolvablePath(ValueError):
    pass


def path_target(workspace: Path, path: Path) -> str:
    try:
        rel = path.relative_to(workspace).as_posix()  # once: grep decides every file it searches
    except ValueError:
        return f"fs:{path.as_posix()}"
    return f"workspace:{rel or '.'}"


def target_path(workspace: Path, target: str) -> Path | None:
    """The file a `workspace:` or `fs:` target names; None for other schemes."""
    scheme, _, rest = target.partition(":")
    if scheme == "workspace":
        return workspace if rest == "." else workspace / rest
    if scheme == "fs":
        return Path(rest)
    return None


HARD_LINK = "a hard link"  # how the note of a hard link's own target begins


def path_targets(domain: str, workspace: Path, path: Path, *, fold: bool | None = None,
                 on_disk: bool = False) -> list[Target]:
    """What touching the resolved `path` is decided on (the strictest target wins):

    - its `workspace:` or `fs:` target;
    - when the workspace's filesystem ignores case (`fold`; probed once per workspace when None), a path
      inside it also as spelled on disk and in lower case, so `.ENV` meets `**/.env` and `.GIT/config`
      the hard limit on `.git/config` (`on_disk`: the caller walked the path, it is spelled on disk);
    - for a read, a regular file with more than one name (a hard link) also as `fs:<absolute path>`: its
      other names may be secrets anywhere, so it is read like a file outside the workspace (`ask` under
      the shipped policies) unless the policy allows that path explicitly."""
    first = path_target(workspace, path)
    out = [Target(domain, first)]
    inside = first.startswith("workspace:")
    if inside and (case_insensitive(workspace) if fold is None else fold):
        spelled = first if on_disk else path_target(workspace, _spelled_on_disk(workspace, path))
        for other, why in ((spelled, "as spelled on disk"), (first.lower(), "in lower case")):
            if other not in (t.target for t in out):
                out.append(Target(domain, other, note=f"the same file {why}: the filesystem ignores case"))
    if domain == "read" and inside:
        try:
            st = os.stat(path)
        except OSError:
            return out
        if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
            out.append(Target(domain, f"fs:{path.as_posix()}", note=f"{HARD_LINK}: {st.st_nlink} names share this "
                              "file and the others may be secrets elsewhere; decided as a read outside the workspace"))
    return out


@cache
def case_insensitive(directory: Path) -> bool:
    """Whether names in `directory` match whatever their case (macOS and Windows by default). Probed once:
    an entry's name with its ASCII case swapped is looked up; with no such entry, a temporary file is made.
    When it cannot be told, True: the answer that decides more spellings, never fewer."""
    if os.path.normcase("A") == "a":
        return True
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                swapped = _swap_case(entry.name)
                if swapped != entry.name:
                    try:
                        return os.path.samestat(entry.stat(follow_symlinks=False), os.lstat(directory / swapped))
                    except FileNotFoundError:
                        return False
        with tempfile.NamedTemporaryFile(prefix=".agent-run-Case-", dir=directory) as probe:
            return os.path.exists(os.path.join(directory, _swap_case(os.path.basename(probe.name))))
    except OSError:
        return True


def _swap_case(name: str) -> str:
    return "".join(c.swapcase() if c.isascii() else c for c in name)


def _spelled_on_disk(workspace: Path, path: Path) -> Path:
    """`path` (inside the workspace) with each existing component as the directory spells it."""
    real = workspace
    for i, part in enumerate(path.relative_to(workspace).parts):
        try:
            names = os.listdir(real)
        except OSError:
            return real.joinpath(*path.relative_to(workspace).parts[i:])
        if part not in names:
            part = next((n for n in names if n.casefold() == part.casefold()), part)
        real = real / part
    return real


def file_targets(domain: str, workspace: Path, *raw_paths: str) -> list[Target]:
    out = []
    for raw in raw_paths:
        try:
            out += path_targets(domain, workspace, resolve_path(workspace, raw))
        except UnresolvablePath as exc:
            # Where it leads is unknown: decided as the path as written, and never below ask.
            literal = Path(os.path.abspath(os.path.join(workspace, os.path.expanduser(raw))))
            out.append(Target(domain, path_target(workspace, literal), floor="ask", note=str(exc)))
    return out


def shell_targets(workspace: Path, command: str) -> list[Target]:
    """Every simple command (bash), every file a redirection or tee writes (edit), every file
    read with `<` and directory entered with cd (read). Opaque parts floor the call at ask."""
    found = analyze(command)
    out = [Target("bash", f"shell:{c}", effect=found.high.get(c)) for c in found.commands]
    # After `cd DIR`, a relative path may be relative to DIR: decide it against the workspace and
    # against every directory the command enters (strictest wins), never against the workspace alone.
    bases = [workspace]
    for d in found.dirs:
        with contextlib.suppress(UnresolvablePath):
            bases.append(resolve_path(workspace, d))
    for domain, paths in (("edit", found.writes), ("read", found.reads)):
        for raw in paths:
            for base in ([workspace] if os.path.isabs(os.path.expanduser(raw)) else dict.fromkeys(bases)):
                out += file_targets(domain, base, raw) if base == workspace else _under(domain, workspace, base, raw)
    out += file_targets("read", workspace, *found.dirs)
    reasons = found.opaque + (_git_reasons(workspace, found.dirs, found.writes) if "git" in found.programs else [])
    if reasons:
        whole = " ".join(command.split())
        out.append(Target("bash", f"shell:{whole}", floor="ask", note="; ".join(dict.fromkeys(reasons))))
    return out


def _git_reasons(workspace: Path, dirs: list[str], writes: list[str]) -> list[str]:
    """git runs the configuration of the repository it finds from its working directory
    (core.fsmonitor, core.pager, …): one the agent wrote must not be found. Outside a `cd`, git
    starts at the workspace, whose own `.git` directory is protected by the hard limits."""
    out = []
    entered: list[Path | None] = []
    for d in dirs:
        try:
            entered.append(resolve_path(workspace, d))
        except UnresolvablePath:
            entered.append(None)
    if any(d != workspace for d in entered):
        out.append("git in a directory entered with cd: a repository the agent wrote there would run its "
                   "configuration")
    dot_git = workspace / ".git"
    if not dot_git.is_dir() or dot_git.is_symlink():
        written = set()
        for w in writes:
            with contextlib.suppress(UnresolvablePath):
                written.add(resolve_path(workspace, w))
        if os.path.lexists(dot_git) or (workspace / "HEAD").exists() or \
                written & {dot_git, workspace / "HEAD", workspace / "config"}:
            out.append("the workspace has no .git directory of its own: git would use the repository a .git "
                       "file, a link or a bare layout there names, with its configuration")
    return out


def _under(domain: str, workspace: Path, base: Path, raw: str) -> list[Target]:
    """`raw` relative to `base` (a directory entered with cd), as a target of the workspace."""
    return file_targets(domain, workspace, str(base / raw))


class InvalidURL(ValueError):
    """A URL web_fetch cannot fetch as written: refused before any policy decision."""


class CredentialsInURL(InvalidURL):
    """`user@` or `user:pass@` before the host: refused outright, whatever the policy."""


_DEFAULT_PORTS = {"http": 80, "https": 443}
_UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
# The WHATWG percent-encode sets httpx applies to a path and a query: the canonical form is already
# encoded as httpx would encode it, so httpx sends exactly the text that was decided.
_QUERY_SAFE = frozenset(chr(i) for i in range(0x21, 0x7F)) - set('"#<>')
_PATH_SAFE = _QUERY_SAFE - set("?`{}")
# Characters no host may contain once percent-decoded and mapped (the WHATWG forbidden domain
# code points): C0 controls, space, DEL and the URL delimiters.
_FORBIDDEN_HOST = frozenset(map(chr, range(0x21))) | frozenset("\x7f#%/:<>?@[\\]^|")
_IPV4_PART = re.compile(r"0[xX][0-9a-fA-F]*|0[0-7]*|[1-9][0-9]*")
_ENDS_IN_NUMBER = re.compile(r"[0-9]+|0[xX][0-9a-fA-F]*")


def normalize_url(url: str, *, drop_credentials: bool = False) -> str:
    """The URL as web_fetch connects to it, which is the form every decision sees.

    Scheme lower-cased; the host IDNA-mapped (UTS #46: fullwidth letters and ideographic dots
    become ASCII, A-labels for the rest), percent-decoded, without a trailing dot, and an IPv4
    address in any form `inet_aton` accepts (`2130706433`, `0x7f.1`, `0177.0.0.1`) as a dotted
    quad, an IPv6 address compressed in brackets; default port dropped; escapes of unreserved
    characters decoded and dot segments removed from the path, which is percent-encoded as httpx
    sends it (`/` when empty); fragment dropped. Idempotent.

    Raises CredentialsInURL for `user@host` (unless `drop_credentials`: then they are dropped),
    InvalidURL for anything that names no host web_fetch could connect to."""
    try:
        parts = urlsplit(url.strip())
    except ValueError as exc:  # an unbalanced bracket; a netloc with `@` or `:` in another script
        raise InvalidURL(str(exc)) from None
    scheme = parts.scheme.lower()
    if not scheme:
        raise InvalidURL("not an absolute URL (start it with https://)")
    _, at, hostport = parts.netloc.rpartition("@")
    if at and not drop_credentials:
        raise CredentialsInURL("a URL with credentials (user@ or user:pass@ before the host) is refused; "
                               "web_fetch sends none")
    host, port = _split_host_port(hostport)
    if host:
        host = canonical_host(host)
    elif scheme in _DEFAULT_PORTS:
        raise InvalidURL("no host in the URL")
    netloc = host if port is None or port == _DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    path, query = parts.path, parts.query
    if scheme in _DEFAULT_PORTS:
        path = _encode(_remove_dot_segments(_normalize_escapes(path)), _PATH_SAFE)
        query = _encode(_normalize_escapes(query), _QUERY_SAFE)
    return urlunsplit((scheme, netloc, path or "/", query, ""))


def _split_host_port(hostport: str) -> tuple[str, int | None]:
    if hostport.startswith("["):
        host, bracket, rest = hostport.partition("]")
        host += bracket
        if rest and not rest.startswith(":"):
            raise InvalidURL(f"unexpected {rest!r} after the IPv6 address")
        port_text = rest[1:]
    else:
        host, _, port_text = hostport.partition(":")
    if not port_text:
        return host, None
    if not port_text.isascii() or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise InvalidURL(f"port out of range or not a number: {port_text!r}")
    return host, int(port_text)


def canonical_host(host: str) -> str:
    """A URL's host as a connection sees it (see normalize_url); raises InvalidURL.

    The SSRF guard (runner/tools/ssrf.py) resolves this same form, so the address the policy
    decided is the address that is checked and connected to."""
    try:
        text = unquote(host, errors="strict")
    except UnicodeDecodeError:
        raise InvalidURL(f"invalid percent-encoding in host {host!r}") from None
    if text.startswith("[") or text.endswith("]"):
        try:
            address = ipaddress.IPv6Address(text[1:-1] if text.startswith("[") and text.endswith("]") else text)
        except ValueError as exc:
            raise InvalidURL(f"invalid IPv6 address {text!r}: {exc}") from None
        if address.scope_id:
            raise InvalidURL(f"an IPv6 zone is not fetched: {text!r}")
        return f"[{address.compressed}]"
    try:
        mapped = idna.uts46_remap(text, std3_rules=False, transitional=False)
    except idna.IDNAError as exc:
        raise InvalidURL(f"invalid host {text!r}: {exc}") from None
    mapped = mapped.removesuffix(".")  # `example.com.` is example.com to the resolver
    bad = sorted(set(mapped) & _FORBIDDEN_HOST)
    if not mapped or bad:
        raise InvalidURL(f"invalid host {text!r}" + (f": {bad[0]!r} is not allowed in a host" if bad else ""))
    address4 = ipv4_literal(mapped)
    if address4 is not None:
        return str(address4)
    labels = mapped.split(".")
    if "" in labels:
        raise InvalidURL(f"invalid host {text!r}: empty label")
    try:
        return ".".join(label if label.isascii() else idna.alabel(label).decode("ascii") for label in labels)
    except idna.IDNAError as exc:
        raise InvalidURL(f"invalid host {text!r}: {exc}") from None


def ipv4_literal(host: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address a host names in any form `inet_aton` (and so the resolver) accepts: 1 to 4
    parts, each decimal, octal (`0177`) or hex (`0x7f`), the last filling the remaining bytes
    (`127.1`, `2130706433`). None for a name; InvalidURL when it ends in a number but is no
    address (`1.2.3.4.5`, `256.1.1.1`), as for a browser."""
    parts = host.split(".")
    if not _ENDS_IN_NUMBER.fullmatch(parts[-1]):
        return None
    if len(parts) > 4 or not all(_IPV4_PART.fullmatch(p) for p in parts):
        raise InvalidURL(f"{host!r} is not an IPv4 address")
    numbers = [int(p[2:] or "0", 16) if p[:2] in ("0x", "0X") else int(p, 8 if len(p) > 1 and p[0] == "0" else 10)
               for p in parts]
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (5 - len(numbers)):
        raise InvalidURL(f"{host!r} is not an IPv4 address (a part is out of range)")
    return ipaddress.IPv4Address(sum(n << 8 * (3 - i) for i, n in enumerate(head)) + last)


def _normalize_escapes(text: str) -> str:
    """`%73` is `s` (an unreserved character means the same escaped or not); other escapes upper-case."""
    if "%" not in text:
        return text

    def one(m: re.Match[str]) -> str:
        char = chr(int(m.group(1), 16))
        return char if char in _UNRESERVED else f"%{m.group(1).upper()}"

    return _ESCAPE.sub(one, text)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 §5.2.4, as httpx applies it: `/a/../b` is requested as `/b`."""
    segments = path.split("/")
    if "." not in segments and ".." not in segments:
        return path
    out: list[str] = []
    for segment in segments:
        if segment == "..":
            if out and out != [""]:
                out.pop()
        elif segment != ".":
            out.append(segment)
    return "/".join(out)


def _encode(text: str, safe: frozenset[str]) -> str:
    """Percent-encode (UTF-8) what is not safe, leaving `%XX` escapes as they are."""
    if all(c in safe for c in text):
        return text
    return "".join(c if c in safe else "".join(f"%{b:02X}" for b in c.encode("utf-8")) for c in text)


def url_target(value: str) -> Target:
    """The `web_fetch` target of a URL. One web_fetch refuses whatever the policy (credentials, no
    host, a bad port) is decided `deny` here, with a note, so `policy explain` agrees with a run."""
    try:
        return Target("web_fetch", f"url:{normalize_url(value)}")
    except CredentialsInURL as exc:
        with contextlib.suppress(InvalidURL):
            return Target("web_fetch", f"url:{normalize_url(value, drop_credentials=True)}", floor="deny",
                          note=str(exc))
        return Target("web_fetch", "url:" + re.sub(r"//[^/?#]*@", "//", value.strip()), floor="deny", note=str(exc))
    except InvalidURL as exc:
        return Target("web_fetch", f"url:{value.strip()}", floor="deny", note=f"invalid URL: {exc}")


def network_target(value: str) -> Target:
    """`host:port`, `net:host:port`, or a bare host (port 443): what the egress proxy decides."""
    text = value.strip().lower()
    text = text[len("net:"):] if text.startswith("net:") else text
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else "443"
        host = f"[{host}]"
    else:
        host, _, port = text.rpartition(":") if ":" in text else (text, "", "443")
    return Target("network", f"net:{host.rstrip('.')}:{port or '443'}")


def web_targets(value: str) -> list[Target]:
    """A fetch of `value` is decided on its URL and on the network target it connects to (as the
    sandbox's egress proxy decides a command's connection): the `url:` rules say what may be read, the
    `network` rules where the runner may connect. A URL the tool refuses has no network target."""
    url = url_target(value)
    net = url_net_target(url.target.removeprefix("url:")) if url.floor != "deny" else None
    return [url] if net is None else [url, net]


def mcp_targets(value: str) -> list[Target]:
    """A tool (`mcp:SERVER/TOOL`, or `SERVER/TOOL`), or an HTTP server's `url:URL`: decided on its URL and on the
    network target it connects to (runner/mcp/runtime.py decides a server's start so)."""
    if value.startswith("url:"):
        url = Target("mcp", value)
        net = url_net_target(value.removeprefix("url:"))
        return [url] if net is None else [url, net]
    return [Target("mcp", value if value.startswith("mcp:") else f"mcp:{value}")]


def targets_for(domain: str, value: str, workspace: Path) -> list[Target]:
    """What a tool of `domain` receiving `value` is decided on (used by `policy explain`)."""
    if domain in ("read", "edit"):
        return file_targets(domain, workspace, value)
    if domain == "bash":
        return shell_targets(workspace, value)
    if domain == "web_fetch":
        return web_targets(value)
    if domain == "web_search":
        return [Target(domain, f"query:{value}")]
    if domain == "mcp":
        return mcp_targets(value)
    if domain == "task":
        return [Target(domain, value if value.startswith("agent:") else f"agent:{value}")]
    if domain == "network":
        return [network_target(value)]
    raise ValueError(f"unknown domain {domain!r}")
