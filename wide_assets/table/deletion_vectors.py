"""Delta deletion vectors: the `.bin` file format, the descriptor an add action carries, and the deleted
positions a descriptor points at.

A vector is a roaring bitmap array of the row positions of one data file that are deleted. Files of
vectors live under `DV_PREFIX` in the table: delta-rs's `vacuum(full=True)` deletes files it finds
outside `_`-prefixed folders that no add action names as a data file, and it does not count a vector as
referenced, so a vector anywhere else would be deleted while still in use.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyroaring import BitMap

DV_PREFIX = "_dv"
FORMAT_VERSION = b"\x01"
PORTABLE_MAGIC = 1681511377
Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
Z85_UUID_CHARS = 20


@dataclass(frozen=True)
class Descriptor:
    """Delta's `deletionVector` struct: where a file's vector is stored and how many rows it deletes."""

    storage_type: str  # 'u': a file named by a UUID under the table; 'i': inline; 'p': an absolute path
    path_or_inline_dv: str
    offset: int | None
    size_in_bytes: int
    cardinality: int

    def to_action(self) -> dict[str, Any]:
        action: dict[str, Any] = {
            "storageType": self.storage_type,
            "pathOrInlineDv": self.path_or_inline_dv,
            "sizeInBytes": self.size_in_bytes,
            "cardinality": self.cardinality,
        }
        if self.offset is not None:
            action["offset"] = self.offset
        return action

    @classmethod
    def from_action(cls, action: Mapping[str, Any]) -> Descriptor:
        return cls(
            storage_type=action["storageType"],
            path_or_inline_dv=action["pathOrInlineDv"],
            offset=action.get("offset"),
            size_in_bytes=int(action["sizeInBytes"]),
            cardinality=int(action["cardinality"]),
        )

    def file_path(self) -> str:
        """The vector file's path relative to the table (storage type 'u'), or its absolute path ('p')."""
        if self.storage_type == "p":
            return self.path_or_inline_dv
        if self.storage_type != "u":
            raise ValueError(f"An inline deletion vector has no file: {self}")
        prefix = self.path_or_inline_dv[:-Z85_UUID_CHARS]
        name = f"deletion_vector_{z85_decode_uuid(self.path_or_inline_dv[-Z85_UUID_CHARS:])}.bin"
        return f"{prefix}/{name}" if prefix else name


def z85_encode(data: bytes) -> str:
    """ZeroMQ Z85 (the standard library has it only from Python 3.13)."""
    if len(data) % 4:
        raise ValueError("Z85 encodes whole 4-byte words")
    out: list[str] = []
    for (word,) in struct.iter_unpack(">I", data):
        chunk = []
        for _ in range(5):
            word, digit = divmod(word, 85)
            chunk.append(Z85[digit])
        out.extend(reversed(chunk))
    return "".join(out)


def z85_decode(text: str) -> bytes:
    if len(text) % 5:
        raise ValueError("Z85 decodes whole 5-character groups")
    words = []
    for start in range(0, len(text), 5):
        word = 0
        for char in text[start : start + 5]:
            word = word * 85 + Z85.index(char)
        words.append(struct.pack(">I", word))
    return b"".join(words)


def z85_decode_uuid(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=z85_decode(text))


def serialize(positions: BitMap) -> bytes:
    """The portable roaring bitmap array of `positions` (every position is below 2**32: one bitmap)."""
    body = positions.serialize()
    return struct.pack("<IQI", PORTABLE_MAGIC, 1, 0) + body


def deserialize(payload: bytes) -> BitMap:
    """The positions of a portable roaring bitmap array (positions of 2**32 and above are refused: no
    file of this table holds that many rows)."""
    magic, count = struct.unpack_from("<IQ", payload, 0)
    if magic != PORTABLE_MAGIC:
        raise ValueError(f"Unknown deletion vector format (magic {magic})")
    at = 12
    positions = BitMap()
    for _ in range(count):
        (high,) = struct.unpack_from("<I", payload, at)
        at += 4
        bitmap = BitMap.deserialize(payload[at:])
        at += len(bitmap.serialize())
        if high != 0 and len(bitmap):
            raise ValueError("Deletion vectors of files with 2**32 rows or more are not supported")
        positions |= bitmap
    return positions


class VectorFile:
    """One `.bin` file holding the vectors of one commit, built in memory, one vector per data file."""

    def __init__(self) -> None:
        self.id = uuid.uuid4()
        self._parts: list[bytes] = [FORMAT_VERSION]
        self._size = len(FORMAT_VERSION)
        self.count = 0

    @property
    def path(self) -> str:
        """Its path relative to the table."""
        return f"{DV_PREFIX}/deletion_vector_{self.id}.bin"

    def add(self, positions: BitMap) -> Descriptor:
        """Append the vector of `positions`; its descriptor points at it."""
        payload = serialize(positions)
        offset = self._size
        self._parts += [struct.pack(">I", len(payload)), payload, struct.pack(">I", zlib.crc32(payload))]
        self._size += 8 + len(payload)
        self.count += 1
        return Descriptor(
            storage_type="u",
            path_or_inline_dv=DV_PREFIX + z85_encode(self.id.bytes),
            offset=offset,
            size_in_bytes=len(payload),
            cardinality=len(positions),
        )

    def content(self) -> bytes:
        return b"".join(self._parts)


def read_vector(descriptor: Descriptor, content: bytes) -> BitMap:
    """The deleted positions `descriptor` points at in `content` (its file's bytes; unused for inline
    vectors), checking the stored size and checksum."""
    if descriptor.storage_type == "i":
        return deserialize(z85_decode(descriptor.path_or_inline_dv))
    at = descriptor.offset or 0
    (size,) = struct.unpack_from(">I", content, at)
    payload = content[at + 4 : at + 4 + size]
    (crc,) = struct.unpack_from(">I", content, at + 4 + size)
    if size != descriptor.size_in_bytes or zlib.crc32(payload) != crc:
        raise ValueError(f"Deletion vector {descriptor.file_path()} is damaged (size or checksum)")
    return deserialize(payload)
