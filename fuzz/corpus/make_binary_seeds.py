#!/usr/bin/env python3
"""Writes the binary seeds of fuzz/corpus (checkpoint parts, weights files, token shards) in the
formats of libs/ckpt/include/gradsync/ckpt/{checkpoint,weights_file}.h and
libs/data/include/gradsync/data/token_shard.h, each preceded by the fuzz target's mode bytes.
Run from anywhere: python3 fuzz/corpus/make_binary_seeds.py"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
MASK = (1 << 64) - 1


def fnv1a64(data, h=0xcbf29ce484222325):
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & MASK
    return h


def mix64(x):
    x = (x + 0x9e3779b97f4a7c15) & MASK
    x = ((x ^ (x >> 30)) * 0xbf58476d1ce4e5b9) & MASK
    x = ((x ^ (x >> 27)) * 0x94d049bb133111eb) & MASK
    return x ^ (x >> 31)


def combine(a, b):
    return mix64(a ^ mix64(b))


def layout_hash(params):
    h = combine(0, len(params))
    offset = 0
    for name, shape, _ in params:
        h = combine(h, fnv1a64(name.encode()))
        h = combine(h, len(shape))
        for d in shape:
            h = combine(h, d & MASK)
        h = combine(h, offset)
        n = 1
        for d in shape:
            n *= d
        offset += n
    return h


def total(params):
    t = 0
    for _, shape, _ in params:
        n = 1
        for d in shape:
            n *= d
        t += n
    return t


MODEL = b"\x0a\x03mlp"  # gradsync.v1.ModelSpec{preset: "mlp"}
PARAMS = [("fc0.weight", [3, 2], True), ("fc0.bias", [3], False)]


def rank_part(params, moments=True, rank=0, world=2, version=1):
    """A whole part: version 1 (a moment count), or 2 and 3 (shard fields covering every element).
    The trailer is FNV-1a, the checksum of versions 1 and 2; a version 3 part (XXH3-64) is meant
    for the fuzz target's fix-up mode, which appends the checksum its version names."""
    n = total(params)
    meta = struct.pack("<I", 5) + b"job-1" + struct.pack("<iiiqiqQq", 3, rank, world, 7, 1, 64, 42, 7)
    meta += struct.pack("<I", len(MODEL)) + MODEL
    meta += struct.pack("<IQQ", len(params), n, layout_hash(params))
    for name, shape, decay in params:
        meta += struct.pack("<I", len(name)) + name.encode() + struct.pack("<BI", 1 if decay else 0, len(shape))
        meta += b"".join(struct.pack("<q", d) for d in shape)
    if version == 1:
        meta += struct.pack("<Q", n if moments else 0)
    else:
        meta += struct.pack("<QQB", 0, n, 1 if moments else 0)
    floats = [0.5 * i for i in range(n)] * (3 if moments else 1)
    body = meta + b"".join(struct.pack("<f", f) for f in floats)
    size = 8 + 4 + 8 + len(body) + 8
    content = b"GSCKPART" + struct.pack("<IQ", version, size) + body
    return content, content + struct.pack("<Q", fnv1a64(content))


def weights(params, version=2):
    """Version 2 with its FNV-1a trailer; a version 3 file (XXH3-64) is meant for the fix-up mode."""
    n = total(params)
    buf = b"GSWEIGHT" + struct.pack("<IIQQ", version, len(params), n & MASK, layout_hash(params))
    buf += struct.pack("<I", len(MODEL)) + MODEL
    for name, shape, _ in params:
        buf += struct.pack("<I", len(name)) + name.encode() + struct.pack("<I", len(shape))
        buf += b"".join(struct.pack("<q", d) for d in shape)
    buf += b"".join(struct.pack("<f", 0.25 * i) for i in range(max(n, 0)))
    return buf, buf + struct.pack("<Q", fnv1a64(buf))


def shard(tokens, wide=False):
    """A uint16 shard (magic 20240520, version 1), or with `wide` a uint32 one (20240801, 7)."""
    header = ([20240801, 7] if wide else [20240520, 1]) + [len(tokens)] + [0] * 253
    return struct.pack("<256i", *header) + struct.pack("<%d%s" % (len(tokens), "I" if wide else "H"), *tokens)


def vocab(n):
    """fuzz_shard's vocabulary bytes for a vocabulary of n: n - 1 as 2 bytes, then its high byte."""
    return struct.pack("<HB", (n - 1) & 0xFFFF, (n - 1) >> 16)


def report(job=0, gen=1, world=2, rank=0, step=0, seconds=10, buckets=0):
    """One StepReducer Add operation as fuzz_step_reducer decodes it (step_reducer_fuzz.cc)."""
    def small(value):  # AnyDouble's "value / 10" case
        return bytes([4, value])
    op = bytes([3, job, 1, gen, 1, world - 1, 1, rank, 1, step])
    op += small(23) + b"\x08" + struct.pack("<h", 256) + small(seconds) + small(8) + small(2) + small(15) + small(1)
    op += bytes([buckets]) + b"".join(bytes([i]) + struct.pack("<h", 512) + small(1) + small(3) for i in range(buckets))
    return op


