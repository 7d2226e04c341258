#!/usr/bin/python3
"""Incremental image backup over NBD, as hypervisor backup tools do it.

    nbd-image-backup.py [--full] [--bitmap NAME] [TLS options] URI BACKUP

URI is an NBD export with a dirty bitmap, such as the one `chj export`
prints (nbd+unix:///?socket=PATH, nbd://HOST:PORT/; nbds://HOST:PORT/ and
nbds+unix:// with TLS).  TLS, which an nbds URI requires:
    --tls-certificates DIR   x509: DIR holds ca-cert.pem, client-cert.pem
                             and client-key.pem (libnbd set_tls_certificates)
    --tls-psk-file FILE      PSK: FILE holds USERNAME:HEXKEY lines
    --tls-username USER      the PSK identity (default: the URI's user@,
                             else the login name)  An incremental run
asks the server for the extents of the metadata context
qemu:dirty-bitmap:NAME (NBD_CMD_BLOCK_STATUS) and preads only the dirty
ones into the existing BACKUP image, at the same offsets; everything else
in BACKUP is the previous backup.  A full run (--full, or no BACKUP yet)
reads every extent that base:allocation does not report as zero.  The same
client works against `qemu-nbd -B`, libvirt's pull-mode backup or any other
server with a qemu:dirty-bitmap context: nothing here knows about chj.

At the end it prints one line:
    mode MODE extents N read BYTES size SIZE sha256 HEX
where BYTES counts the bytes it read from the server and HEX is the
checksum of the whole BACKUP image, to compare with the source's.
Exit status: 0 ok, 1 error, 2 usage.
"""
import argparse
import hashlib
import os
import sys

import nbd

MAX_REQ = 32 << 20          # bytes per pread and per block_status query
STATE_DIRTY = 1             # qemu:dirty-bitmap: the extent is dirty
STATE_ZERO = 2              # base:allocation: the extent reads as zeros


def extents(h, ctx, size):
    """Yield (offset, length, flags) of context ctx over the whole export."""
    off = 0
    while off < size:
        got = []

        def cb(metacontext, start, entries, err):
            if metacontext == ctx:
                got.extend(entries)
            return 0

        h.block_status(min(MAX_REQ, size - off), off, cb)
        if not got:
            raise RuntimeError(f"server sent no {ctx} extents at {off}")
        for i in range(0, len(got), 2):
            length = min(got[i], size - off)
            if length <= 0:
                raise RuntimeError(f"empty {ctx} extent at {off}")
            yield off, length, got[i + 1]
            off += length
            if off >= size:
                break


def copy(h, out, off, length):
    """pread [off, off + length) into out at the same offset."""
    end = off + length
    while off < end:
        n = min(MAX_REQ, end - off)
        buf = h.pread(n, off)
        os.pwrite(out, buf, off)
        off += n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--full", action="store_true", help="copy everything")
    ap.add_argument("--bitmap", default="chj", help="bitmap name (default chj)")
    ap.add_argument("--tls-certificates", metavar="DIR", help="x509 client credentials")
    ap.add_argument("--tls-psk-file", metavar="FILE", help="PSK keys file")
    ap.add_argument("--tls-username", metavar="USER", help="PSK identity")
    ap.add_argument("uri")
    ap.add_argument("backup")
    a = ap.parse_args()
    tls = a.tls_certificates or a.tls_psk_file or a.tls_username
    if tls and not a.uri.startswith("nbds"):
        ap.error(f"{a.uri}: TLS options need an nbds:// or nbds+unix:// URI")
    if a.tls_certificates and a.tls_psk_file:
        ap.error("give one of --tls-certificates and --tls-psk-file")

    full = a.full or not os.path.exists(a.backup)
    ctx = "base:allocation" if full else "qemu:dirty-bitmap:" + a.bitmap
    h = nbd.NBD()
    h.add_meta_context(ctx)
    if a.tls_certificates:
        h.set_tls_certificates(a.tls_certificates)
    if a.tls_psk_file:
        h.set_tls_psk_file(a.tls_psk_file)
    if a.tls_username:
        h.set_tls_username(a.tls_username)
    h.connect_uri(a.uri)
    if not h.can_meta_context(ctx):
        sys.exit(f"nbd-image-backup: {a.uri}: the server offers no {ctx}")
    size = h.get_size()
    if not full and os.path.getsize(a.backup) != size:
        sys.exit(f"nbd-image-backup: {a.backup}: not the size of the export ({size}); use --full")

    out = os.open(a.backup, os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if full else 0), 0o600)
    os.ftruncate(out, size)
    nread = nextents = 0
    for off, length, flags in list(extents(h, ctx, size)):
        want = not (flags & STATE_ZERO) if full else flags & STATE_DIRTY
        if want:
            copy(h, out, off, length)
            nread += length
            nextents += 1
    os.fsync(out)
    os.close(out)
    h.shutdown()

    sha = hashlib.sha256()
    with open(a.backup, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            sha.update(chunk)
    print(f"mode {'full' if full else 'incremental'} extents {nextents} "
          f"read {nread} size {size} sha256 {sha.hexdigest()}")


if __name__ == "__main__":
    try:
        main()
    except nbd.Error as e:
        sys.exit(f"nbd-image-backup: {e}")
