#!/usr/bin/env python3
"""Writes large Chakra traces for the bounds and complexity checks of chakra_test.sh.

Usage:
  chakra_synthetic.py chain DIR N M    DIR/trace.0.et: node 0 computes 10 us; nodes
                                       1..N alternate METADATA and INVALID, each after
                                       the one before; nodes N+1..N+M compute 1 us each
                                       after node N
  chakra_synthetic.py count DIR N0 N1  DIR/trace.0.et and trace.1.et of N0 and N1 nodes,
                                       one message repeated (an import counts them first)
  chakra_synthetic.py groups FILE N    FILE: comm_groups.json of N groups, each ranks 0 and 1

Messages are encoded here (protobuf's varints and tags, et_def.proto's field
numbers: Node id 1, name 2, type 3, data_deps 5, duration_micros 7;
GlobalMetadata version 1), as one protoc call per node would take minutes.
"""
import os
import sys


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chakra_fixture import varint  # noqa: E402  (protobuf's varint, written once)


def delimited(message):
    return varint(len(message)) + message


METADATA = delimited(b"\x0a\x05" + b"0.0.4")  # GlobalMetadata { version: "0.0.4" }
COMP_NODE, METADATA_NODE = 4, 1  # INVALID_NODE is 0, the default: no type field


def node(node_id, node_type, micros, deps=()):
    out = b"\x08" + varint(node_id)
    if node_type:
        out += b"\x18" + varint(node_type)
    for d in deps:
        out += b"\x28" + varint(d)
    if micros:
        out += b"\x38" + varint(micros)
    return delimited(out)


def chain(folder, n, m):
    os.makedirs(folder, exist_ok=True)
    out = bytearray(METADATA + node(0, COMP_NODE, 10))
    for k in range(1, n + 1):
        out += node(k, METADATA_NODE if k % 2 else 0, 0, (k - 1,))
    for k in range(n + 1, n + m + 1):
        out += node(k, COMP_NODE, 1, (n,))
    with open(os.path.join(folder, "trace.0.et"), "wb") as f:
        f.write(out)


def count(folder, n0, n1):
    os.makedirs(folder, exist_ok=True)
    for rank, n in enumerate((n0, n1)):
        with open(os.path.join(folder, f"trace.{rank}.et"), "wb") as f:
            f.write(METADATA + node(1, COMP_NODE, 0) * n)


def groups(path, n):
    with open(path, "w") as f:
        f.write("{" + ",".join(f'"g{k}":[0,1]' for k in range(n)) + "}")


if __name__ == "__main__":
    mode, target, *numbers = sys.argv[1:]
    {"chain": chain, "count": count, "groups": groups}[mode](target, *map(int, numbers))
