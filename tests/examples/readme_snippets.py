#!/usr/bin/env python3
"""The README's C++ quick starts are the example programs' own lines.

Every ```cpp block of README.md names the example it comes from (a link to examples/X.cpp in the
paragraph after it); each non-empty line of the block, stripped of its indentation, must appear
in that file, in the same order. The examples are built and run by the suite, so a quick start
that no longer compiles or no longer does what it says fails here first.

    readme_snippets.py REPOSITORY_ROOT
"""
import pathlib
import re
import sys


def blocks(text):
    """Yields (code, the text after it up to the next block)."""
    parts = re.split(r"^```cpp\n(.*?)^```\n", text, flags=re.M | re.S)
    for i in range(1, len(parts), 2):
        yield parts[i], parts[i + 1] if i + 1 < len(parts) else ""


def main():
    root = pathlib.Path(sys.argv[1])
    readme = (root / "README.md").read_text()
    failures, checked = [], 0
    for code, after in blocks(readme):
        m = re.search(r"\(examples/([\w]+\.cpp)\)", after)
        if not m:
            failures.append("a cpp block names no example after it:\n" + code)
            continue
        source = root / "examples" / m.group(1)
        if not source.exists():
            failures.append(f"{source} does not exist")
            continue
        lines = [l.strip() for l in source.read_text().splitlines()]
        at = 0
        for want in (l.strip() for l in code.splitlines()):
            if not want:
                continue
            try:
                at = lines.index(want, at) + 1
            except ValueError:
                failures.append(f"{source.name} lacks, in order: {want}")
                break
        checked += 1
    for f in failures:
        print(f, file=sys.stderr)
    if checked == 0:
        print("no cpp block in README.md", file=sys.stderr)
        return 1
    if failures:
        return 1
    print(f"{checked} README blocks match their examples")
    return 0


if __name__ == "__main__":
    sys.exit(main())
