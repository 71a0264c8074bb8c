"""web/index.html's `<link rel="modulepreload">` list names every module
under web/js/ and nothing else (web/README.md: "The modulepreload list
names every module, so none is discovered late"): a module added without
its line would be fetched only when its importer has been parsed, one round
trip later; a line left for a removed module is a 404 on every page load.
Every relative import between the modules must name a file that exists.
"""

from __future__ import annotations

import os
import re
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
WEB = os.path.join(os.path.dirname(os.path.dirname(HERE)), "web")

# <link rel="modulepreload" href="/js/...">, attributes in either order.
_LINK_RE = re.compile(r"<link\b[^>]*>", re.I)
_REL_RE = re.compile(r"""\brel\s*=\s*["']?modulepreload["']?""", re.I)
_HREF_RE = re.compile(r"""\bhref\s*=\s*["']([^"']+)["']""", re.I)
# import ... from './x.js'; import './x.js'; import('./x.js'); export ... from
_IMPORT_RE = re.compile(r"""(?:\bfrom\s*|\bimport\s*\(?\s*)["'](\.{1,2}/[^"']+)["']""")


def preloaded(html: str) -> list[str]:
    """The hrefs of the modulepreload links, in order."""
    out = []
    for tag in _LINK_RE.findall(html):
        if _REL_RE.search(tag):
            href = _HREF_RE.search(tag)
            out.append(href.group(1) if href else "")
    return out


def modules() -> set[str]:
    """Every .js file under web/js/, as the URL rungd serves it at."""
    out = set()
    for root, _, names in os.walk(os.path.join(WEB, "js")):
        for name in names:
            if name.endswith(".js"):
                rel = os.path.relpath(os.path.join(root, name), WEB).replace(os.sep, "/")
                out.add("/" + rel)
    return out


class ModulePreloadTest(unittest.TestCase):
    def test_preload_list_is_the_modules_under_web_js(self) -> None:
        with open(os.path.join(WEB, "index.html"), encoding="utf-8") as f:
            links = preloaded(f.read())
        ours = [href for href in links if href.startswith("/js/")]
        self.assertEqual(len(ours), len(set(ours)), "a module preloaded twice")
        on_disk = modules()
        self.assertGreaterEqual(len(on_disk), 20, on_disk)
        self.assertEqual(sorted(set(ours) - on_disk), [], "preloaded, but no such module")
        self.assertEqual(sorted(on_disk - set(ours)), [], "modules without a preload line")
        # The rest is uPlot, which the import map names (node_modules).
        self.assertEqual([h for h in links if not h.startswith("/js/")],
                         ["/node_modules/uplot/dist/uPlot.esm.js"])

    def test_relative_imports_name_existing_modules(self) -> None:
        on_disk = modules()
        for path in sorted(on_disk):
            with open(os.path.join(WEB, path[1:]), encoding="utf-8") as f:
                text = f.read()
            for spec in _IMPORT_RE.findall(text):
                target = os.path.normpath(os.path.join(os.path.dirname(path), spec))
                with self.subTest(module=path, imports=spec):
                    self.assertIn(target.replace(os.sep, "/"), on_disk)

    def test_the_parser_sees_a_missing_or_extra_line(self) -> None:
        html = ('<link rel="modulepreload" href="/js/a.js">\n'
                "<link href='/js/b.js' rel=modulepreload>\n"
                '<link rel="stylesheet" href="/style.css">\n')
        self.assertEqual(preloaded(html), ["/js/a.js", "/js/b.js"])


if __name__ == "__main__":
    unittest.main()
