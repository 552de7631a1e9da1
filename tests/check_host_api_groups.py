#!/usr/bin/env python3
"""Every LoomHostApi entry is in exactly one group of Note [The host services by purpose]
(sdk/include/loom/plugin.h), and every name the Note lists is an entry (ctest
host_api_groups). The struct's order is frozen by the ABI; the Note is how a vendor finds
the services for the kind of plugin they write, so an entry appended without a group
fails here.
  tests/check_host_api_groups.py REPO_ROOT
Exit status 0 when the groups cover the table exactly, 1 otherwise."""
import os
import re
import sys

GROUPS = ("core", "backend", "functionality", "shared")


def main(root):
    text = open(os.path.join(root, "sdk/include/loom/plugin.h")).read()
    struct = re.search(r"typedef struct LoomHostApi \{(.*?)\} LoomHostApi;", text, re.S)
    if not struct:
        print("[host_api_groups] expected `typedef struct LoomHostApi {...} LoomHostApi;` "
              "in plugin.h, found none")
        return 1
    body = re.sub(r"/\*.*?\*/", "", struct.group(1), flags=re.S)
    entries = re.findall(r"\(\*\s*([a-z_0-9]+)\s*\)", body)
    note = re.search(r"Note \[The host services by purpose\](.*?)-{20,}", text, re.S)
    if not note:
        print("[host_api_groups] expected Note [The host services by purpose] in plugin.h")
        return 1
    grouped = {}
    group = None
    for line in note.group(1).splitlines():
        line = line.strip().lstrip("*").rstrip()
        head = re.match(r"\s*(" + "|".join(GROUPS) + r") \(", line)
        if head:
            group = head.group(1)
            continue
        if group and line.startswith("  ") and re.fullmatch(r"[a-z_0-9 ]+", line.strip()):
            for name in line.split():
                grouped.setdefault(name, []).append(group)
    errors = []
    for name in entries:
        if name not in grouped:
            errors.append(f"LoomHostApi::{name} is in no group of the Note")
    for name, groups in grouped.items():
        if len(groups) > 1:
            errors.append(f"{name} is in {len(groups)} groups ({', '.join(groups)}); expected one")
        if name not in entries:
            errors.append(f"the Note lists {name}, which is not a LoomHostApi entry")
    for e in errors:
        print("[host_api_groups] " + e)
    if not errors:
        print(f"[host_api_groups] {len(entries)} entries in {len(GROUPS)} groups")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
