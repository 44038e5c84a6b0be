#!/usr/bin/env python3
"""Checks the links of README.md and of the user guide (docs/src, an mdBook).

* Every relative link (markdown `[text](target)`, `![alt](target)`, reference definitions
  `[label]: target`, and HTML `href=`/`src=`) in README.md and docs/src/**/*.md must point to a
  file or folder that exists.
* A `#anchor` on a link to a markdown file (or on its own, to the same file) must name a heading
  of that file, by the slug rules of both GitHub and mdBook (lowercase; letters, digits, `_` and
  `-` kept; whitespace turned into `-`; everything else dropped; `-1`, `-2`, ... for repeats),
  or an explicit `{#id}` / HTML `id=` / `name=` in it.
* A link from a book page must stay inside docs/src: mdBook does not copy other files.
* Every page in docs/src is listed in docs/src/SUMMARY.md, and every SUMMARY entry exists.

Links with a scheme (http:, https:, mailto:, ...) are not checked. Links inside code (fenced
blocks and `inline code`) and HTML comments are not links.

Usage: python3 docs/check_links.py [--root DIR] [--allow-missing PATH ...]

`--allow-missing PATH` (repeatable; relative to the root) accepts a link to PATH when the file
does not exist yet, e.g. a screenshot still to be made. Without it, a missing file fails.
Exits 1 naming each broken link, 0 when all are good.
"""

from __future__ import annotations

import argparse
import re
import sys
import unicodedata
from pathlib import Path
from urllib.parse import unquote

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
# [text](target "title"), text may hold one level of brackets; target may be <...>.
INLINE = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)"
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)"
)
REFDEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
HTML_ATTR = re.compile(r"""<(?:a|img|source)\b[^>]*?\b(?:href|src)\s*=\s*["']([^"']*)["']""", re.I)
HTML_ID = re.compile(r"""<[a-z][^>]*?\b(?:id|name)\s*=\s*["']([^"']+)["']""", re.I)
EXPLICIT_ID = re.compile(r"\s*\{#([^}\s]+)[^}]*\}\s*$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
CODE_SPAN = re.compile(r"(`+)(.+?)(?<!`)\1(?!`)")
COMMENT = re.compile(r"<!--.*?-->", re.S)


def blank(m: re.Match) -> str:
    """The match replaced by spaces, newlines kept (so line numbers stay right)."""
    return re.sub(r"[^\n]", " ", m.group(0))


def prose_lines(text: str, keep_code: bool = False) -> list[tuple[int, str]]:
    """(line number, text) of each line outside fenced code, with HTML comments blanked, and
    inline code too unless `keep_code` (a heading's text keeps its code)."""
    text = COMMENT.sub(blank, text)
    out = []
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            continue
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)):].strip():
                fence = None
            continue
        out.append((n, line if keep_code else CODE_SPAN.sub(blank, line)))
    return out


def heading_text(raw: str) -> str:
    """A heading's text as rendered: links and images to their text, emphasis and code marks
    and HTML tags dropped."""
    t = re.sub(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)", r"\1", raw)
    t = re.sub(r"<[^>]+>", "", t)
    t = t.replace("`", "")
    t = re.sub(r"(\*{1,3}|_{1,3})(\S(?:.*?\S)?)\1", r"\2", t)
    t = t.replace("\\", "")
    return t.strip()


def slug_github(text: str) -> str:
    out = []
    for ch in text.lower():
        cat = unicodedata.category(ch)
        if ch in "-_" or cat[0] in "LN" or cat == "Mn":
            out.append(ch)
        elif ch == " ":
            out.append("-")
    return "".join(out)


def slug_mdbook(text: str) -> str:
    out = []
    for ch in text:
        if ch.isalnum() or ch in "_-":
            out.append(ch.lower() if ch.isascii() else ch)
        elif ch.isspace():
            out.append("-")
    return "".join(out)


def numbered(slugs: list[str]) -> set[str]:
    """Slugs with GitHub's and mdBook's suffixes for repeats: a, a-1, a-2."""
    seen: dict[str, int] = {}
    out = set()
    for s in slugs:
        if s in seen:
            seen[s] += 1
            out.add(f"{s}-{seen[s]}")
        else:
            seen[s] = 0
            out.add(s)
    return out


class Anchors:
    """The anchors of each markdown file, under each rule, read once."""

    def __init__(self) -> None:
        self.cache: dict[Path, tuple[set[str], set[str]]] = {}

    def of(self, path: Path) -> tuple[set[str], set[str]]:
        if path not in self.cache:
            text = path.read_text(encoding="utf-8")
            gh, mb, explicit = [], [], set()
            lines = prose_lines(text, keep_code=True)
            prev: tuple[int, str] | None = None
            for n, line in lines:
                m = ATX.match(line)
                raw = None
                if m:
                    raw = m.group(2)
                elif SETEXT.match(line) and prev is not None and prev[0] == n - 1 and prev[1].strip() and not ATX.match(prev[1]):
                    raw = prev[1].strip()
                if raw is not None:
                    e = EXPLICIT_ID.search(raw)
                    if e:
                        explicit.add(e.group(1))
                        raw = raw[: e.start()]
                    t = heading_text(raw)
                    gh.append(slug_github(t))
                    mb.append(slug_mdbook(t))
                for h in HTML_ID.findall(line):
                    explicit.add(h)
                prev = (n, line)
            self.cache[path] = (numbered(gh) | explicit, numbered(mb) | explicit)
        return self.cache[path]


