"""Where a large JointState topic of a ROS 2 bag is cut into parts of its log time, which worker
processes read apart (bags.py reads them and puts them back together in order).

A part is cut where the bag's own index says the topic's messages are: a .db3's index of log
times, or an MCAP's chunk index; a bag that every reader would have to index or decompress whole
is read in one part.
"""

PART = 1 << 17  # messages at least, for a part of a topic read by a worker process of its own


def parts(reader, connections, workers):
    """[(start, stop)] log times (ns) of the parts read apart: [start, stop), None for open. One
    part unless the topic is large and the bag splittable: a single ROS 2 storage file (sqlite3,
    or MCAP with its chunk index), which each worker opens in a moment. (A ROS 1 bag is indexed
    whole by every reader that opens it; a folder of several files is read file after file; a
    file compressed whole is decompressed by every reader; an MCAP without its index is read
    from its start.) The parts hold about as many of the topic's messages each: cut where a
    .db3's index of log times puts the k-th n-th of the topic's messages, or where an MCAP's chunk
    index says its chunks hold them; with fewer chunks than parts, the topic's time is split evenly
    (the bag's, when neither index can be read)."""
    count = sum(c.msgcount for c in connections)
    n = max(1, min(workers, count // PART))
    if n == 1 or not _splittable(reader):
        return [(None, None)]
    storage = _storage_files(reader)[0]
    ids = {c.id for c in getattr(storage, "connections", ()) if c.topic == connections[0].topic}
    cuts = _db3_cuts(storage, ids, n)
    if cuts is None:
        chunks = _topic_chunks(storage, ids)
        cuts = _chunk_cuts(chunks, n)
        if len(cuts) < n - 1:
            start, end = (chunks[0][0], max(e for _, e, _ in chunks)) if chunks else (reader.start_time,
                                                                                      reader.end_time)
            cuts = sorted({start + (end - start) * k // n for k in range(1, n)} - {start})
    bounds = [None] + cuts + [None]
    return list(zip(bounds[:-1], bounds[1:]))


def _storage_files(reader):
    """rosbags' readers of the storage files of a ROS 2 bag's one reader."""
    storage = reader.readers[0].storage
    return getattr(storage, "storages", [storage])  # a folder's storage files, or the file itself


def _db3_cuts(storage, ids, n):
    """Sorted log times at which the topic's messages in a .db3 (channel ids `ids`) are split into
    n parts of nearly equal count, from its index of log times; None for another storage."""
    db = getattr(storage, "dbconn", None)
    if db is None or not ids or not hasattr(db, "execute"):
        return None
    where = f"topic_id IN ({','.join('?' * len(ids))})"
    try:
        count, = db.execute(f"SELECT count(*) FROM messages WHERE {where}", tuple(ids)).fetchone()
        cuts = {row[0] for k in range(1, n) for row in db.execute(
            f"SELECT timestamp FROM messages WHERE {where} ORDER BY timestamp LIMIT 1 OFFSET ?",
            (*ids, count * k // n)).fetchall()}
        first, = db.execute(f"SELECT min(timestamp) FROM messages WHERE {where}", tuple(ids)).fetchone()
    except Exception:  # apsw's errors, or a schema other than ROS 2's: split by time instead
        return None
    return sorted(c for c in cuts if c > first)


def _chunk_cuts(chunks, n):
    """Up to n - 1 cuts at chunk starts: each at the first chunk with (cuts + 1) / n of the messages before it."""
    total, seen, cuts = sum(k for _, _, k in chunks), 0, []
    for start, _, k in chunks:
        if len(cuts) < n - 1 and seen >= total * (len(cuts) + 1) / n and (not cuts or start > cuts[-1]):
            cuts.append(start)
        seen += k
    return cuts


def _topic_chunks(storage, ids):
    """[(first log time, last, messages of the topic)] of an MCAP's chunks that hold the topic
    (channel ids `ids`), in time order; [] for another storage."""
    try:
        chunks = [(c.message_start_time, c.message_end_time, sum(c.channel_count.get(i, 0) for i in ids))
                  for c in storage.chunks]
    except (AttributeError, TypeError):
        return []
    return sorted(chunk for chunk in chunks if chunk[2])


def _splittable(reader):
    try:
        if not reader.is2 or len(reader.readers) != 1:
            return False
        files = _storage_files(reader)
        metadata = getattr(reader.readers[0].storage, "metadata", None)
        if len(files) != 1 or getattr(metadata, "compression_mode", "") == "file":
            return False
        return not hasattr(files[0], "chunks") or bool(files[0].chunks)
    except AttributeError:  # another rosbags than the one this was written for: read it whole
        return False
