#!/usr/bin/env python3
"""The code the README and docs/*.md show is code the suite builds or runs.

Every ```cpp block of README.md and docs/*.md, and every ```python block of docs/*.md, names its
source in the text after it (up to the next block): a link or path to a file of the repository
(examples/X.cpp, python/examples/X.py, ...). Each non-empty line of the block, stripped of its
indentation, must appear in that file, in the same order; those files are built, and where they
can run, run by the suite (examples/, python/). A block may instead name the test that runs it
from the document itself: a file under tests/ that reads the document (it names the document's
file). A Python block that names a module of the package (python/relay/...) is a synopsis of
its signatures: each `x.NAME(PARAMETERS)` in it (`...` ending an abbreviated list) must be how
that module defines NAME (a class's name stands for its __init__). The README's Python block is python/examples/readme.py verbatim, which
tests/python/readme.cmake checks and runs.

    doc_snippets.py REPOSITORY_ROOT
"""
import ast
import pathlib
import re
import sys

LANGUAGES = ("cpp", "python")
SOURCE = re.compile(r"\(?((?:examples|python|tests|tools)/[\w/.-]+\.(?:cpp|py))\)?")
CALL = re.compile(r"^(?:\w+\s*=\s*)?[\w.]*?(\w+)\((.*)\)$", re.S)


def blocks(text):
    """Yields (language, code, the text after it up to the next block)."""
    parts = re.split(r"^```(\w*)\n(.*?)^```\n", text, flags=re.M | re.S)
    for i in range(1, len(parts), 3):
        yield parts[i], parts[i + 1], parts[i + 2]


def parameters(text):
    """A parameter list as ast writes it back (quotes, spacing), without self or cls."""
    args = ast.parse(f"def f({text}): pass").body[0].args
    names = [a.arg for a in args.posonlyargs + args.args]
    if names and names[0] in ("self", "cls"):
        args.args = args.args[1:]
    return ast.unparse(args)


def check_synopsis(doc, source, code):
    """None where every call of the block is how `source` defines it, else why not."""
    defined = {}
    for node in ast.walk(ast.parse(source.read_text())):
        if isinstance(node, ast.ClassDef):
            for f in node.body:
                if isinstance(f, ast.FunctionDef):
                    name = node.name if f.name == "__init__" else f.name
                    defined.setdefault(name, parameters(ast.unparse(f.args)))
    for statement in re.split(r"\n(?=\S)", code.strip()):
        m = CALL.match(statement.strip())
        if not m:
            return f"{doc}: not a call in a synopsis of {source.name}: {statement}"
        name, given = m.group(1), " ".join(m.group(2).split())
        abbreviated = given.endswith("...")
        given = parameters(given.removesuffix("...").rstrip(", "))
        have = defined.get(name)
        if have is None or not (have.startswith(given) if abbreviated else have == given):
            return f"{doc}: {source.name} defines {name}({have}), not ({given})"
    return None


def check_block(root, doc, language, code, after):
    """None where the block holds, else why not."""
    m = SOURCE.search(after)
    if not m:
        return f"{doc}: a {language} block names no source after it:\n{code}"
    source = root / m.group(1)
    if not source.exists():
        return f"{doc}: {m.group(1)} does not exist"
    if m.group(1).startswith("python/relay/"):
        return check_synopsis(doc, source, code)
    text = source.read_text()
    if m.group(1).startswith("tests/") and doc.name in text:
        return None  # that test runs the block from the document
    lines = [line.strip() for line in text.splitlines()]
    at = 0
    for want in (line.strip() for line in code.splitlines()):
        if not want:
            continue
        try:
            at = lines.index(want, at) + 1
        except ValueError:
            return f"{doc}: {source.name} lacks, in order: {want}"
    return None


def main():
    root = pathlib.Path(sys.argv[1])
    docs = [root / "README.md"] + sorted((root / "docs").glob("*.md"))
    failures, checked = [], 0
    for doc in docs:
        languages = ("cpp",) if doc.name == "README.md" else LANGUAGES
        for language, code, after in blocks(doc.read_text()):
            if language not in languages:
                continue
            checked += 1
            why = check_block(root, doc.relative_to(root), language, code, after)
            if why:
                failures.append(why)
    for f in failures:
        print(f, file=sys.stderr)
    if checked == 0:
        print("no cpp or python block in README.md or docs/", file=sys.stderr)
        return 1
    if failures:
        return 1
    print(f"{checked} blocks of README.md and docs/ match their sources")
    return 0


if __name__ == "__main__":
    sys.exit(main())
