"""One file as a tar stream: how kchaos writes a file into a container, running or stopped
(``put_archive``), without a shell in it."""

from __future__ import annotations

import io
import tarfile
import time


def one_file_tar(name: str, body: bytes, mode: int = 0o644) -> bytes:
    """A tar holding one file ``name`` with ``body``."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        info = tarfile.TarInfo(name)
        info.size = len(body)
        info.mode = mode
        info.mtime = int(time.time())  # a reader that looks for a change by its time sees one
        tf.addfile(info, io.BytesIO(body))
    return buf.getvalue()
