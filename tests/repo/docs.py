#!/usr/bin/env python3
"""docs.py SRC_DIR: the docs stay reference pages a reader can follow.

Three rules, checked over docs/*.md and the top README.md:
- no page of docs/ is above LIMIT bytes, except benchmarks-history.md, which is
  a log by nature (a longer page is split by reader or by concern, see
  docs/hacking.md, "Docs");
- every relative link resolves: the file exists, and an #anchor names a heading
  of the page it points into, spelled as GitHub spells heading anchors;
- docs/README.md, the index by reader, links every other page of docs/.
Links in code blocks and inline code are text, not links, and are skipped.
Exit 0 when both hold, 1 naming each page or link that breaks them."""
import os
import re
import sys

LIMIT = 25 * 1024
EXEMPT = {"benchmarks-history.md"}
FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"`+[^`]*`+")
LINK = re.compile(r"\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
HTML_ANCHOR = re.compile(r"<a\s+(?:name|id)=\"([^\"]+)\"")


def prose(path):
    """(line number, text) of each line outside code blocks."""
    fenced = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                fenced = not fenced
                continue
            if not fenced:
                yield number, line.rstrip("\n")


def slug(heading):
    """GitHub's anchor for a heading: lower case, markup and punctuation
    dropped, each space a hyphen."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text).lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(path, cache={}):
    """Every anchor of one page, duplicates numbered as GitHub numbers them."""
    if path not in cache:
        seen, found = {}, set()
        for _, line in prose(path):
            found.update(HTML_ANCHOR.findall(line))
            match = HEADING.match(line)
            if not match:
                continue
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else "%s-%d" % (base, count))
        cache[path] = found
    return cache[path]


def broken_links(page, name):
    """Each relative link of one page (called name in messages) that points
    nowhere, as a message."""
    for number, line in prose(page):
        for target in LINK.findall(INLINE_CODE.sub("", line)):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue
            file, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(page), file)) if file else page
            where = "%s:%d: %s" % (name, number, target)
            if not os.path.exists(dest):
                yield where + " (no such file)"
            elif anchor and dest.endswith(".md") and anchor.lower() not in anchors(dest):
                yield where + " (no heading #%s there)" % anchor


def main(src):
    docs = os.path.join(src, "docs")
    pages = sorted(os.path.join(docs, n) for n in os.listdir(docs) if n.endswith(".md"))
    problems = []
    for page in pages:
        size = os.path.getsize(page)
        if os.path.basename(page) not in EXEMPT and size > LIMIT:
            problems.append("%s: %d bytes, above %d: split it by reader or concern"
                            % (os.path.relpath(page, src), size, LIMIT))
    index = os.path.join(docs, "README.md")
    linked = {os.path.normpath(os.path.join(docs, t.partition("#")[0]))
              for _, line in prose(index) for t in LINK.findall(line)}
    problems.extend("docs/README.md: no link to %s" % os.path.relpath(p, src)
                    for p in pages if p != index and p not in linked)
    for page in pages + [os.path.join(src, "README.md")]:
        problems.extend(broken_links(page, os.path.relpath(page, src)))
    for problem in problems:
        print("docs.py: " + problem, file=sys.stderr)
    if problems:
        return 1
    print("docs.py: %d pages, each within %d bytes and indexed, every link resolves"
          % (len(pages), LIMIT))
    return 0


if __name__ == "__main__":
    sys.exit(main(os.path.abspath(sys.argv[1])))
