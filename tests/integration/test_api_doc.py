"""docs/api.md documents every route of rungd, and no route rungd lacks.

The routes are the entries of `api_routes[]` in server/api_routes.c, each
`{"METHOD", "/path", handler, ...}`; `/healthz` is answered by the front
(server/http.c) before that table is consulted and is documented as well.
docs/api.md gives every route a heading of exactly this form, method and
path spelled as in the table:

    ### GET /api/v1/experiments/{id}

Every heading (of any level) that starts with an HTTP method is taken for a
route heading and must be of that form; headings inside fenced code blocks
are ignored. Each route's section (up to the next heading of level 1 to 3)
holds a curl example.

Needs only the repository's files. ctest passes `--rungd PATH` to every
integration test; this one accepts and ignores it.
"""

import os
import re
import sys
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HTTP_C = os.path.join(ROOT, "server", "http.c")
ROUTES_C = os.path.join(ROOT, "server", "api_routes.c")
API_MD = os.path.join(ROOT, "docs", "api.md")

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
# Routes answered outside the table, documented like the others.
OUTSIDE_TABLE = {("GET", "/healthz")}

ENTRY = re.compile(r'\{\s*"([A-Z]+)"\s*,\s*"([^"]*)"\s*,\s*([A-Za-z_]\w*)\s*'
                   r'(?:,\s*(?:[A-Za-z_]\w*)\s*)*\}')
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
ROUTE_HEADING = re.compile(r"^(%s)\s+(/\S*)$" % "|".join(METHODS))