def write(target, name, data):
    os.makedirs(os.path.join(HERE, target), exist_ok=True)
    with open(os.path.join(HERE, target, name), "wb") as f:
        f.write(data)


def main():
    content, whole = rank_part(PARAMS)
    write("fuzz_ckpt", "part_valid", b"\x00" + whole)
    write("fuzz_ckpt", "part_fixed_up", b"\x02" + content)
    write("fuzz_ckpt", "part_no_moments", b"\x02" + rank_part(PARAMS, moments=False)[0])
    write("fuzz_ckpt", "part_truncated", b"\x00" + whole[: len(whole) // 2])
    write("fuzz_ckpt", "part_bad_checksum", b"\x00" + whole[:-1] + bytes([whole[-1] ^ 1]))
    write("fuzz_ckpt", "manifest", b"\x01" + b'{"step": "7", "worldSize": 1, "parts": '
          b'[{"rank": 0, "file": "rank-00000.bin", "bytes": "100", "checksum": "fnv1a64:0000000000000000"}]}')
    write("fuzz_ckpt", "part_v2_valid", b"\x00" + rank_part(PARAMS, version=2)[1])
    write("fuzz_ckpt", "part_v3_fixed_up", b"\x02" + rank_part(PARAMS, version=3)[0])
    write("fuzz_ckpt", "part_v3_no_moments", b"\x02" + rank_part(PARAMS, moments=False, version=3)[0])
    write("fuzz_ckpt", "manifest_xxh3", b"\x01" + b'{"step": "7", "worldSize": 1, "parts": '
          b'[{"rank": 0, "file": "rank-00000.bin", "bytes": "100", "checksum": "xxh3-64:0000000000000000"}]}')
    write("fuzz_ckpt", "manifest_unknown_checksum", b"\x01" + b'{"step": "7", "worldSize": 1, "parts": '
          b'[{"rank": 0, "file": "rank-00000.bin", "bytes": "100", "checksum": "sha256:00"}]}')
    write("fuzz_ckpt", "manifest_escaping_name", b"\x01" + b'{"step": "7", "worldSize": 1, "parts": '
          b'[{"rank": 0, "file": "../../etc/passwd", "bytes": "1"}]}')

    body, whole = weights(PARAMS)
    write("fuzz_weights", "valid", b"\x00" + whole)
    write("fuzz_weights", "checksum_added", b"\x01" + body)
    write("fuzz_weights", "checksum_added_v3", b"\x01" + weights(PARAMS, version=3)[0])
    write("fuzz_weights", "negative_dim", b"\x01" + weights([("w", [-2, 3], True)])[0])
    rank_at = 32 + 4 + len(MODEL) + 4 + len(PARAMS[0][0])  # the first parameter's u32 rank
    write("fuzz_weights", "huge_rank", b"\x01" + body[:rank_at] + struct.pack("<I", 0xFFFFFFF0) + body[rank_at + 4:])
    write("fuzz_weights", "truncated", b"\x00" + whole[:40])

    write("fuzz_shard", "valid", b"\x06" + vocab(256) + shard(list(range(40))))
    write("fuzz_shard", "valid_uint32", b"\x06" + vocab(128256) + shard([70000 + i for i in range(40)], wide=True))
    write("fuzz_shard", "token_over_vocab", b"\x00" + vocab(10) + shard([1, 2, 300]))
    write("fuzz_shard", "token_over_vocab_uint32", b"\x00" + vocab(70000) + shard([1, 2, 70000], wide=True))
    write("fuzz_shard", "count_too_large", b"\x00" + vocab(256) + shard([1, 2, 3])[:-2])
    write("fuzz_shard", "count_fixed_up", b"\x01" + vocab(256) + shard([5] * 9) + b"\x07\x00")
    write("fuzz_shard", "count_fixed_up_uint32", b"\x01" + vocab(256) + shard([5] * 9, wide=True) + b"\x07\x00\x00\x00")
    steps = b"".join(report(rank=r, step=t, seconds=10 + 20 * r, buckets=t % 3) for t in range(4) for r in range(2))
    write("fuzz_step_reducer", "two_ranks_four_steps", steps + b"\x01\x00\x00" + b"\x02")
    partial = report(world=3, rank=0) + report(world=3, rank=2) + b"\x00\x3c" + b"\x01\x00\x05"
    write("fuzz_step_reducer", "timeout_makes_partial", partial + b"\x00\x59" + b"\x00\x59" + b"\x02")
    newer = report(gen=1, step=3) + report(gen=2, step=1) + report(gen=1, step=4) + report(gen=2, rank=1, step=1)
    write("fuzz_step_reducer", "newer_generation", newer + b"\x01\x00\x00")
    many_jobs = b"".join(report(job=j, world=1) for j in range(6)) + b"\x02"
    write("fuzz_step_reducer", "too_many_jobs", many_jobs)
    write("fuzz_step_reducer", "odd_fields", report(world=9) + bytes([3, 0, 0, 0xff, 0xff, 0xff, 0x7f, 0]) + b"\x00")

    write("fuzz_shard", "short_header", b"\x00\xff\x00" + shard([1])[:100])


if __name__ == "__main__":
    main()