def links(path: Path) -> list[tuple[int, str]]:
    """(line, target) of each link in a markdown file."""
    out = []
    for n, line in prose_lines(path.read_text(encoding="utf-8")):
        for m in INLINE.finditer(line):
            out.append((n, m.group(1)))
        m = REFDEF.match(line)
        if m:
            out.append((n, m.group(1)))
        for m in HTML_ATTR.finditer(line):
            out.append((n, m.group(1)))
    return [(n, t[1:-1] if t.startswith("<") and t.endswith(">") else t) for n, t in out]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                    help="the repository root (default: the folder above docs/)")
    ap.add_argument("--allow-missing", action="append", default=[], metavar="PATH",
                    help="accept links to PATH (relative to the root) while it does not exist")
    args = ap.parse_args()
    root = args.root.resolve()
    src = root / "docs" / "src"
    allowed = {(root / p).resolve() for p in args.allow_missing}

    files = [root / "README.md"] + sorted(src.rglob("*.md"))
    anchors = Anchors()
    errors: list[str] = []
    allowed_missing_seen: set[Path] = set()
    count = 0

    def rel(p: Path) -> str:
        try:
            return str(p.relative_to(root))
        except ValueError:
            return str(p)

    for f in files:
        if not f.exists():
            errors.append(f"{rel(f)}: file not found")
            continue
        in_book = src in f.parents
        for n, target in links(f):
            where = f"{rel(f)}:{n}"
            if not target:
                if f != src / "SUMMARY.md":  # a draft chapter there is reported below
                    errors.append(f"{where}: empty link target")
                continue
            if SCHEME.match(target) or target.startswith("//"):
                continue
            count += 1
            path_part, _, anchor = target.partition("#")
            path_part = unquote(path_part.split("?", 1)[0])
            if path_part.startswith("/"):
                dest = (root / path_part.lstrip("/")).resolve()
            elif path_part:
                dest = (f.parent / path_part).resolve()
            else:
                dest = f.resolve()
            if in_book and src.resolve() not in dest.parents and dest != src.resolve():
                errors.append(f"{where}: {target}: leaves docs/src (mdBook does not copy {rel(dest)}); name the file in `code` instead")
                continue
            if not dest.exists():
                if dest in allowed:
                    allowed_missing_seen.add(dest)
                    continue
                errors.append(f"{where}: {target}: {rel(dest)} does not exist")
                continue
            if anchor:
                if dest.is_dir() or dest.suffix.lower() != ".md":
                    errors.append(f"{where}: {target}: an anchor on {rel(dest)}, which is not a markdown file")
                    continue
                gh, mb = anchors.of(dest)
                anchor = unquote(anchor)
                missing = [rule for rule, s in (("GitHub", gh), ("mdBook", mb)) if anchor not in s]
                if missing:
                    errors.append(f"{where}: {target}: no heading `#{anchor}` in {rel(dest)} (by {' and '.join(missing)} slug rules)")

    # SUMMARY.md: every entry exists, every page is listed.
    summary = src / "SUMMARY.md"
    if not summary.exists():
        errors.append(f"{rel(summary)}: not found")
    else:
        listed: set[Path] = set()
        for n, target in links(summary):
            if SCHEME.match(target):
                continue
            if not target:
                errors.append(f"{rel(summary)}:{n}: a draft chapter (empty link): every entry must be a page")
                continue
            p = (src / unquote(target.partition("#")[0])).resolve()
            listed.add(p)
            # A missing target is already reported as a broken link above.
            if p.exists() and not p.is_file():
                errors.append(f"{rel(summary)}:{n}: {target}: not a page")
        for page in sorted(src.rglob("*.md")):
            if page.resolve() == summary.resolve():
                continue
            if page.resolve() not in listed:
                errors.append(f"{rel(page)}: not listed in {rel(summary)}")

    for e in errors:
        print(e, file=sys.stderr)
    for p in sorted(allowed_missing_seen):
        print(f"note: {rel(p)} does not exist yet (allowed by --allow-missing)", file=sys.stderr)
    if errors:
        print(f"check_links: {len(errors)} broken link(s) or page(s)", file=sys.stderr)
        return 1
    print(f"check_links: {count} relative links in {len(files)} files are good")
    return 0


if __name__ == "__main__":
    sys.exit(main())
