#!/usr/bin/env python3
"""A JSON Schema (draft 2020-12) validator for the keywords docs/*.schema.json use.

Usage: json_schema.py SCHEMA FILE...   (exit 1 and one line per violation when a file fails)

Python's jsonschema package is not among the project's dependencies; this checks the subset the
schemas use and refuses any other keyword, so that a schema can never lean on a keyword that is
silently ignored here.
"""
import json
import math
import sys

KNOWN = {"$schema", "$id", "title", "description", "$defs", "$ref", "type", "enum", "const", "required",
         "properties", "additionalProperties", "items", "minItems", "maxItems", "minimum", "maximum",
         "exclusiveMinimum", "exclusiveMaximum", "minLength", "allOf", "oneOf", "if", "then"}


def type_ok(value, name):
    if name == "null":
        return value is None
    if name == "boolean":
        return isinstance(value, bool)
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if name == "string":
        return isinstance(value, str)
    if name == "array":
        return isinstance(value, list)
    if name == "object":
        return isinstance(value, dict)
    raise ValueError(f"unknown type {name}")


def validate(value, schema, root, path, errors):
    unknown = set(schema) - KNOWN
    if unknown:
        raise ValueError(f"schema keyword(s) {sorted(unknown)} at {path} are not supported by this checker")
    if "$ref" in schema:
        ref = schema["$ref"]
        assert ref.startswith("#/$defs/"), ref
        validate(value, root["$defs"][ref[len("#/$defs/"):]], root, path, errors)
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(type_ok(value, t) for t in types):
            errors.append(f"{path}: {value!r:.60} is not of type {types}")
            return
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: {value!r} is not {schema['const']!r}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: {value} < minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path}: {value} > maximum {schema['maximum']}")
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            errors.append(f"{path}: {value} <= exclusiveMinimum {schema['exclusiveMinimum']}")
        if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
            errors.append(f"{path}: {value} >= exclusiveMaximum {schema['exclusiveMaximum']}")
    if isinstance(value, str) and len(value) < schema.get("minLength", 0):
        errors.append(f"{path}: shorter than {schema['minLength']}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errors.append(f"{path}: fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{path}: more than {schema['maxItems']} items")
        if "items" in schema:
            for i, item in enumerate(value):
                validate(item, schema["items"], root, f"{path}[{i}]", errors)
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                errors.append(f"{path}: missing required key {key!r}")
        props = schema.get("properties", {})
        for key, item in value.items():
            if key in props:
                validate(item, props[key], root, f"{path}.{key}", errors)
            elif schema.get("additionalProperties", True) is False:
                errors.append(f"{path}: unexpected key {key!r}")
    for sub in schema.get("allOf", []):
        validate(value, sub, root, path, errors)
    if "oneOf" in schema:
        passing = 0
        for sub in schema["oneOf"]:
            trial = []
            validate(value, sub, root, path, trial)
            passing += not trial
        if passing != 1:
            errors.append(f"{path}: matches {passing} of oneOf's schemas, not exactly 1")
    if "if" in schema:
        trial = []
        validate(value, schema["if"], root, path, trial)
        if not trial and "then" in schema:
            validate(value, schema["then"], root, path, errors)


def main():
    schema = json.load(open(sys.argv[1]))
    failed = False
    for name in sys.argv[2:]:
        errors = []
        validate(json.load(open(name)), schema, schema, "$", errors)
        for e in errors[:20]:
            print(f"{name}: {e}")
        failed |= bool(errors)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
