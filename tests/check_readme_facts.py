#!/usr/bin/env python3
"""The counts README.md states are true of the tree (ctest readme_facts).

A count in the README (ops, kernels, lines of an example, tests, plugins, ...) goes stale
as soon as the tree changes, so the README states one only if this script checks it:

  - every count it finds in the README's prose and tables must match one of FACTS below,
    and the tree must agree with it (`about N` within 10%, `over N` / `more than N` and
    `at least N`, `under N` / `fewer than N` as they read, a bare N exactly);
  - a count of one of the nouns in COUNTED that no fact covers is an error: check it
    here, or drop it from the README (preferred);
  - the README stays under MAX_LINES lines: it is a user page, and the reference
    material lives in docs/ and tools/bench/README.md.

Fenced code blocks and HTML comments are not read: the CLI samples are the binary's real
output, checked by readme_cli_up_to_date (tests/check_readme_cli.sh), and the code
examples are built by their own tests.
  tests/check_readme_facts.py REPO_ROOT [README]   (README: REPO_ROOT/README.md)
Exit status 0 when every count holds, 1 otherwise, with one message per README line.
"""
import bisect
import glob
import os
import re
import sys

MAX_LINES = 500

WORDS = {w: i for i, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen "
    "fourteen fifteen sixteen seventeen eighteen nineteen twenty".split())}
# A number: digits (1,234 or 1234) or a number word from two on ("one kernel tree" is
# not a count); never part of a longer token (bfloat16, 1.x, 2026-11-21, 3x3).
NUM = (r"(?<![\w.,/-])(\d{1,3}(?:,\d{3})+|\d+|"
       + "|".join(w for w in WORDS if WORDS[w] >= 2) + r")(?![\w.,]\w|-\w)")
QUAL = r"(?:(about|around|nearly|roughly|some|over|more than|at least|under|fewer than|less than)\s+)?"
# Nouns whose counts go stale with the tree.
COUNTED = (r"ops|operators|op schemas|schemas|overloads|kernels|lines|tests|test cases|"
           r"plugins|samples|families|op families|results|backends|benchmarks|notes")
# QUAL NUM, at most two words (float32, example), then a counted noun.
COUNT = re.compile(r"\b" + QUAL + NUM + r"((?:\s+[\w-]+){0,2}?)\s+(" + COUNTED + r")\b",
                   re.IGNORECASE)
SOURCE_EXT = (".c", ".cc", ".cpp", ".h", ".hpp", ".cu", ".cuh")


def number(text):
    text = text.lower()
    return WORDS[text] if text in WORDS else int(text.replace(",", ""))


def holds(qualifier, stated, actual):
    q = (qualifier or "").lower()
    if q in ("about", "around", "nearly", "roughly", "some"):
        return abs(actual - stated) <= 0.1 * stated
    if q in ("over", "more than"):
        return actual > stated
    if q == "at least":
        return actual >= stated
    if q in ("under", "fewer than", "less than"):
        return actual < stated
    return actual == stated


def read(root, path):
    with open(os.path.join(root, path), encoding="utf-8") as f:
        return f.read()


def lines_of(root, path):
    """Lines of a file, or of a directory's C, C++ and CUDA sources."""
    full = os.path.join(root, path)
    if os.path.isfile(full):
        return read(root, path).count("\n")
    total = 0
    for folder, _, names in os.walk(full):
        for name in names:
            if name.endswith(SOURCE_EXT):
                with open(os.path.join(folder, name), encoding="utf-8") as f:
                    total += f.read().count("\n")
    return total


def kernels_of(root, path):
    """Kernel registrations (`.impl<...>(`) in a file or a directory's sources."""
    full = os.path.join(root, path)
    files = [full] if os.path.isfile(full) else [
        os.path.join(d, n) for d, _, ns in os.walk(full) for n in ns if n.endswith(SOURCE_EXT)]
    return sum(len(re.findall(r"\.impl<", open(f, encoding="utf-8").read())) for f in files)


def op_table_rows(root):
    """Rows of docs/ops.md's op table: one per schema (`loom ops --format markdown`)."""
    return sum(1 for line in read(root, "docs/ops.md").split("\n") if line.startswith("| `loom::"))


def define_value(root, path, pattern):
    match = re.search(pattern, read(root, path), re.MULTILINE)
    if not match:
        raise LookupError(f"{path} no longer matches /{pattern}/: update this check")
    return int(match.group(1))


def paths_before(root, sentence):
    """Paths to files or directories of the tree named in a sentence, in order."""
    found = []
    for match in re.finditer(r"`([\w./<>-]+)`|\]\(([\w./-]+)\)", sentence):
        path = (match.group(1) or match.group(2)).rstrip("/")
        if os.path.exists(os.path.join(root, path)) and path not in found:
            found.append(path)
    return found


# Each fact: a name, a pattern over a paragraph (group "n" the stated number, group "q"
# an optional qualifier) and how the tree says the number, given the match and the
# sentence before it. A count of a COUNTED noun is covered when a fact's match spans it.
def _op_rows(root, match, sentence):
    return op_table_rows(root), "rows of the op table in docs/ops.md (one per schema)"


def _vendor_slots(root, match, sentence):
    return (define_value(root, "sdk/include/loom/plugin.h",
                         r"^#define LOOM_MAX_VENDOR_BACKENDS (\d+)"),
            "LOOM_MAX_VENDOR_BACKENDS in sdk/include/loom/plugin.h")


