"""A W&B offline run read back: the records of its ``run-<id>.wandb`` file, decoded with wandb's own protobuf
``Record``. wandb 0.31 ships no Python reader of the file (its sync is Go); the container is LevelDB's log format
(32 KiB blocks, each record a CRC-32, a length and a type), under a 7-byte W&B header."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path
from typing import Any

BLOCK = 32768
HEADER = b":W&B"
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


def records(path: Path) -> list[Any]:
    """Every record of the file, in order (``wandb.proto.wandb_internal_pb2.Record``); a bad checksum fails."""
    from wandb.proto import wandb_internal_pb2 as pb

    data = Path(path).read_bytes()
    assert data[:4] == HEADER, f"{path} is not a W&B run file"
    out, parts, pos = [], [], 7
    while pos + 7 <= len(data):
        left = BLOCK - pos % BLOCK
        if left < 7:  # a block's tail too short for a header is padding
            pos += left
            continue
        checksum, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if kind == 0 and length == 0:  # zero padding to the block's end
            pos += left
            continue
        body = data[pos + 7 : pos + 7 + length]
        assert zlib.crc32(bytes([kind]) + body) & 0xFFFFFFFF == checksum, f"{path}: bad checksum at {pos}"
        pos += 7 + length
        parts.append(body)
        if kind in (FULL, LAST):
            record = pb.Record()
            record.ParseFromString(b"".join(parts))
            out.append(record)
            parts = []
    return out


def of_type(path: Path, kind: str) -> list[Any]:
    """The records of one type (``run``, ``history``, ``summary``, ``artifact``, ``telemetry``, ...), as that part."""
    return [getattr(r, kind) for r in records(path) if r.WhichOneof("record_type") == kind]


def history(path: Path) -> list[dict[str, Any]]:
    """Each ``run.log`` call's values (top-level keys, decoded from JSON)."""
    return [
        {".".join(item.nested_key) or item.key: json.loads(item.value_json) for item in h.item}
        for h in of_type(path, "history")
    ]


def config(path: Path) -> dict[str, Any]:
    """The run's configuration as ``wandb.init(config=...)`` gave it."""
    (run,) = of_type(path, "run")
    return {item.key: json.loads(item.value_json) for item in run.config.update}
