"""Check a built site: every internal link and anchor resolves, nothing loads from elsewhere.

``python -m helpers.authoring.linkcheck [build/site]`` prints each problem and exits 1 when
there is one. Links to other sites (``<a href="https://...">``) are fine: a reader follows them
on purpose. What a page *loads* (scripts, style sheets, images, fonts, frames, and ``url()`` in
the site's CSS) must be a file of the site, so the site works with no network.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

# Attributes whose URL the browser fetches by itself, per tag.
LOADED = {
    "script": ("src",),
    "img": ("src", "srcset"),
    "source": ("src", "srcset"),
    "iframe": ("src",),
    "embed": ("src",),
    "object": ("data",),
    "video": ("src", "poster"),
    "audio": ("src",),
    "track": ("src",),
    "input": ("src",),
}
# <link rel=...> values that only name a page (not fetched when the page loads).
NAVIGATION_RELS = {"next", "prev", "index", "search", "canonical", "author", "license", "help"}
CSS_URL_RE = re.compile(r"""url\(\s*['"]?([^'")]+)['"]?\s*\)""")
CSS_IMPORT_RE = re.compile(r"""@import\s+['"]([^'"]+)['"]""")


@dataclass
class Page:
    """What one HTML file holds: its anchors, the links it follows, the URLs it loads."""

    ids: set[str] = field(default_factory=set)
    links: list[str] = field(default_factory=list)
    loads: list[str] = field(default_factory=list)


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = Page()
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        for name in ("id", "name") if tag == "a" else ("id",):
            if values.get(name):
                self.page.ids.add(values[name])
        if tag == "a" and "href" in values:
            self.page.links.append(values["href"])
        elif tag == "link" and "href" in values:
            rels = set(values.get("rel", "").lower().split())
            target = self.page.links if rels and rels <= NAVIGATION_RELS else self.page.loads
            target.append(values["href"])
        for name in LOADED.get(tag, ()):
            if values.get(name):
                urls = values[name].split(",") if name == "srcset" else [values[name]]
                self.page.loads += [u.strip().split(" ")[0] for u in urls]
        if values.get("style"):
            self.page.loads += CSS_URL_RE.findall(values["style"])
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.page.loads += CSS_URL_RE.findall(data) + CSS_IMPORT_RE.findall(data)


def parse(path: Path) -> Page:
    """Return the anchors, links and loaded URLs of one HTML file."""
    parser = _Parser()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    return parser.page


def is_remote(url: str) -> bool:
    """A URL on another machine: with a scheme other than file/data, or protocol-relative."""
    scheme = urlsplit(url).scheme.lower()
    return url.startswith("//") or scheme not in ("", "file", "data", "blob", "javascript", "about")


def html_pages(site: Path) -> list[Path]:
    """Return the site's pages: its HTML files but the theme's template leftovers in _static."""
    return sorted(p for p in site.rglob("*.html") if "_static" not in p.relative_to(site).parts)


def check(site: Path) -> list[str]:
    """Return every problem of the built site in ``site``, as ``"page: problem"`` lines."""
    site = site.resolve()
    pages = {p: parse(p) for p in html_pages(site)}
    problems = []

    def target_of(page: Path, url: str) -> tuple[Path, str] | None:
        parts = urlsplit(url)
        if parts.scheme or url.startswith("//"):
            return None
        file = (page.parent / unquote(parts.path)).resolve() if parts.path else page
        return file, unquote(parts.fragment)

    for page, found in pages.items():
        where = page.relative_to(site).as_posix()
        for url in found.loads:
            if url.startswith("data:"):
                continue
            if is_remote(url):
                problems.append(f"{where}: loads a remote resource: {url}")
            elif (resolved := target_of(page, url)) and not resolved[0].is_file():
                problems.append(f"{where}: loads a missing file: {url}")
        for url in found.links:
            resolved = target_of(page, url)
            if resolved is None:
                continue
            file, fragment = resolved
            if site not in file.parents and file != site:
                problems.append(f"{where}: links outside the site: {url}")
            elif not file.exists():
                problems.append(f"{where}: broken link: {url}")
            elif fragment and file.suffix == ".html" and fragment not in pages[file].ids:
                problems.append(f"{where}: no anchor #{fragment} in {file.name}: {url}")
    for css in sorted(site.rglob("*.css")):
        where = css.relative_to(site).as_posix()
        text = css.read_text(encoding="utf-8", errors="replace")
        for url in CSS_URL_RE.findall(text) + CSS_IMPORT_RE.findall(text):
            if url.startswith(("data:", "#")):
                continue
            if is_remote(url):
                problems.append(f"{where}: loads a remote resource: {url}")
            elif not (css.parent / unquote(urlsplit(url).path)).is_file():
                problems.append(f"{where}: loads a missing file: {url}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.authoring.linkcheck")
    parser.add_argument("site", nargs="?", type=Path, default=Path("build/site"))
    args = parser.parse_args(argv)
    if not (args.site / "index.html").is_file():
        print(f"linkcheck: no built site in {args.site} (make site)", file=sys.stderr)
        return 2
    problems = check(args.site)
    for line in problems:
        print(line)
    count = len(html_pages(args.site))
    print(f"linkcheck: {count} pages, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
