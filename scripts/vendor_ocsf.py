#!/usr/bin/env python3
"""Copies the OCSF schema files gavel's OCSF events are validated against
into fixtures/ocsf/schema/: the dictionary, the categories, the base event
and the classes gavel emits (1001, 1007, 6003) with their categories, the
profiles, and every object those reach. From a checkout of
github.com/ocsf/ocsf-schema (Apache-2.0; LICENSE and NOTICE are copied too).

Usage: vendor_ocsf.py OCSF_SCHEMA_CHECKOUT
"""
import json
import os
import shutil
import sys

CLASSES = [
    "events/base_event.json",
    "events/system/system.json",
    "events/system/file_activity.json",
    "events/system/process_activity.json",
    "events/application/application.json",
    "events/application/api_activity.json",
]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    src = sys.argv[1]
    out = os.path.join(os.path.dirname(__file__), "..", "fixtures", "ocsf", "schema")
    shutil.rmtree(out, ignore_errors=True)

    def load(rel):
        with open(os.path.join(src, rel)) as f:
            return json.load(f)

    def copy(rel):
        dest = os.path.join(out, rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(os.path.join(src, rel), dest)

    dictionary = load("dictionary.json")["attributes"]
    objects = {name[:-5] for name in os.listdir(os.path.join(src, "objects"))}
    profiles = sorted(name for name in os.listdir(os.path.join(src, "profiles")))
    seen = set()
    todo = [load(rel) for rel in CLASSES] + [load("profiles/" + p) for p in profiles]
    while todo:
        definition = todo.pop()
        if definition.get("extends") in objects and definition["extends"] not in seen:
            seen.add(definition["extends"])
            todo.append(load(f"objects/{definition['extends']}.json"))
        for name, attribute in definition.get("attributes", {}).items():
            if name == "$include" or not isinstance(attribute, dict):
                continue
            kind = attribute.get("type") or dictionary.get(name, {}).get("type")
            if kind in objects and kind not in seen:
                seen.add(kind)
                todo.append(load(f"objects/{kind}.json"))
    for rel in ["LICENSE", "NOTICE", "version.json", "dictionary.json", "categories.json"]:
        copy(rel)
    for rel in CLASSES:
        copy(rel)
    for p in profiles:
        copy("profiles/" + p)
    for name in sorted(seen):
        copy(f"objects/{name}.json")
    print(f"{len(seen)} objects, {len(profiles)} profiles, {len(CLASSES)} classes")


if __name__ == "__main__":
    main()
