"""Power loss: what a broker's log directory looks like after the page cache is gone.

Kafka only knows data is on disk up to each partition's recovery point (it advances on flush;
``recovery-point-offset-checkpoint`` holds the last checkpointed value). A hard kill inside a
container keeps the page cache, so a power loss is simulated on the stopped container: every
segment is cut at the first batch at or past the recovery point, and segments that start past
it are removed. The cut runs as a small shell script that the image's entrypoint executes before
Kafka starts (the container is stopped, so nothing can run in it until then).

Segment framing is the same for every message format: 8-byte offset, 4-byte size, then ``size``
bytes. For v2 batches the offset is the batch's base offset; for v0/v1 compressed wrappers it
is the last inner offset, which is why a v1 wrapper is kept only when it ends before the point.
"""

from __future__ import annotations

import io
import shlex
import struct
import tarfile
from dataclasses import dataclass

from harness.cluster.archive import one_file_tar

SCRIPT_PATH = "/var/lib/kafka/power-loss.sh"  # the entrypoint runs (and removes) this before Kafka


@dataclass(frozen=True)
class Cut:
    path: str  # file inside the container
    size: int  # new size in bytes; -1 removes the file
    kept_until: int  # first offset no longer in the file

    def command(self) -> str:
        p = shlex.quote(self.path)
        return f"rm -f {p}" if self.size < 0 else f"truncate -s {self.size} {p}"


def parse_checkpoint(text: str) -> dict[tuple[str, int], int]:
    """``topic partition offset`` lines after the version and count lines."""
    out: dict[tuple[str, int], int] = {}
    for line in text.splitlines()[2:]:
        parts = line.split()
        if len(parts) == 3:
            out[(parts[0], int(parts[1]))] = int(parts[2])
    return out


def entries(data: bytes) -> list[tuple[int, int, int, int]]:
    """(position, offset field, magic, end position) of each batch or message in a segment."""
    out = []
    pos = 0
    while pos + 12 <= len(data):
        offset, size = struct.unpack_from(">qi", data, pos)
        end = pos + 12 + size
        if size <= 0 or end > len(data):
            break  # a torn tail: Kafka's own recovery drops it
        magic = data[pos + 16] if pos + 16 < len(data) else 2
        out.append((pos, offset, magic, end))
        pos = end
    return out


def cut_segment(path: str, base_offset: int, data: bytes, recovery_point: int) -> Cut | None:
    """The cut for one segment file, or None when it lies wholly before the recovery point."""
    if base_offset >= recovery_point:
        return Cut(path, -1, base_offset)
    for pos, offset, _magic, _end in entries(data):
        # v2: offset is the batch's first offset; v0/v1: the (wrapper's last) offset.
        if offset >= recovery_point:
            return Cut(path, pos, offset)
    return None


def plan_from_tar(tar_bytes: bytes, data_dir_name: str = "data") -> list[Cut]:
    """Cuts for a ``docker cp``-style tar of a broker's log directory."""
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tf:
        blobs = {}
        for m in tf.getmembers():
            f = tf.extractfile(m) if m.isfile() else None
            if f is not None and (m.name.endswith(".log") or m.name.endswith("-checkpoint")):
                blobs[m.name] = f.read()
    rp_name = f"{data_dir_name}/recovery-point-offset-checkpoint"
    points = parse_checkpoint(blobs[rp_name].decode()) if rp_name in blobs else {}
    cuts: list[Cut] = []
    for name in sorted(blobs):
        parts = name.split("/")
        if len(parts) != 3 or not parts[2].endswith(".log"):
            continue
        topic, _, part = parts[1].rpartition("-")
        if not part.isdigit():
            continue
        point = points.get((topic, int(part)), 0)  # never checkpointed: nothing is known flushed
        cut = cut_segment(f"/var/lib/kafka/{name}", int(parts[2][:-4]), blobs[name], point)
        if cut is not None:
            cuts.append(cut)
    return cuts


def script(cuts: list[Cut]) -> str:
    lines = ["#!/bin/sh", "# written by kchaos: unflushed data lost in a simulated power loss", "set -e"]
    lines += [c.command() for c in cuts]
    return "\n".join(lines) + "\n"


def script_tar(cuts: list[Cut]) -> bytes:
    """A tar holding the script, for ``put_archive`` into the stopped container."""
    return one_file_tar(SCRIPT_PATH.rsplit("/", 1)[1], script(cuts).encode(), 0o755)
