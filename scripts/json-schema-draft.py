#!/usr/bin/env python3
"""Drafts a JSON Schema (2020-12) for one command's `--json` output from sample documents.

    scripts/json-schema-draft.py COMMAND SAMPLE.json [SAMPLE.json ...] > docs/schemas/COMMAND.schema.json

Every field seen becomes a declared property (additionalProperties: false), required when
every sample object at that place has it; a field's type is the union of the types seen.
A field seen only as null is printed to stderr: give it its real type by hand. The draft is
a starting point: review it, add descriptions, and run the suite (tests/json_schemas.rs
checks real outputs against the committed schemas).
"""
import json
import sys


def kind(v):
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def merge(values, at, nulls):
    types = sorted({kind(v) for v in values})
    if "integer" in types and "number" in types:
        types.remove("integer")
    schema = {"type": types[0] if len(types) == 1 else types}
    objects = [v for v in values if isinstance(v, dict)]
    if objects:
        keys = []
        for o in objects:
            keys += [k for k in o if k not in keys]
        schema["properties"] = {
            k: merge([o[k] for o in objects if k in o], f"{at}.{k}", nulls) for k in sorted(keys)
        }
        schema["required"] = sorted(k for k in keys if all(k in o for o in objects))
        schema["additionalProperties"] = False
    arrays = [v for v in values if isinstance(v, list)]
    items = [x for a in arrays for x in a]
    if arrays:
        schema["items"] = merge(items, f"{at}[]", nulls) if items else {}
        if not items:
            nulls.append(f"{at}: only empty arrays seen")
    if types == ["null"]:
        nulls.append(f"{at}: only null seen")
    return schema


def main():
    command, paths = sys.argv[1], sys.argv[2:]
    docs = [json.load(open(p)) for p in paths]
    nulls = []
    schema = merge(docs, "$", nulls)
    schema["properties"]["schema_version"] = {"const": 1}
    if command != "error":
        schema["properties"]["command"] = {"const": command}
    out = {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": f"granary {command} --json"}
    out.update(schema)
    json.dump(out, sys.stdout, indent=2, sort_keys=False)
    print()
    for n in nulls:
        print(f"{command}: {n}", file=sys.stderr)


if __name__ == "__main__":
    main()
