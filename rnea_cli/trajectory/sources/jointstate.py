"""sensor_msgs/JointState decoded in bulk, without a deserialize call per message.

A JointState's layout (frame_id, names, and the lengths of position, velocity and effort) fixes
where its numbers stand. Messages of one length are stacked into a (messages, bytes) matrix; those
whose layout bytes equal a parsed template's have their stamps and doubles at the template's
offsets, and are sliced out column by column. Layouts:

ROS 2 (CDR): 4-byte encapsulation header (00 01 little endian, 00 00 big endian); int32 sec,
uint32 nanosec; frame_id as uint32 length with the NUL, then its bytes; uint32 count of names,
each a 4-aligned string; then per array a 4-aligned uint32 count and, when not empty, 8-aligned
doubles. Alignment counts from the end of the header.
ROS 1: uint32 seq, secs, nsecs; frame_id as uint32 length and bytes (no NUL); names likewise; each
array a uint32 count and its doubles; nothing aligned.
"""

import struct
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Layout:
    names: tuple
    frame: str  # header.frame_id
    big: bool
    arrays: tuple  # ((offset, count) of position, velocity, effort)
    key: tuple  # (start, stop) byte ranges that must equal the template's for its offsets to hold
    length: int


def layout_of(raw, ros1):
    """The Layout of one raw message; ValueError for bytes that are not a JointState."""
    n = len(raw)
    if ros1:
        start, big, align = 12, False, (lambda pos, size: pos)
    else:
        if n < 4 or raw[0] != 0 or raw[1] not in (0, 1):
            raise ValueError("not CDR (no encapsulation header)")
        start, big = 12, raw[1] == 0
        def align(pos, size):
            return 4 + -(-(pos - 4) // size) * size
    u32 = struct.Struct(">I" if big else "<I").unpack_from

    def count(pos):
        if pos + 4 > n:
            raise ValueError("truncated")
        return u32(raw, pos)[0]

    key = [(0, 2)] if not ros1 else []
    pos = start
    size = count(pos)
    text_end = pos + 4 + size
    if (not ros1 and size < 1) or text_end > n:
        raise ValueError("bad frame_id")
    key.append((pos, text_end))
    frame = bytes(raw[pos + 4:text_end - (0 if ros1 else 1)]).decode("utf-8")
    pos = align(text_end, 4)
    names = []
    names_count = count(pos)
    key.append((pos, pos + 4))
    pos += 4
    for _ in range(names_count):
        pos = align(pos, 4)
        size = count(pos)
        end = pos + 4 + size
        if (not ros1 and size < 1) or end > n:
            raise ValueError("bad joint name")
        names.append(bytes(raw[pos + 4:end - (0 if ros1 else 1)]).decode("utf-8"))
        key.append((pos, end))
        pos = end
    if len(set(names)) != len(names):
        twice = next(name for k, name in enumerate(names) if name in names[:k])
        raise ValueError(f"joint {twice[:60]!r} is named twice")
    arrays = []
    for _ in range(3):
        pos = align(pos, 4)
        items = count(pos)
        key.append((pos, pos + 4))
        pos += 4
        if items:
            pos = align(pos, 8)
        if pos + 8 * items > n:
            raise ValueError("truncated numbers")
        arrays.append((pos, items))
        pos += 8 * items
    if n - pos > (0 if ros1 else 3):  # CDR may pad the end to 4 bytes
        raise ValueError(f"{n - pos} bytes past the end")
    return Layout(tuple(names), frame, big, tuple(arrays), _spans(key), n)


def _spans(ranges, gap=8):
    """The byte ranges merged across gaps of padding shorter than `gap`: fewer, longer compares. A
    message whose padding bytes differ from the template's then gets a template of its own."""
    merged = []
    for a, b in sorted(ranges):
        if merged and a - merged[-1][1] < gap:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return tuple((a, b) for a, b in merged)


@dataclass
class Decoded:
    """The messages of one publisher (connection and frame_id) with one set of joint names, in the
    order they were read."""

    names: tuple
    source: int  # the connection, by its place among the topic's connections
    frame: str  # header.frame_id
    index: np.ndarray  # (m,) position of each message among all that were read
    log_time: np.ndarray  # (m,) int64 ns: when the bag recorded it
    stamp: np.ndarray  # (m,) int64 ns: header.stamp
    position: np.ndarray  # (m, len(names))
    velocity: np.ndarray | None  # (m, len(names)), or None where some message had none
    effort: np.ndarray | None
    time: np.ndarray | None = None  # (m,) seconds on the bag's time base, once chosen (see publishers.py)
    with_velocity: int = 0  # messages with a velocity for every joint (all m where velocity is not None)


class NotJointState(ValueError):
    """(index among the raw messages, why)."""


def decode(raws, log_times, ros1, offset=0, sources=None):
    """[Decoded] of raw JointState messages (bytes), one per connection (`sources`: each message's,
    by its place among the topic's; all 0 if None), frame_id and set of names, each message's index
    counted from `offset`; NotJointState (its index among raws) for a message that is not one."""
    lengths = np.fromiter(map(len, raws), dtype=np.int64, count=len(raws))
    log_times = np.asarray(log_times, dtype=np.int64)
    sources = np.zeros(len(raws), np.int64) if sources is None else np.asarray(sources, dtype=np.int64)
    parts = {}  # (names, frame, source) -> [(layout, index, log_time, stamp, position, velocity, effort)]
    for length in np.unique(lengths):
        rows = np.flatnonzero(lengths == length)
        same = raws if len(rows) == len(raws) else [raws[i] for i in rows]
        M = np.frombuffer(b"".join(same), np.uint8).reshape(len(rows), int(length))
        left = np.arange(len(rows))
        while len(left):
            first = int(rows[left[0]])
            try:
                layout = layout_of(raws[first], ros1)
            except (ValueError, UnicodeDecodeError) as exc:
                raise NotJointState(first, str(exc)) from None
            ok = np.ones(len(left), bool)
            template = M[left[0]]
            rest = M if len(left) == len(M) else M[left]
            for a, b in layout.key:
                ok &= (rest[:, a:b] == template[a:b]).all(axis=1)
            take = left[ok]
            for source in np.unique(sources[rows[take]]):
                mine = take[sources[rows[take]] == source]
                parts.setdefault((frozenset(layout.names), layout.frame, int(source)), []).append(
                    (layout, rows[mine], log_times[rows[mine]],
                     *_numbers(M if len(mine) == len(M) else M[mine], layout, ros1)))
            left = left[~ok]
    return [_merged(blocks, offset, key[2]) for key, blocks in parts.items()]


def _numbers(M, layout, ros1):
    """(stamp ns, position, velocity, effort) of matrix rows of one layout."""
    order = ">" if layout.big else "<"
    sec = np.ascontiguousarray(M[:, 4:8]).view(order + ("u4" if ros1 else "i4"))[:, 0].astype(np.int64)
    nsec = np.ascontiguousarray(M[:, 8:12]).view(order + "u4")[:, 0].astype(np.int64)
    arrays = []
    for offset, items in layout.arrays:
        values = np.ascontiguousarray(M[:, offset:offset + 8 * items]).view(order + "f8")
        arrays.append(values.astype(np.float64) if layout.big else values)
    return (sec * 1_000_000_000 + nsec, *arrays)


def in_order(x, names, order):
    """The columns of x, one per name in `names`, in the order of `order` (x itself when it is the same)."""
    return x if tuple(names) == tuple(order) else x[:, [names.index(n) for n in order]]


def _merged(blocks, offset, source):
    """One Decoded from the blocks of one connection, frame and name set, columns in the first
    block's name order."""
    names = blocks[0][0].names
    columns = {"position": [], "velocity": [], "effort": []}
    for layout, *_, position, velocity, effort in blocks:
        for key, x in (("position", position), ("velocity", velocity), ("effort", effort)):
            columns[key].append(None if x.shape[1] != len(names) else in_order(x, layout.names, names))
    index = np.concatenate([b[1] for b in blocks])
    order = slice(None) if len(blocks) == 1 else np.argsort(index, kind="stable")  # one block: in order

    def joined(parts):
        return None if any(p is None for p in parts) else np.concatenate(parts)[order]

    position = joined(columns["position"])
    if position is None:
        raise NotJointState(int(index[0]), "position does not list every joint named")
    with_velocity = sum(len(b[1]) for b, v in zip(blocks, columns["velocity"]) if v is not None)
    return Decoded(names, source, blocks[0][0].frame, offset + index[order],
                   np.concatenate([b[2] for b in blocks])[order], np.concatenate([b[3] for b in blocks])[order],
                   position, joined(columns["velocity"]), joined(columns["effort"]), with_velocity=with_velocity)
