#!/usr/bin/env python3
"""Builds Chakra trace files from readable fixtures (tests/data/chakra/).

Usage: chakra_fixture.py PROTO SRC_DIR OUT_DIR
Every SRC_DIR/NAME.txt becomes OUT_DIR/NAME (e.g. trace.0.et.txt -> trace.0.et);
other files (comm_groups.json) are copied. A .txt file is a list of messages:
a line "@GlobalMetadata" or "@Node" starts one, whose protobuf text format
follows (encoded by `protoc --encode=ChakraProtoMsg.TYPE PROTO`) and is
written after its length as a varint; "@raw HEX..." appends bytes as they
are, for framing that no encoder would write. Lines starting with # are comments.
"""
import os
import shutil
import subprocess
import sys


def varint(n):
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def encode(proto, kind, text):
    r = subprocess.run(["protoc", f"--encode=ChakraProtoMsg.{kind}", f"--proto_path={os.path.dirname(proto)}",
                        os.path.basename(proto)], input=text.encode(), capture_output=True)
    if r.returncode != 0:
        sys.exit(f"protoc --encode={kind}: {r.stderr.decode().strip()}\n{text}")
    return r.stdout


def build(proto, path):
    out = bytearray()
    kind, body = None, []

    def flush():
        if kind is not None:
            message = encode(proto, kind, "\n".join(body))
            out.extend(varint(len(message)) + message)

    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("#"):
            continue
        if line.startswith("@raw"):
            flush()
            kind, body = None, []
            out.extend(bytes.fromhex(line[4:].replace(" ", "")))
        elif line.startswith("@"):
            flush()
            kind, body = line[1:].strip(), []
        else:
            body.append(line)
    flush()
    return bytes(out)


def main():
    proto, src, dst = sys.argv[1:4]
    os.makedirs(dst, exist_ok=True)
    for name in sorted(os.listdir(src)):
        if name.endswith(".txt"):
            with open(os.path.join(dst, name[:-4]), "wb") as f:
                f.write(build(proto, os.path.join(src, name)))
        else:
            shutil.copy(os.path.join(src, name), os.path.join(dst, name))


if __name__ == "__main__":
    main()
