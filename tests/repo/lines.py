#!/usr/bin/env python3
"""lines.py SRC_DIR KNOWN: no long production .c file without its reason.

A production file is a .c file of the programs' folders (circles.py's ROOTS:
the folders the include check reads), less the tests kept there (test_*.c).
One above 700 lines is hard to pick up: it either splits by concern, or the
comment that opens it says why not, in a line that starts "Over 700 lines
because" and goes on to the reason.

KNOWN lists the long files not yet split nor explained, one path a line (#
comments): they are debt, not allowed. Any other long file without a reason
fails, and so does a listed file that is no longer long or now gives one, so
that the list only shrinks. Exit 0 when the files without a reason are
exactly those listed, 1 otherwise."""
import os
import re
import sys

from circles import ROOTS, known

LIMIT = 700
# At the start of a line of the opening comment, with a reason after it.
MARKER = re.compile(r'^\s*\*?\s*Over 700 lines because\s+\S', re.M)


def production(src):
    """Every production .c file under ROOTS, relative to src."""
    found = []
    for root in ROOTS:
        for folder, _, names in os.walk(os.path.join(src, root)):
            found += [os.path.relpath(os.path.join(folder, n), src) for n in names
                      if n.endswith(".c") and not n.startswith("test_")]
    return sorted(found)


def opening_comment(text):
    """The comment that opens the file, or "" when it opens with none."""
    text = text.lstrip()
    if not text.startswith("/*"):
        return ""
    end = text.find("*/")
    return text if end < 0 else text[:end]


def unexplained(src):
    """{path: lines} of the long production files whose opening comment gives no reason."""
    out = {}
    for path in production(src):
        with open(os.path.join(src, path), encoding="utf-8") as fh:
            text = fh.read()
        n = text.count("\n")
        if n > LIMIT and not MARKER.search(opening_comment(text)):
            out[path] = n
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    found = unexplained(sys.argv[1])
    listed = known(sys.argv[2])
    for path in sorted(set(found) - listed):
        print(f"{path}: {found[path]} lines, and its opening comment gives no line "
              f"'Over 700 lines because ...': split it by concern or give the reason "
              f"(docs/hacking.md, \"Conventions\")")
    for path in sorted(listed - set(found)):
        print(f"{path}: no longer long or now explained, remove it from the list")
    if set(found) != listed:
        return 1
    print(f"lines.py: no production file over {LIMIT} lines without its reason "
          f"beside the {len(listed)} listed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
