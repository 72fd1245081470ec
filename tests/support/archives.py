"""Build small WARC (warcio) and ARC (format v1, written by hand) fixtures in tests."""
from __future__ import annotations

import gzip
import io
from pathlib import Path

from warcio.warcwriter import WARCWriter


def http_bytes(status_line: str, headers: list[tuple[str, str]], body: bytes) -> bytes:
    head = "".join(f"{k}: {v}\r\n" for k, v in headers)
    return f"HTTP/1.1 {status_line}\r\n{head}\r\n".encode("latin-1") + body


def write_warc(path: Path, captures: list[tuple[str, list[tuple[str, str]], bytes]],
               status: str = "200 OK") -> Path:
    """``captures`` = [(url, http headers, payload as stored)], one response record each."""
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=str(path).endswith(".gz"))
        for url, headers, body in captures:
            # warcio would fix a wrong Content-Length in http_headers; write raw to keep it lying
            payload = http_bytes(status, headers, body)
            rec = writer.create_warc_record(url, "response", payload=io.BytesIO(payload),
                                            length=len(payload), warc_content_type="application/http; msgtype=response")
            writer.write_record(rec)
    return path


def write_arc(path: Path, captures: list[tuple[str, list[tuple[str, str]], bytes]],
              date: str = "20080101120000") -> Path:
    """An ARC v1 file, each record its own gzip member (as Internet Archive writes them)."""
    desc_body = b"1 0 focuscrawl-test\nURL IP-address Archive-date Content-type Archive-length\n"
    header = f"filedesc://{path.name} 0.0.0.0 {date} text/plain {len(desc_body)}\n".encode() + desc_body + b"\n"
    members = [header]
    for url, headers, body in captures:
        ctype = dict((k.lower(), v) for k, v in headers).get("content-type", "text/html").split(";")[0]
        rec = http_bytes("200 OK", headers, body)
        members.append(f"{url} 127.0.0.1 {date} {ctype} {len(rec)}\n".encode() + rec + b"\n")
    gz = str(path).endswith(".gz")
    with open(path, "wb") as fh:
        for m in members:
            fh.write(gzip.compress(m) if gz else m)
    return path
