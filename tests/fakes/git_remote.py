"""A real git smart-HTTP remote on 127.0.0.1: a bare repository served by `git http-backend` (CGI) behind a small
HTTP server that, as github.com does for a job token, requires Basic auth `x-access-token:TOKEN` (401 with a
`WWW-Authenticate` challenge otherwise). `reject(text)` makes the next pushes fail in a pre-receive hook with
`text` (a protected branch); `requests` records each request's method, path and Authorization header."""

from __future__ import annotations

import base64
import os
import subprocess
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.fakes.github_server import TOKEN
from tests.fakes.loopback import Loopback, QuietHandler


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL")}
    return {**env, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "HOME": "/nonexistent", **extra}


class GitRemote:
    def __init__(self, root: Path, token: str = TOKEN, name: str = "hello.git") -> None:
        self.root, self.name, self.token = root, name, token
        self.bare = root / name
        subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(self.bare)], check=True, env=_env())
        self.git("config", "http.receivepack", "true")
        self.requests: list[tuple[str, str, str]] = []
        remote = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                remote._serve(self)

            do_POST = do_GET

        self._server = Loopback(Handler)
        self.url = f"{self._server.url}/{name}"

    def __enter__(self) -> GitRemote:
        self._server.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.stop()

    def git(self, *args: str) -> str:
        return subprocess.run(["git", "--git-dir", str(self.bare), *args], check=True, capture_output=True, text=True,
                              env=_env()).stdout

    def reject(self, text: str) -> None:
        hook = self.bare / "hooks" / "pre-receive"
        hook.write_text(f"#!/bin/sh\necho '{text}' >&2\nexit 1\n", encoding="utf-8")
        hook.chmod(0o755)

    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        auth = h.headers.get("authorization") or ""
        self.requests.append((h.command, h.path, auth))
        want = base64.b64encode(f"x-access-token:{self.token}".encode()).decode()
        scheme, _, value = auth.partition(" ")
        body = self._body(h)
        if scheme.lower() != "basic" or value.strip() != want:
            h.send_response(401)
            h.send_header("WWW-Authenticate", 'Basic realm="GitHub"')
            h.send_header("content-length", "0")
            h.end_headers()
            return
        parts = urlsplit(h.path)
        env = _env(GIT_PROJECT_ROOT=str(self.root), GIT_HTTP_EXPORT_ALL="1", PATH_INFO=parts.path,
                   QUERY_STRING=parts.query, REQUEST_METHOD=h.command, REMOTE_USER="x-access-token",
                   REMOTE_ADDR="127.0.0.1", CONTENT_TYPE=h.headers.get("content-type") or "",
                   CONTENT_LENGTH=str(len(body)), HTTP_CONTENT_ENCODING=h.headers.get("content-encoding") or "",
                   GIT_PROTOCOL=h.headers.get("git-protocol") or "")
        out = subprocess.run(["git", "http-backend"], input=body, capture_output=True, env=env).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        status, headers = 200, []
        for line in head.decode("latin-1").split("\r\n"):
            key, _, val = line.partition(":")
            if key.lower() == "status":
                status = int(val.strip().split()[0])
            elif key:
                headers.append((key, val.strip()))
        h.send_response(status)
        for key, val in headers:
            h.send_header(key, val)
        h.send_header("content-length", str(len(payload)))
        h.end_headers()
        h.wfile.write(payload)

    @staticmethod
    def _body(h: BaseHTTPRequestHandler) -> bytes:
        if (h.headers.get("transfer-encoding") or "").lower() == "chunked":
            data = b""
            while True:
                size = int(h.rfile.readline().strip() or b"0", 16)
                if size == 0:
                    h.rfile.readline()
                    return data
                data += h.rfile.read(size)
                h.rfile.readline()
        length = int(h.headers.get("content-length") or 0)
        return h.rfile.read(length) if length else b""