def strip_c_comments(text):
    """The C text without its comments (string literals kept as they are)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            out.append(" ")
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text[i] == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def table_routes(c_text):
    """[(method, path)] of the `api_routes[]` initializer, in table order.
    Raises ValueError when the table cannot be read whole."""
    text = strip_c_comments(c_text)
    m = re.search(r"\bapi_routes\s*\[\s*\]\s*=\s*\{", text)
    if m is None:
        raise ValueError("no `api_routes[] = {` initializer in server/api_routes.c")
    depth, i = 1, m.end()
    while i < len(text) and depth > 0:
        if text[i] == '"':
            j = i + 1
            while j < len(text) and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    if depth != 0:
        raise ValueError("the api_routes[] initializer does not end")
    body = text[m.end():i - 1]
    entries = ENTRY.findall(body)
    # Every brace of the body (outside strings) must open an entry this test
    # understands, or a route written another way would go unchecked.
    braces = re.sub(r'"(?:\\.|[^"\\])*"', '""', body).count("{")
    if braces != len(entries):
        raise ValueError("api_routes[] has %d entries, of which %d are of the form "
                         '{"METHOD", "/path", handler, ...}: update this test'
                         % (braces, len(entries)))
    return [(method, path) for method, path, _ in entries]


def doc_headings(md_text):
    """[(level, text, line number)] of the Markdown headings outside code fences."""
    out, fence = [], None
    for no, line in enumerate(md_text.splitlines(), 1):
        stripped = line.lstrip()
        if stripped.startswith("```") or stripped.startswith("~~~"):
            mark = stripped[:3]
            if fence is None:
                fence = mark
            elif fence == mark:
                fence = None
            continue
        if fence is not None:
            continue
        m = HEADING.match(line)
        if m:
            out.append((len(m.group(1)), m.group(2), no))
    return out


def doc_routes(md_text):
    """{(method, path): line number} of the route headings, and the problems
    found with headings that start with a method but break the convention."""
    routes, problems = {}, []
    for level, text, no in doc_headings(md_text):
        first = text.split(" ", 1)[0]
        if first not in METHODS:
            continue
        m = ROUTE_HEADING.match(text)
        if level != 3 or m is None:
            problems.append("docs/api.md:%d: %r: a route heading is '### METHOD /path'"
                            % (no, "#" * level + " " + text))
            continue
        key = (m.group(1), m.group(2))
        if key in routes:
            problems.append("docs/api.md:%d: %s %s is documented twice (first at line %d)"
                            % (no, key[0], key[1], routes[key]))
            continue
        routes[key] = no
    return routes, problems


def route_sections(md_text, routes):
    """{(method, path): the section's text}: from its heading to the next
    heading of level 1 to 3."""
    lines = md_text.splitlines()
    starts = sorted((no, key) for key, no in routes.items())
    ends = sorted(no for level, _, no in doc_headings(md_text) if level <= 3)
    out = {}
    for no, key in starts:
        end = next((e for e in ends if e > no), len(lines) + 1)
        out[key] = "\n".join(lines[no:end - 1])
    return out


def compare(table, documented):
    """Problems (strings) between the table's routes and the documented ones."""
    problems = []
    expected = set(table) | OUTSIDE_TABLE
    for method, path in table:
        if (method, path) not in documented:
            problems.append("%s %s is in server/api_routes.c's api_routes[] but has no "
                            "'### %s %s' heading in docs/api.md" % (method, path, method, path))
    for (method, path), no in sorted(documented.items(), key=lambda kv: kv[1]):
        if (method, path) not in expected:
            problems.append("docs/api.md:%d documents %s %s, which server/api_routes.c's "
                            "api_routes[] lacks" % (no, method, path))
    for method, path in sorted(OUTSIDE_TABLE):
        if (method, path) not in documented:
            problems.append("%s %s (answered outside api_routes[]) has no '### %s %s' heading "
                            "in docs/api.md" % (method, path, method, path))
    return problems


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


class ApiDoc(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.http_c = read(HTTP_C)
        cls.routes_c = read(ROUTES_C)
        cls.api_md = read(API_MD)
        cls.table = table_routes(cls.routes_c)
        cls.documented, cls.heading_problems = doc_routes(cls.api_md)

    def test_the_table_is_read(self):
        # A parser that finds nothing would make every other check pass.
        self.assertGreaterEqual(len(self.table), 10, self.table)
        self.assertIn(("POST", "/api/v1/experiments"), self.table)
        self.assertEqual(len(set(self.table)), len(self.table),
                         "api_routes[] lists a route twice: %r" % self.table)

    def test_route_headings_follow_the_convention(self):
        self.assertEqual(self.heading_problems, [], "\n".join(self.heading_problems))

    def test_every_route_is_documented_and_no_other(self):
        problems = compare(self.table, self.documented)
        self.assertEqual(problems, [], "\n".join(problems))

    def test_healthz_is_answered_outside_the_table_and_documented(self):
        self.assertRegex(strip_c_comments(self.http_c), r'strcmp\(url,\s*"/healthz"\)\s*==\s*0',
                         "server/http.c no longer answers /healthz before the table: "
                         "update OUTSIDE_TABLE in this test")
        self.assertIn(("GET", "/healthz"), self.documented)

    def test_every_route_has_a_curl_example(self):
        sections = route_sections(self.api_md, self.documented)
        missing = ["%s %s" % key for key, text in sorted(sections.items())
                   if not re.search(r"^\s*curl\s", text, re.M)]
        self.assertEqual(missing, [], "route sections without a curl example: %s" % missing)

    def test_the_check_fails_for_a_route_added_without_docs(self):
        # Docs in step with the table, then one route more in the table: the
        # comparison must name it (and only it).
        in_step = {key: 1 for key in set(self.table) | OUTSIDE_TABLE}
        self.assertEqual(compare(self.table, in_step), [])
        extra = '{"PUT", "/api/v1/workers/{id}", api_worker_replace, NULL, false},\n    '
        at = self.routes_c.index('{"GET", "/metrics"')
        grown = table_routes(self.routes_c[:at] + extra + self.routes_c[at:])
        self.assertEqual(len(grown), len(self.table) + 1)
        problems = compare(grown, in_step)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("PUT /api/v1/workers/{id}", problems[0])
        # And a heading of a route the table lacks.
        documented = dict(in_step)
        documented[("PUT", "/api/v1/trials/{id}")] = 1
        self.assertEqual(len(compare(self.table, documented)), 1)

    def test_the_heading_parser(self):
        md = ("# Title\n### GET /a/{id}\ntext\n```\n### POST /in-a-fence\n```\n"
              "## POST /wrong-level\n### GET /a/{id}\n### Objects\n")
        routes, problems = doc_routes(md)
        self.assertEqual(routes, {("GET", "/a/{id}"): 2})
        self.assertEqual(len(problems), 2, problems)


def main():
    args = sys.argv[1:]
    rest = []
    i = 0
    while i < len(args):
        if args[i] == "--rungd" and i + 1 < len(args):
            i += 2  # not needed: this test reads files only
            continue
        if args[i].startswith("--rungd="):
            i += 1
            continue
        rest.append(args[i])
        i += 1
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
