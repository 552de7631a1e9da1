#!/usr/bin/env python3
"""Every `Note [Title]` cited in the tree has a definition (ctest notes_defined).

A definition is a comment line holding only `Note [Title]`, with a line of `~` under it:

    // Note [Pinned staging]
    // ~~~~~~~~~~~~~~~~~~~~~
    // The rationale...

Every other `Note [Title]` is a citation. The check fails, naming file and line, on a
citation of a title that no file defines and on a title defined twice.
  tests/check_notes.py [SOURCE_DIR]   (default: the repository holding this script)
"""
import os
import re
import subprocess
import sys

NOTE = re.compile(r"Note \[([^\]]+)\]")
COMMENT = r"\s*(?://|#|\*|/\*|<!--)?\s*"
DEFINITION = re.compile(COMMENT + r"Note \[([^\]]+)\]\s*$")
TILDES = re.compile(COMMENT + r"~{3,}\s*$")
# The example in docs/architecture.md's introduction.
EXAMPLES = {"Title", "X"}
# Released headers kept as they shipped (Note [Frozen plugins]): copies, not definitions.
FROZEN = "tests/plugins/frozen_abi/"
SELF = "tests/check_notes.py"  # its own examples and messages


def tracked_files(root):
    """git's files; in a tree without git (an archive), every file outside build trees."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True,
                             check=True)
        return [f for f in out.stdout.decode().split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for folder, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(("build", "."))]
            files += [os.path.relpath(os.path.join(folder, n), root) for n in names]
        return files


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(__file__))
    definitions, citations = {}, []
    for name in tracked_files(root):
        if name.startswith(FROZEN) or name == SELF:
            continue
        try:
            with open(os.path.join(root, name), encoding="utf-8") as f:
                lines = f.read().split("\n")
        except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
            continue
        for i, line in enumerate(lines):
            match = DEFINITION.fullmatch(line)
            if match and i + 1 < len(lines) and TILDES.fullmatch(lines[i + 1]):
                definitions.setdefault(match.group(1), []).append(f"{name}:{i + 1}")
                continue
            citations += [(m.group(1), f"{name}:{i + 1}") for m in NOTE.finditer(line)]
    problems = []
    for title, places in sorted(definitions.items()):
        if len(places) > 1:
            problems.append(f"note '{title}' is defined {len(places)} times: {', '.join(places)}")
    for title, place in citations:
        if title not in definitions and title not in EXAMPLES:
            problems.append(f"{place}: note '{title}' is cited but defined nowhere")
    for p in problems:
        print(p)
    print(f"{len(definitions)} notes defined, {len(citations)} citations, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
