# SPDX-License-Identifier: GPL-2.0 OR MIT
"""A small client of QMP, QEMU's machine protocol on a unix socket, for the
VM harness's helpers (vm-snapshot, vm-cpu-dump).

    q = QMP(path)            connect, read the greeting, leave negotiation
    q.cmd('stop')            a command's "return"; QMPError on its "error"
    q.hmp('info registers')  a human monitor command's text
Events QEMU sends in between are skipped.  A closed socket raises EOFError,
a connection that fails OSError.
"""
import json
import socket
import time


class QMPError(RuntimeError):
    pass


def connect(path, wait=30.0):
    """A unix socket connected to path, retrying for up to wait seconds
    while it does not exist yet (QEMU creates it once it has started).  A
    socket that exists and refuses for a second is a QEMU that has exited
    (a snapshot it could not load): no use waiting longer."""
    end = time.time() + wait
    refused_since = None
    while True:
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(path)
            return s
        except OSError as e:
            s.close()
            now = time.time()
            if isinstance(e, ConnectionRefusedError):
                refused_since = refused_since or now
                if now - refused_since >= 1:
                    raise
            if now >= end:
                raise
            time.sleep(0.01)


class QMP:
    def __init__(self, path, wait=30.0, timeout=None):
        self.sock = connect(path, wait)
        self.sock.settimeout(timeout)
        self.buf = b''
        self.reply()  # the greeting
        self.cmd('qmp_capabilities')

    def reply(self):
        while True:
            while b'\n' in self.buf:
                line, self.buf = self.buf.split(b'\n', 1)
                msg = json.loads(line)
                if 'event' not in msg:
                    return msg
            data = self.sock.recv(65536)
            if not data:
                raise EOFError('QMP closed')
            self.buf += data

    def cmd(self, name, **args):
        self.sock.sendall(json.dumps({'execute': name, 'arguments': args}).encode() + b'\n')
        msg = self.reply()
        if 'error' in msg:
            raise QMPError(f"{name}: {msg['error'].get('desc', 'QMP error')}")
        return msg.get('return')

    def hmp(self, line):
        return self.cmd('human-monitor-command', **{'command-line': line})

    def close(self):
        self.sock.close()
