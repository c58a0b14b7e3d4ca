#!/usr/bin/env python3
"""Convert a flat Parquet file (one row group or several, no nesting) to CSV, with the standard
library and the `zstd` program alone: no pyarrow or pandas is packaged for the machines specsim is
built on. Enough of the format for AIConfigurator's measured tables
(docs/references/measured-compute.md#aic-kernel-data): Thrift compact metadata, data pages v1 and
v2, PLAIN and dictionary encodings, definition levels of optional columns, codecs UNCOMPRESSED,
SNAPPY, GZIP and ZSTD. Anything else stops with an error naming it.

    python3 scripts/parquet_to_csv.py moe_perf.parquet > moe_perf.csv
    python3 scripts/parquet_to_csv.py --self-test   # the decoders on bytes worked out by hand
"""
import csv
import struct
import subprocess
import sys
import zlib

# ---- Thrift compact protocol -----------------------------------------------------------------


class Reader:
    def __init__(self, data, pos=0):
        self.data, self.pos = data, pos

    def byte(self):
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self):
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7

    def zigzag(self):
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def take(self, n):
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out


def read_value(r, kind):
    if kind in (1, 2):  # booleans inside a struct carry their value in the type
        return kind == 1
    if kind == 3:
        return struct.unpack("b", bytes([r.byte()]))[0]
    if kind in (4, 5, 6):
        return r.zigzag()
    if kind == 7:
        return struct.unpack("<d", r.take(8))[0]
    if kind == 8:
        return r.take(r.varint())
    if kind in (9, 10):
        head = r.byte()
        size, elem = head >> 4, head & 0x0F
        if size == 15:
            size = r.varint()
        if elem in (1, 2):  # booleans in a list are one byte each
            return [r.byte() == 1 for _ in range(size)]
        return [read_value(r, elem) for _ in range(size)]
    if kind == 11:
        size = r.varint()
        if size == 0:
            return {}
        types = r.byte()
        return {read_value(r, types >> 4): read_value(r, types & 0x0F) for _ in range(size)}
    if kind == 12:
        return read_struct(r)
    raise ValueError(f"thrift compact type {kind} not handled")


def read_struct(r):
    fields, last = {}, 0
    while True:
        head = r.byte()
        if head == 0:
            return fields
        delta, kind = head >> 4, head & 0x0F
        last = last + delta if delta else r.zigzag()
        fields[last] = read_value(r, kind)


# ---- Codecs and encodings --------------------------------------------------------------------


def snappy(data):
    r = Reader(data)
    out = bytearray()
    size = r.varint()
    while len(out) < size:
        tag = r.byte()
        kind = tag & 3
        if kind == 0:  # literal
            n = tag >> 2
            if n >= 60:
                n = int.from_bytes(r.take(n - 59), "little")
            out += r.take(n + 1)
            continue
        if kind == 1:
            n, offset = ((tag >> 2) & 7) + 4, ((tag >> 5) << 8) | r.byte()
        elif kind == 2:
            n, offset = (tag >> 2) + 1, int.from_bytes(r.take(2), "little")
        else:
            n, offset = (tag >> 2) + 1, int.from_bytes(r.take(4), "little")
        for _ in range(n):  # copies may overlap what they write
            out.append(out[-offset])
    return bytes(out)


def decompress(codec, data, size):
    if codec == 0:
        return data
    if codec == 1:
        return snappy(data)
    if codec == 2:
        return zlib.decompress(data, 31)
    if codec == 6:
        return subprocess.run(["zstd", "-d", "-c", "-q"], input=data, capture_output=True, check=True).stdout
    raise ValueError(f"parquet codec {codec} not handled")


def hybrid(r, bit_width, count, end):
    """The RLE / bit-packed hybrid of levels and dictionary indices."""
    out = []
    width_bytes = (bit_width + 7) // 8
    while len(out) < count and r.pos < end:
        head = r.varint()
        if head & 1:  # bit-packed groups of 8
            groups = head >> 1
            raw = int.from_bytes(r.take(groups * bit_width), "little")
            mask = (1 << bit_width) - 1
            out += [(raw >> (i * bit_width)) & mask for i in range(groups * 8)]
        else:
            out += [int.from_bytes(r.take(width_bytes), "little")] * (head >> 1)
    return out[:count]


