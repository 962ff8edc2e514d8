"""Runs inside the sandbox, with the standard library only (`python -I -S bridge.py`):
listens on 127.0.0.1:PORT in the sandbox's own network namespace, carries each
connection to the runner's egress proxy over a Unix socket, and runs the command.
It exits with the command's status; then the pid namespace, and everything in it, ends.

With `--hold` it runs no command: it is the run's one bridge in a network namespace the run's
commands join (runner/sandbox/netns.py). It says `ready` on stdout once listening, and serves
until its stdin closes (the runner closed it, or died).

usage: bridge.py PORT SOCKET -- COMMAND...
       bridge.py PORT SOCKET --hold
"""

import os
import selectors
import signal
import socket
import subprocess
import sys
import threading


def _pipe(a: socket.socket, b: socket.socket) -> None:
    sel = selectors.DefaultSelector()
    sel.register(a, selectors.EVENT_READ, b)
    sel.register(b, selectors.EVENT_READ, a)
    try:
        while True:
            for key, _ in sel.select():
                assert isinstance(key.fileobj, socket.socket)  # a or b
                data = key.fileobj.recv(65536)
                if not data:
                    return
                key.data.sendall(data)
    except OSError:
        pass
    finally:
        a.close()
        b.close()


def _serve(listener, path):
    while True:
        conn, _ = listener.accept()
        try:
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.connect(path)
        except OSError:
            conn.close()
            continue
        threading.Thread(target=_pipe, args=(conn, upstream), daemon=True).start()


def main(argv):
    port, path, sep, *command = argv
    if not ((sep == "--" and command) or (sep == "--hold" and not command)):
        sys.exit("usage: bridge.py PORT SOCKET -- COMMAND... | bridge.py PORT SOCKET --hold")
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", int(port)))
    listener.listen(64)
    threading.Thread(target=_serve, args=(listener, path), daemon=True).start()
    if sep == "--hold":
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        while sys.stdin.buffer.read(4096):
            pass
        os._exit(0)
    proc = subprocess.Popen(command)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda s, _f: proc.send_signal(s))
    code = proc.wait()
    os._exit(128 - code if code < 0 else code)


if __name__ == "__main__":
    main(sys.argv[1:])
