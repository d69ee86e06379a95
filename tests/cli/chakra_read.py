#!/usr/bin/env python3
"""Reads Chakra trace files without protobuf's Python package (not a test dependency).

A second reader of the wire format, written from Chakra's et_def.proto field
numbers (docs/formats.md), so that tests check moeplan's files against the
schema rather than against moeplan's own reader:
  Node: id 1, name 2, type 3, ctrl_deps 4, data_deps 5, start_time_micros 6,
        duration_micros 7, attr 10;
  AttributeProto: name 1, double_val 3, int32_val 7, int64_val 9,
        uint64_val 13, bool_val 27, string_val 29, string_list 30;
  GlobalMetadata: version 1, attr 2.
`nodes(path)` gives each node as a dict: id, name, type, data_deps,
duration_micros and attr {name: (member, value)}.
"""
import struct

NODE_TYPES = {4: "COMP_NODE", 5: "COMM_SEND_NODE", 6: "COMM_RECV_NODE", 7: "COMM_COLL_NODE"}
ATTR_MEMBERS = {3: "double_val", 7: "int32_val", 9: "int64_val", 13: "uint64_val", 27: "bool_val",
                29: "string_val", 30: "string_list"}


def varint(data, at):
    n = shift = 0
    while True:
        b = data[at]
        at += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return n, at


def fields(data):
    """(number, wire type, value) of each field of one message."""
    at = 0
    while at < len(data):
        key, at = varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = varint(data, at)
        elif wire == 1:
            value, at = data[at:at + 8], at + 8
        elif wire == 2:
            n, at = varint(data, at)
            value, at = data[at:at + n], at + n
        elif wire == 5:
            value, at = data[at:at + 4], at + 4
        else:
            raise ValueError(f"wire type {wire}")
        yield number, wire, value


def signed64(n):
    return n - (1 << 64) if n >= 1 << 63 else n


def attribute(data):
    name, member, value = None, None, None
    for number, wire, v in fields(data):
        if number == 1:
            name = v.decode()
        elif number in ATTR_MEMBERS:
            member = ATTR_MEMBERS[number]
            if member == "double_val":
                value = struct.unpack("<d", v)[0]
            elif member in ("string_val",):
                value = v.decode()
            elif member == "string_list":
                value = [s.decode() for n, _, s in fields(v) if n == 1]
            elif member == "bool_val":
                value = bool(v)
            elif member in ("int32_val", "int64_val"):
                value = signed64(v)
            else:
                value = v
    return name, (member, value)


def messages(path):
    data = open(path, "rb").read()
    at = 0
    while at < len(data):
        n, at = varint(data, at)
        yield data[at:at + n]
        at += n


def packed(wire, value):
    if wire == 0:
        return [value]
    out, at = [], 0
    while at < len(value):
        n, at = varint(value, at)
        out.append(n)
    return out


def metadata(path):
    """The GlobalMetadata's version and attributes {name: (member, value)}."""
    out = {"version": "", "attr": {}}
    for number, _, v in fields(next(messages(path))):
        if number == 1:
            out["version"] = v.decode()
        elif number == 2:
            name, value = attribute(v)
            out["attr"][name] = value
    return out


def nodes(path):
    out = []
    for k, m in enumerate(messages(path)):
        if k == 0:
            continue  # the GlobalMetadata
        node = {"id": 0, "name": "", "type": None, "data_deps": [], "duration_micros": 0, "attr": {}}
        for number, wire, v in fields(m):
            if number == 1:
                node["id"] = v
            elif number == 2:
                node["name"] = v.decode()
            elif number == 3:
                node["type"] = NODE_TYPES.get(v, v)
            elif number == 5:
                node["data_deps"] += packed(wire, v)
            elif number == 7:
                node["duration_micros"] = v
            elif number == 10:
                name, value = attribute(v)
                node["attr"][name] = value
        out.append(node)
    return out