def _train_epochs(root, match, sentence):
    return (define_value(root, "tools/loom/main.cc", r"ABSL_FLAG\(int64_t, epochs, (\d+),"),
            "the default of `loom train --epochs` (tools/loom/main.cc), which "
            "ci/main-job.sh uses")


def _lines(root, match, sentence):
    paths = paths_before(root, sentence)
    if not paths:
        raise LookupError("a line count must name the file or directory it counts "
                          "(in backticks or as a link, in the same sentence)")
    return lines_of(root, paths[-1]), f"lines of {paths[-1]}"


def _kernels(root, match, sentence):
    paths = paths_before(root, sentence)
    if not paths:
        raise LookupError("a kernel count must name the plugin source it counts "
                          "(in backticks or as a link, in the same sentence)")
    return kernels_of(root, paths[-1]), f"kernel registrations (.impl<) in {paths[-1]}"


FACTS = [
    ("op count", re.compile(r"\b" + QUAL.replace("(about", "(?P<q>about", 1)
                            + NUM.replace("(\\d", "(?P<n>\\d", 1)
                            + r"\s+(?:standard\s+)?(?:ops|operators|op schemas|schemas)\b",
                            re.IGNORECASE), _op_rows),
    ("vendor backend slots", re.compile(r"LOOM_MAX_VENDOR_BACKENDS`?[^0-9\n]{0,30}?(?P<q>)(?P<n>\d+)"),
     _vendor_slots),
    ("epochs of the main job", re.compile(r"\bfor (?P<q>)(?P<n>\d+) epochs\b"), _train_epochs),
    ("lines of an example", re.compile(r"\b" + QUAL.replace("(about", "(?P<q>about", 1)
                                       + NUM.replace("(\\d", "(?P<n>\\d", 1) + r"\s+lines\b",
                                       re.IGNORECASE), _lines),
    ("kernels of an example", re.compile(r"\b" + QUAL.replace("(about", "(?P<q>about", 1)
                                         + NUM.replace("(\\d", "(?P<n>\\d", 1)
                                         + r"(?:\s+[\w-]+)?\s+kernels\b", re.IGNORECASE),
     _kernels),
]


def paragraphs(text):
    """(paragraph text, line numbers of its characters' lines) for the README's prose and
    table rows, skipping fenced code blocks and HTML comments."""
    result, current, starts, numbers = [], [], [], []
    offset = 0

    def flush():
        nonlocal current, starts, numbers, offset
        if current:
            result.append((" ".join(current), starts, numbers))
        current, starts, numbers, offset = [], [], [], 0

    in_fence = in_comment = False
    for number_, line in enumerate(text.split("\n"), 1):
        stripped = line.strip()
        if in_fence:
            in_fence = not stripped.startswith("```")
            continue
        if in_comment:
            in_comment = "-->" not in line
            continue
        if stripped.startswith("```"):
            flush()
            in_fence = True
            continue
        if stripped.startswith("<!--"):
            flush()
            in_comment = "-->" not in line
            continue
        if not stripped or stripped.startswith(("#", "|", "- ", "* ")) or re.match(r"\d+\. ", stripped):
            flush()
            if not stripped:
                continue
        starts.append(offset)
        numbers.append(number_)
        current.append(line)
        offset += len(line) + 1
        if stripped.startswith(("#", "|")):
            flush()
    flush()
    return result


def sentence_before(text, position):
    start = max(text.rfind(". ", 0, position), text.rfind("; ", 0, position),
                text.rfind("| ", 0, position))
    return text[start + 1:position]


def check(root, readme_path):
    problems = []
    with open(readme_path, encoding="utf-8") as f:
        text = f.read()
    name = os.path.relpath(readme_path, root) if readme_path.startswith(root) else readme_path
    line_count = text.count("\n")
    if line_count > MAX_LINES:
        problems.append(f"{name}:{line_count}: the README has {line_count} lines, over "
                        f"{MAX_LINES}: move reference material to docs/ or tools/bench/README.md")
    for para, starts, numbers in paragraphs(text):
        def line_at(pos):
            return numbers[bisect.bisect_right(starts, pos) - 1]

        covered = []
        for fact, pattern, value in FACTS:
            for match in pattern.finditer(para):
                covered.append(match.span())
                stated = number(match.group("n"))
                where = f"{name}:{line_at(match.start())}"
                try:
                    actual, what = value(root, match, sentence_before(para, match.start()))
                except (LookupError, OSError) as e:
                    problems.append(f"{where}: '{match.group(0)}' ({fact}): {e}")
                    continue
                if not holds(match.group("q"), stated, actual):
                    problems.append(f"{where}: '{match.group(0)}' ({fact}) is wrong: the tree "
                                    f"has {actual} ({what}); correct the README or drop the count")
        for match in COUNT.finditer(para):
            if not any(s <= match.start(2) < e for s, e in covered):
                problems.append(
                    f"{name}:{line_at(match.start())}: '{match.group(0)}' is a count that "
                    "tests/check_readme_facts.py does not check: drop it, or add a fact there")
    return problems


def main():
    if len(sys.argv) not in (2, 3):
        print("usage: " + __doc__.strip().split("\n")[-2].strip(), file=sys.stderr)
        return 2
    root = os.path.abspath(sys.argv[1])
    readme = os.path.abspath(sys.argv[2]) if len(sys.argv) == 3 else os.path.join(root, "README.md")
    problems = check(root, readme)
    for p in problems:
        print(p)
    if problems:
        print(f"check_readme_facts: {len(problems)} problem(s) in {readme}")
        return 1
    print(f"check_readme_facts: every count in {readme} holds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