def plain(r, physical, count):
    if physical == 1:
        return list(struct.unpack(f"<{count}i", r.take(4 * count)))
    if physical == 2:
        return list(struct.unpack(f"<{count}q", r.take(8 * count)))
    if physical == 4:
        return list(struct.unpack(f"<{count}f", r.take(4 * count)))
    if physical == 5:
        return list(struct.unpack(f"<{count}d", r.take(8 * count)))
    if physical == 6:
        out = []
        for _ in range(count):
            n = struct.unpack("<i", r.take(4))[0]
            out.append(r.take(n).decode())
        return out
    if physical == 0:
        raw = int.from_bytes(r.take((count + 7) // 8), "little")
        return [bool((raw >> i) & 1) for i in range(count)]
    raise ValueError(f"parquet physical type {physical} not handled")


# ---- Columns ---------------------------------------------------------------------------------


def read_column(data, meta, optional):
    physical, codec, total = meta[1], meta[4], meta[5]
    pos = meta.get(11, meta[9]) if meta.get(11) else meta[9]
    dictionary, values = None, []
    while len(values) < total:
        r = Reader(data, pos)
        header = read_struct(r)
        start = r.pos
        page_type, size, stored = header[1], header[2], header[3]
        pos = start + stored
        if page_type == 2:  # dictionary page
            page = decompress(codec, data[start:pos], size)
            dictionary = plain(Reader(page), physical, header[7][1])
            continue
        if page_type == 0:  # data page v1: levels and values compressed together
            h = header[5]
            count, encoding = h[1], h[2]
            page = Reader(decompress(codec, data[start:pos], size))
            defined = [1] * count
            if optional:
                length = struct.unpack("<i", page.take(4))[0]
                defined = hybrid(page, 1, count, page.pos + length)
        elif page_type == 3:  # data page v2: levels stored uncompressed ahead of the values
            h = header[8]
            count, encoding, def_len, rep_len = h[1], h[4], h[5], h[6]
            levels = Reader(data, start + rep_len)
            defined = hybrid(levels, 1, count, start + rep_len + def_len) if optional and def_len else [1] * count
            body = data[start + rep_len + def_len:pos]
            compressed = h.get(7, True)
            page = Reader(decompress(codec, body, size - rep_len - def_len) if compressed else body)
        else:
            raise ValueError(f"parquet page type {page_type} not handled")
        present = sum(defined)
        if encoding in (2, 8):
            bit_width = page.byte()
            present_values = [dictionary[i] for i in hybrid(page, bit_width, present, len(page.data))]
        elif encoding == 0:
            present_values = plain(page, physical, present)
        else:
            raise ValueError(f"parquet encoding {encoding} not handled")
        it = iter(present_values)
        values += [next(it) if d else "" for d in defined]
    return values


def main(path):
    data = open(path, "rb").read()
    if data[:4] != b"PAR1" or data[-4:] != b"PAR1":
        sys.exit(f"{path}: not a Parquet file")
    length = struct.unpack("<i", data[-8:-4])[0]
    meta = read_struct(Reader(data, len(data) - 8 - length))
    schema = meta[2]
    leaves = [s for s in schema[1:] if not s.get(5)]
    names = [s[4].decode() for s in leaves]
    optional = [s.get(3, 0) == 1 for s in leaves]
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(names)
    for group in meta[4]:
        columns = [read_column(data, chunk[3], opt) for chunk, opt in zip(group[1], optional)]
        for row in zip(*columns):
            out.writerow(repr(v) if isinstance(v, float) else v for v in row)


def self_test():
    # Snappy: uncompressed length 10; a literal "abc" (tag (3 - 1) << 2); a copy of 7 bytes from 3
    # back (one-byte-offset copy: tag (7 - 4) << 2 | 1, then the offset), overlapping what it writes.
    assert snappy(bytes([10, 2 << 2]) + b"abc" + bytes([(3 << 2) | 1, 3])) == b"abcabcabca"
    # Snappy's first page of AIConfigurator's SGLang table: a 10-byte literal (tag 9 << 2).
    assert snappy(bytes([10, 9 << 2]) + b"\x06\x00\x00\x00SGLang") == b"\x06\x00\x00\x00SGLang"
    # RLE run: header 5 << 1 (five repeats) of value 3 at bit width 2 (one byte).
    assert hybrid(Reader(bytes([10, 3])), 2, 5, 2) == [3] * 5
    # Bit-packed: header (1 << 1) | 1 (one group of 8) at bit width 1, values 1,0,1,1,0,0,0,1.
    assert hybrid(Reader(bytes([3, 0b10001101])), 1, 8, 2) == [1, 0, 1, 1, 0, 0, 0, 1]
    # Thrift compact: field 1 i32 (delta 1, type 5) zigzag 4 -> 2; field 4 binary "ab"; stop.
    assert read_struct(Reader(bytes([0x15, 4, 0x38, 2]) + b"ab" + bytes([0]))) == {1: 2, 4: b"ab"}
    # A list of two i64 (size 2, type 6): zigzag 2 -> 1, 3 -> -2.
    assert read_value(Reader(bytes([0x26, 2, 3])), 9) == [1, -2]
    # PLAIN doubles and length-prefixed strings.
    assert plain(Reader(struct.pack("<2d", 0.5, -1.25)), 5, 2) == [0.5, -1.25]
    assert plain(Reader(struct.pack("<i", 4) + b"vLLM"), 6, 1) == ["vLLM"]
    print("parquet_to_csv: self-test passed")


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        self_test()
    elif len(sys.argv) != 2:
        sys.exit(__doc__)
    else:
        main(sys.argv[1])
