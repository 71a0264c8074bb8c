"""docs/openapi.yaml describes the REST API that rungd serves and docs/api.md
documents, and stays in step with both.

- Routes: every entry of `api_routes[]` in server/api_routes.c (read as
  tests/integration/test_api_doc.py reads it), and `GET /healthz`, is an
  operation of docs/openapi.yaml with the same method and path, and there
  is no other (a `head` operation only where the table has the GET). Each
  operation's `x-rung-access` is the entry's access rule, named as
  docs/api.md's "Roles per route" names it, and its `security` follows
  from it (none for `public`).
- Objects: the fields of docs/api.md's tables of the experiment object, the
  trial object, the worker object and the spec's top-level fields are the
  properties of the schemas Experiment (less the spec's), Trial, Worker and
  ExperimentSpec, no more and no fewer; likewise the search_space domain
  types and each domain's keys, the searcher's type and fields, the
  scheduler types and the error codes (also those of common/error.h).
- Structure: the document is OpenAPI 3.1, every $ref resolves, every
  operation has responses and a unique operationId, every `{param}` of a
  path is declared as a required path parameter and no other, and every
  schema uses only the JSON Schema keywords the validator below knows.
- Live: one real rungd (tests/integration/rungd_harness.py) is driven
  through an experiment's life (submit, a worker's lease, report, heartbeat
  and finish, lists, curves, events, errors, users, tokens and a session);
  every reply is checked against the schema that its operation and status
  give in docs/openapi.yaml, with a small validator of the JSON Schema
  subset the document uses. Each spec of examples/*.json is an
  ExperimentSpec, and rungd's reply to it an Experiment.

Where a change adds a field to one of those objects or a new domain type,
searcher field or route, this test names what is missing where.

Reads docs/openapi.yaml with python3-yaml (scripts/deps.sh --tests).
"""

import json
import os
import re
import sys

from rungd_harness import RungdTestCase, main, spec
from test_api_doc import OUTSIDE_TABLE, strip_c_comments, table_routes
from test_authz import ACCESS_NAMES

try:
    import yaml
except ImportError:  # a clear failure, not a skip: the check must run
    yaml = None

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OPENAPI = os.path.join(ROOT, "docs", "openapi.yaml")
API_MD = os.path.join(ROOT, "docs", "api.md")
ROUTES_C = os.path.join(ROOT, "server", "api_routes.c")
ERROR_H = os.path.join(ROOT, "common", "error.h")

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def load_openapi(text=None):
    if yaml is None:
        raise AssertionError("python3-yaml is missing: run `bash scripts/deps.sh --tests`")
    return yaml.safe_load(read(OPENAPI) if text is None else text)


# ---- the route table --------------------------------------------------------


def table_access(c_text):
    """[(method, path, rule)] of api_routes[], rule as docs/api.md names it."""
    text = strip_c_comments(c_text)
    body = text[text.index("api_routes[] = {"):]
    body = body[:body.index("};")]
    entries = re.findall(r'\{\s*"([A-Z]+)"\s*,\s*"([^"]*)"[^{}]*?\b(ACCESS_[A-Z_]+)\s*\}', body)
    out = [(m, p, ACCESS_NAMES[a]) for m, p, a in entries]
    if [(m, p) for m, p, _ in out] != table_routes(c_text):
        raise ValueError("api_routes[]: an entry without an ACCESS_ rule as its last member")
    return out


def operations(doc):
    """{(METHOD, path): operation} of the document."""
    out = {}
    for path, item in (doc.get("paths") or {}).items():
        for method in METHODS:
            if method in item:
                out[(method.upper(), path)] = item[method]
    return out


def compare_routes(table, doc):
    """Problems between the route table [(method, path, rule)] and the
    document's operations."""
    problems = []
    ops = operations(doc)
    expected = {(m, p): r for m, p, r in table}
    for key in OUTSIDE_TABLE:
        expected[key] = "public"
    for (method, path), rule in sorted(expected.items()):
        op = ops.get((method, path))
        if op is None:
            problems.append("%s %s is a route (server/api_routes.c) but no operation of "
                            "docs/openapi.yaml" % (method, path))
            continue
        if op.get("x-rung-access") != rule:
            problems.append("%s %s: x-rung-access is %r, the route table's rule is %r"
                            % (method, path, op.get("x-rung-access"), rule))
    for (method, path) in sorted(ops):
        if (method, path) in expected:
            continue
        if method == "HEAD" and ("GET", path) in expected:
            continue  # HEAD works wherever GET does (docs/api.md, "Requests and replies")
        problems.append("docs/openapi.yaml has %s %s, which server/api_routes.c's "
                        "api_routes[] lacks" % (method, path))
    return problems


def security_problems(doc):
    """Each operation's security against its access rule."""
    problems = []
    schemes = set(((doc.get("components") or {}).get("securitySchemes") or {}))
    for (method, path), op in sorted(operations(doc).items()):
        name = "%s %s" % (method, path)
        if "security" not in op:
            problems.append("%s: no security" % name)
            continue
        sec = op["security"]
        for req in sec:
            for scheme in req:
                if scheme not in schemes:
                    problems.append("%s: security scheme %r is not in components" % (name, scheme))
        if op.get("x-rung-access") == "public":
            if sec != []:
                problems.append("%s: a public route has security: []" % name)
            continue
        if not sec:
            problems.append("%s: rule %s needs a token, but security is empty"
                            % (name, op.get("x-rung-access")))
        if {} in sec:
            problems.append("%s: an empty requirement makes the token optional" % name)
        if path != "/api/v1/session" and {"bearerToken": []} not in sec:
            problems.append("%s: no bearerToken requirement" % name)
        for req in sec:
            if "sessionCookie" in req and method not in ("GET", "HEAD") \
                    and "csrfToken" not in req:
                problems.append("%s: a change with the session cookie needs csrfToken "
                                "(docs/api.md, \"Sessions\")" % name)
    return problems


# ---- docs/api.md's tables ---------------------------------------------------


def section(md, heading):
    """The text after `heading` (a whole line) up to the next heading of that
    level or above."""
    lines = md.splitlines()
    level = len(heading) - len(heading.lstrip("#"))
    start = lines.index(heading)
    out = []
    for line in lines[start + 1:]:
        m = re.match(r"^(#+)\s", line)
        if m and len(m.group(1)) <= level:
            break
        out.append(line)
    return "\n".join(out)


def first_table(text):
    """Rows (lists of cells) of the first Markdown table in text, without
    its header and separator rows."""
    rows, seen = [], False
    for line in text.splitlines():
        if line.startswith("|"):
            seen = True
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            rows.append(cells)
        elif seen:
            break
    if len(rows) < 3:
        raise ValueError("no table found")
    return rows[2:]


def names_in(cell):
    return re.findall(r"`([^`]+)`", cell)


def doc_fields(md, heading):
    """The field names of the first table under heading."""
    out = []
    for row in first_table(section(md, heading)):
        out.extend(names_in(row[0]))
    return out


# ---- the schemas ------------------------------------------------------------


def resolve(doc, ref):
    if not ref.startswith("#/"):
        raise KeyError("not a local $ref: %s" % ref)
    node = doc
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        node = node[part]
    return node


def all_properties(doc, schema):
    """Property names of a schema, through $ref and allOf."""
    if "$ref" in schema:
        return all_properties(doc, resolve(doc, schema["$ref"]))
    names = set(schema.get("properties", {}))
    for sub in schema.get("allOf", []):
        names |= all_properties(doc, sub)
    return names


# ---- a validator of the JSON Schema subset the document uses --------------

# Keywords the validator checks, and annotations it may ignore. The
# structure test refuses any other keyword in a schema, so that nothing the
# document says goes unchecked here.
CHECKED = {"$ref", "type", "enum", "const", "properties", "required", "additionalProperties",
           "unevaluatedProperties", "propertyNames", "items", "prefixItems", "minItems",
           "maxItems", "minProperties", "maxProperties", "minimum", "maximum",
           "exclusiveMinimum", "pattern", "minLength", "maxLength", "format", "oneOf", "anyOf",
           "allOf", "not"}
ANNOTATIONS = {"description", "default", "title", "discriminator", "example", "examples"}
FORMATS = {
    "date-time": re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$"),
    "binary": None,
}
SUBSCHEMA_MAPS = ("properties",)
SUBSCHEMA_ONE = ("additionalProperties", "items", "not", "propertyNames")
SUBSCHEMA_LISTS = ("oneOf", "anyOf", "allOf", "prefixItems")


def is_type(value, t):
    if t == "null":
        return value is None
    if t == "boolean":
        return isinstance(value, bool)
    if t == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or \
            (isinstance(value, float) and value.is_integer())
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if t == "string":
        return isinstance(value, str)
    if t == "array":
        return isinstance(value, list)
    if t == "object":
        return isinstance(value, dict)
    raise ValueError("unknown type %r" % t)


def validate(doc, value, schema, where="$"):
    """Errors (strings) of value against schema; [] when it validates."""
    errs = []
    if schema is True or schema == {}:
        return errs
    if schema is False:
        return ["%s: no value allowed here" % where]
    if "$ref" in schema:
        errs += validate(doc, value, resolve(doc, schema["$ref"]), where)
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(is_type(value, t) for t in types):
            return errs + ["%s: %s is not of type %s" % (where, json.dumps(value)[:80], types)]
    if "enum" in schema and value not in schema["enum"]:
        errs.append("%s: %r is not one of %r" % (where, value, schema["enum"]))
    if "const" in schema and (value != schema["const"] or type(value) is not type(schema["const"])):
        errs.append("%s: %r is not %r" % (where, value, schema["const"]))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errs.append("%s: %r < minimum %r" % (where, value, schema["minimum"]))
        if "maximum" in schema and value > schema["maximum"]:
            errs.append("%s: %r > maximum %r" % (where, value, schema["maximum"]))
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            errs.append("%s: %r <= exclusiveMinimum %r"
                        % (where, value, schema["exclusiveMinimum"]))
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            errs.append("%s: shorter than %d" % (where, schema["minLength"]))
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errs.append("%s: longer than %d" % (where, schema["maxLength"]))
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errs.append("%s: %r does not match %s" % (where, value, schema["pattern"]))
        fmt = FORMATS.get(schema.get("format"))
        if fmt is not None and not fmt.match(value):
            errs.append("%s: %r is not a %s" % (where, value, schema["format"]))
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            errs.append("%s: fewer than %d items" % (where, schema["minItems"]))
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errs.append("%s: more than %d items" % (where, schema["maxItems"]))
        prefix = schema.get("prefixItems", [])
        for i, item in enumerate(value):
            sub = prefix[i] if i < len(prefix) else schema.get("items")
            if sub is not None:
                errs += validate(doc, item, sub, "%s[%d]" % (where, i))
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for name in schema.get("required", []):
            if name not in value:
                errs.append("%s: required property %r is missing" % (where, name))
        if "minProperties" in schema and len(value) < schema["minProperties"]:
            errs.append("%s: fewer than %d properties" % (where, schema["minProperties"]))
        if "maxProperties" in schema and len(value) > schema["maxProperties"]:
            errs.append("%s: more than %d properties" % (where, schema["maxProperties"]))
        for name, item in value.items():
            here = "%s.%s" % (where, name)
            if "propertyNames" in schema:
                errs += validate(doc, name, schema["propertyNames"], here + " (name)")
            if name in props:
                errs += validate(doc, item, props[name], here)
            elif "additionalProperties" in schema:
                extra = schema["additionalProperties"]
                if extra is False:
                    errs.append("%s: property %r is not in the schema" % (where, name))
                elif extra is not True:
                    errs += validate(doc, item, extra, here)
    for sub in schema.get("allOf", []):
        errs += validate(doc, value, sub, where)
    passed = []
    if "anyOf" in schema:
        results = [validate(doc, value, sub, where) for sub in schema["anyOf"]]
        passed = [sub for sub, r in zip(schema["anyOf"], results) if not r]
        if not passed:
            errs.append("%s: matches none of anyOf: %s" % (where, "; ".join(
                r[0] for r in results if r)))
    if "oneOf" in schema:
        results = [validate(doc, value, sub, where) for sub in schema["oneOf"]]
        ok = [sub for sub, r in zip(schema["oneOf"], results) if not r]
        if len(ok) != 1:
            errs.append("%s: matches %d of oneOf, not 1: %s" % (where, len(ok), "; ".join(
                r[0] for r in results if r)))
        passed += ok
    if "not" in schema and not validate(doc, value, schema["not"], where):
        errs.append("%s: matches a schema it must not" % where)
    if schema.get("unevaluatedProperties") is False and isinstance(value, dict):
        known = all_properties(doc, schema)
        for sub in passed:
            known |= all_properties(doc, sub)
        for name in value:
            if name not in known:
                errs.append("%s: property %r is not in the schema" % (where, name))
    return errs


def walk_schemas(node, where, out):
    """(where, schema) of every schema inside a schema, itself included."""
    if not isinstance(node, dict):
        return
    out.append((where, node))
    for key in SUBSCHEMA_MAPS:
        for name, sub in (node.get(key) or {}).items():
            walk_schemas(sub, "%s.%s.%s" % (where, key, name), out)
    for key in SUBSCHEMA_ONE:
        if isinstance(node.get(key), dict):
            walk_schemas(node[key], "%s.%s" % (where, key), out)
    for key in SUBSCHEMA_LISTS:
        for i, sub in enumerate(node.get(key) or []):
            walk_schemas(sub, "%s.%s[%d]" % (where, key, i), out)


def every_schema(doc):
    """(where, schema) of every schema of the document: components and the
    ones written inline in parameters, bodies and responses."""
    out = []
    comps = doc.get("components", {})
    for name, sch in comps.get("schemas", {}).items():
        walk_schemas(sch, "components.schemas." + name, out)

    def media(content, where):
        for mt, m in (content or {}).items():
            if "schema" in m:
                walk_schemas(m["schema"], "%s.content.%s" % (where, mt), out)

    def param(p, where):
        if "schema" in p:
            walk_schemas(p["schema"], where + ".schema", out)

    for name, p in comps.get("parameters", {}).items():
        param(p, "components.parameters." + name)
    for name, b in comps.get("requestBodies", {}).items():
        media(b.get("content"), "components.requestBodies." + name)
    for name, r in comps.get("responses", {}).items():
        media(r.get("content"), "components.responses." + name)
    for path, item in doc.get("paths", {}).items():
        for i, p in enumerate(item.get("parameters", [])):
            param(p, "%s.parameters[%d]" % (path, i))
        for method in METHODS:
            op = item.get(method)
            if not op:
                continue
            where = "%s %s" % (method.upper(), path)
            for i, p in enumerate(op.get("parameters", [])):
                param(p, "%s.parameters[%d]" % (where, i))
            media((op.get("requestBody") or {}).get("content"), where + ".requestBody")
            for status, r in (op.get("responses") or {}).items():
                media(r.get("content"), "%s.responses.%s" % (where, status))
                for h, hd in (r.get("headers") or {}).items():
                    param(hd, "%s.responses.%s.headers.%s" % (where, status, h))
    return out


def refs(node, where="$"):
    """(where, $ref) of every $ref in the document."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):
                yield where, v
            else:
                yield from refs(v, "%s.%s" % (where, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from refs(v, "%s[%d]" % (where, i))


class Document(RungdTestCase):
    """The document's structure and its agreement with the route table."""

    @classmethod
    def setUpClass(cls):
        cls.doc = load_openapi()
        cls.table = table_access(read(ROUTES_C))

    def test_openapi_3_1(self):
        version = str(self.doc.get("openapi", ""))
        self.assertTrue(version.startswith("3.1."), version)
        self.assertTrue(self.doc["info"]["title"] and self.doc["info"]["version"])
        self.assertGreaterEqual(len(self.table), 36)

    def test_every_ref_resolves(self):
        found = list(refs(self.doc))
        self.assertGreater(len(found), 100)
        bad = []
        for where, ref in found:
            try:
                resolve(self.doc, ref)
            except (KeyError, TypeError, IndexError):
                bad.append("%s: %s" % (where, ref))
        self.assertEqual(bad, [], "\n".join(bad))

    def test_every_operation_has_responses_and_a_unique_id(self):
        ids, problems = {}, []
        for (method, path), op in sorted(operations(self.doc).items()):
            name = "%s %s" % (method, path)
            responses = op.get("responses") or {}
            if not responses:
                problems.append("%s: no responses" % name)
            for status, r in responses.items():
                if not (status == "default" or re.fullmatch(r"[1-5](\d\d|XX)", str(status))):
                    problems.append("%s: response key %r" % (name, status))
                if "$ref" not in r and not r.get("description"):
                    problems.append("%s: response %s has no description" % (name, status))
            if not any(str(s).startswith("2") for s in responses):
                problems.append("%s: no 2xx response" % name)
            oid = op.get("operationId")
            if not oid:
                problems.append("%s: no operationId" % name)
            elif oid in ids:
                problems.append("%s: operationId %s is also %s's" % (name, oid, ids[oid]))
            else:
                ids[oid] = name
        self.assertEqual(problems, [], "\n".join(problems))

    def test_path_parameters_are_declared(self):
        problems = []
        for path, item in self.doc["paths"].items():
            in_path = set(re.findall(r"\{([^}]+)\}", path))
            shared = [resolve(self.doc, p["$ref"]) if "$ref" in p else p
                      for p in item.get("parameters", [])]
            for method in METHODS:
                if method not in item:
                    continue
                own = [resolve(self.doc, p["$ref"]) if "$ref" in p else p
                       for p in item[method].get("parameters", [])]
                declared = {}
                for p in shared + own:
                    if p.get("in") == "path":
                        declared[p["name"]] = p
                for name in in_path - set(declared):
                    problems.append("%s %s: {%s} is not declared" % (method.upper(), path, name))
                for name in set(declared) - in_path:
                    problems.append("%s %s: path parameter %s is not in the path"
                                    % (method.upper(), path, name))
                for name, p in declared.items():
                    if p.get("required") is not True:
                        problems.append("%s %s: path parameter %s is not required"
                                        % (method.upper(), path, name))
        self.assertEqual(problems, [], "\n".join(problems))

    def test_schemas_use_only_checked_keywords(self):
        problems = []
        schemas = every_schema(self.doc)
        self.assertGreater(len(schemas), 200)
        for where, sch in schemas:
            for key in sch:
                if key not in CHECKED and key not in ANNOTATIONS:
                    problems.append("%s: keyword %r is not checked by this test's validator"
                                    % (where, key))
            if "format" in sch and sch["format"] not in FORMATS:
                problems.append("%s: format %r" % (where, sch["format"]))
            for name in sch.get("required", []):
                if "properties" in sch and name not in sch["properties"]:
                    problems.append("%s: required %r is not a property" % (where, name))
        self.assertEqual(problems, [], "\n".join(problems))

    def test_discriminators_agree_with_their_oneOf(self):
        problems, seen = [], 0
        for where, sch in every_schema(self.doc):
            disc = sch.get("discriminator")
            if not disc:
                continue
            seen += 1
            mapping = disc.get("mapping", {})
            targets = [s.get("$ref") for s in sch.get("oneOf", [])]
            if sorted(mapping.values()) != sorted(targets):
                problems.append("%s: discriminator mapping %s is not the oneOf %s"
                                % (where, sorted(mapping.values()), sorted(targets)))
            for value, ref in mapping.items():
                target = resolve(self.doc, ref)
                prop = target.get("properties", {}).get(disc["propertyName"], {})
                if prop.get("const") != value:
                    problems.append("%s: %s's %s is not const %r"
                                    % (where, ref, disc["propertyName"], value))
        self.assertGreaterEqual(seen, 3)
        self.assertEqual(problems, [], "\n".join(problems))

    def test_every_route_is_an_operation_and_no_other(self):
        problems = compare_routes(self.table, self.doc)
        self.assertEqual(problems, [], "\n".join(problems))

    def test_security_follows_the_access_rule(self):
        problems = security_problems(self.doc)
        self.assertEqual(problems, [], "\n".join(problems))

    def test_the_route_check_fails_for_a_missing_or_extra_route(self):
        grown = self.table + [("PUT", "/api/v1/workers/{id}", "own-worker")]
        problems = compare_routes(grown, self.doc)
        self.assertEqual(len(problems), 1, problems)
        self.assertIn("PUT /api/v1/workers/{id}", problems[0])
        # A path spelled otherwise ({worker} for {id}) is another route.
        doc = load_openapi()
        doc["paths"]["/api/v1/workers/{worker}/lease"] = doc["paths"].pop(
            "/api/v1/workers/{id}/lease")
        problems = compare_routes(self.table, doc)
        self.assertEqual(len(problems), 2, problems)
        # A rule changed in the table.
        changed = [(m, p, "admin" if (m, p) == ("GET", "/api/v1/workers") else r)
                   for m, p, r in self.table]
        problems = compare_routes(changed, self.doc)
        self.assertEqual(len(problems), 1, problems)
        # A public route's security, and a change by cookie without CSRF.
        doc = load_openapi()
        doc["paths"]["/metrics"]["get"]["security"] = [{"bearerToken": []}]
        doc["paths"]["/api/v1/experiments"]["post"]["security"] = [
            {"bearerToken": []}, {"sessionCookie": []}]
        self.assertEqual(len(security_problems(doc)), 2, security_problems(doc))


class MatchesApiMd(RungdTestCase):
    """The schemas against docs/api.md's tables."""

    @classmethod
    def setUpClass(cls):
        cls.doc = load_openapi()
        cls.md = read(API_MD)
        cls.schemas = cls.doc["components"]["schemas"]

    def props(self, name):
        return all_properties(self.doc, self.schemas[name])

    def same(self, doc_names, schema_names, what):
        doc_names = list(doc_names)
        self.assertGreater(len(doc_names), 0, "%s: nothing read from docs/api.md" % what)
        self.assertEqual(len(set(doc_names)), len(doc_names), "%s: listed twice" % what)
        missing = sorted(set(doc_names) - set(schema_names))
        extra = sorted(set(schema_names) - set(doc_names))
        self.assertEqual((missing, extra), ([], []),
                         "%s: in docs/api.md only %s; in docs/openapi.yaml only %s"
                         % (what, missing, extra))

    def test_the_experiment_object(self):
        fields = doc_fields(self.md, "### The experiment object")
        self.same(fields, self.props("ExperimentStatus"),
                  "the experiment object (schema ExperimentStatus)")
        # The object is the spec plus those, and nothing else.
        self.assertEqual(self.props("Experiment"),
                         self.props("ExperimentSpec") | self.props("ExperimentStatus"))

    def test_the_trial_object(self):
        self.same(doc_fields(self.md, "### The trial object"), self.props("Trial"),
                  "the trial object (schema Trial: TrialCore and gang, artifacts)")

    def test_the_worker_object(self):
        self.same(doc_fields(self.md, "### The worker object"), self.props("Worker"),
                  "the worker object (schema Worker)")

    def test_the_spec_top_level_fields(self):
        self.same(doc_fields(self.md, "### Top-level fields"), self.props("ExperimentSpec"),
                  "the spec's top-level fields (schema ExperimentSpec)")

    def test_the_search_space_domains(self):
        rows = first_table(section(self.md, "### search_space"))
        doc_types = {}
        for row in rows:
            names = names_in(row[0])
            if not names:
                continue  # the constant row
            doc_types[names[0]] = set(re.findall(r'"(\w+)"\s*:', row[1]))
        mapping = self.schemas["Domain"]["discriminator"]["mapping"]
        self.same(doc_types, mapping, "search_space domain types (schema Domain)")
        for t, keys in doc_types.items():
            if "low" in keys or "sd" in keys:
                keys = keys | {"grid_points"}  # "Every numeric domain also takes"
            target = resolve(self.doc, mapping[t])
            self.same(keys, target["properties"], "the %s domain's keys (%s)"
                      % (t, mapping[t].rsplit("/", 1)[1]))
            self.assertEqual(set(target["required"]) - {"grid_points"}, keys - {"grid_points"},
                             "%s: every key of docs/api.md's JSON column is required" % t)

    def test_the_searcher(self):
        rows = first_table(section(self.md, "### searcher"))
        types = [names_in(r[0])[0] for r in rows]
        fields = {"type"}
        for r in rows:
            fields |= set(names_in(r[1]))
        searcher = self.schemas["Searcher"]
        self.same(types, searcher["properties"]["type"]["enum"], "searcher types")
        self.same(fields, searcher["properties"], "searcher fields (schema Searcher)")

    def test_the_scheduler_types(self):
        rows = first_table(section(self.md, "### scheduler"))
        types = [names_in(r[0])[0] for r in rows]
        self.same(types, self.schemas["Scheduler"]["discriminator"]["mapping"],
                  "scheduler types (schema Scheduler)")

    def test_the_error_codes(self):
        codes = [names_in(r[0])[0] for r in first_table(section(self.md, "### Errors"))]
        self.same(codes, self.schemas["ErrorCode"]["enum"], "error codes (schema ErrorCode)")
        header = re.findall(r'X\(\s*[A-Z_]+\s*,\s*"([a-z_]+)"', read(ERROR_H))
        self.same(header, self.schemas["ErrorCode"]["enum"], "common/error.h's codes")

    def test_the_trial_states(self):
        states = self.schemas["TrialState"]["enum"]
        self.same(states, self.schemas["TrialCounts"]["properties"], "trial states in counts")

    def test_the_comparison_fails_on_a_field_added_to_the_docs(self):
        md = self.md.replace("| `nodes` | integer |",
                             "| `info` | object | x |\n| `nodes` | integer |")
        fields = doc_fields(md, "### The trial object")
        self.assertIn("info", fields)
        with self.assertRaises(AssertionError):
            self.same(fields, self.props("Trial"), "trial")


class Live(RungdTestCase):
    """Replies of a real rungd against their schemas."""

    @classmethod
    def setUpClass(cls):
        cls.doc = load_openapi()
        cls.ops = operations(cls.doc)

    def setUp(self):
        super().setUp()
        self.checked = []

    def schema_of(self, method, template, status):
        op = self.ops[(method, template)]
        responses = op["responses"]
        r = responses.get(str(status))
        if r is None:
            self.assertFalse(200 <= status < 300, "%s %s: %d is not a documented response"
                             % (method, template, status))
            r = responses.get("default")
            self.assertIsNotNone(r, "%s %s: %d and no default" % (method, template, status))
        if "$ref" in r:
            r = resolve(self.doc, r["$ref"])
        return r.get("content")

    def check(self, resp, method, template, status):
        """Checks resp against the operation's response for its status;
        returns its JSON."""
        self.assertEqual(resp.status, status, "%s %s: %s" % (method, template, resp.text[:800]))
        content = self.schema_of(method, template, resp.status)
        if not content:
            self.assertEqual(resp.body, b"", "%s %s %d: a body where none is documented"
                             % (method, template, status))
            return None
        ctype = resp.headers.get("content-type", "").split(";")[0].strip()
        self.assertIn(ctype, content, "%s %s %d: Content-Type %s" % (method, template, status,
                                                                    ctype))
        schema = content[ctype].get("schema")
        if ctype == "application/json":
            errs = validate(self.doc, resp.json, schema)
            self.assertEqual(errs, [], "%s %s %d does not match docs/openapi.yaml:\n%s\n%s"
                             % (method, template, status, "\n".join(errs[:20]),
                                resp.text[:2000]))
        self.checked.append((method, template))
        return resp.json

    def call(self, d, method, path, template, status, body=None, **kw):
        return self.check(d.request(method, path, body=body, **kw), method, template, status)

    def test_an_experiment_through_its_life(self):
        d = self.daemon("--lease-s", "30")
        E, T, W = "/api/v1/experiments", "/api/v1/trials", "/api/v1/workers"
        s = spec(search_space={
            "x": {"type": "uniform", "low": 0.0, "high": 1.0, "grid_points": 3},
            "n": {"type": "qrandint", "low": 1, "high": 9, "q": 2},
            "model": {"depth": {"type": "randint", "low": 1, "high": 4}, "act": "relu"},
            "opt": {"type": "choice", "values": [
                {"name": "sgd", "momentum": {"type": "uniform", "low": 0.0, "high": 0.9}},
                {"name": "adam"}]},
            "bs": {"type": "grid", "values": [32, 64]},
            "seedless": None},
            scheduler={"type": "asha", "max_t": 9, "grace_period": 1, "reduction_factor": 3},
            stop={"time_budget_s": 3600}, worker_selector={}, num_samples=3,
            tags=["first"], notes="a note\nof two lines")
        exp = self.call(d, "POST", E, E, 201, body=s)
        eid = exp["id"]
        ep = "%s/%d" % (E, eid)
        self.call(d, "GET", ep, E + "/{id}", 200)
        self.call(d, "GET", E + "?limit=5", E, 200)
        # Several objectives and constraints: pareto, values, feasible.
        multi = spec(metric=None, mode=None,
                     metrics=[{"name": "loss", "mode": "min"}, {"name": "ms", "mode": "min"}],
                     constraints=[{"metric": "mem", "max": 4}],
                     trainable={"type": "command", "argv": ["true", "{x}"], "timeout_s": 60})
        del multi["metric"], multi["mode"]
        multi_exp = self.call(d, "POST", E, E, 201, body=multi)

        reg = self.call(d, "POST", W, W, 201, body={
            "name": "w1", "cpus": 4, "labels": {"pool": "a"},
            "gpus": [{"index": 0, "name": "fake", "memory_mb": 1024}]})
        wid = reg["worker_id"]
        self.call(d, "GET", W, W, 200)
        lease = self.call(d, "POST", "%s/%d/lease" % (W, wid), W + "/{id}/lease", 200,
                          body={"cpus": 1, "wait_s": 5, "trainables": ["external"]})
        trial = lease["trial"]
        tid, token = trial["id"], trial["lease_token"]
        tp = "%s/%d" % (T, tid)
        self.call(d, "POST", tp + "/report", T + "/{id}/report", 200,
                  body={"lease_token": token, "step": 1,
                        "metrics": {"loss": 0.5, "aux": "NaN", "up": "Infinity"},
                        "info": {"phase": "warmup", "tags": ["a"]}})
        got = self.call(d, "GET", tp, T + "/{id}", 200)
        self.assertEqual(got["last"]["aux"], "NaN")
        self.assertEqual(got["info"], {"phase": "warmup", "tags": ["a"]})
        self.call(d, "GET", tp + "/metrics", T + "/{id}/metrics", 200)
        self.call(d, "POST", "%s/%d/heartbeat" % (W, wid), W + "/{id}/heartbeat", 200,
                  body={"trials": [tid], "logs": {str(tid): "epoch 1\n"},
                        "gpus": [{"index": 0, "util": 0.5, "state": "trial", "trial_id": tid}],
                        "cache": {"free_bytes": 10, "full": False}})
        self.call(d, "GET", "/api/v1/workers?all=true", W, 200)
        self.call(d, "POST", tp + "/finish", T + "/{id}/finish", 200,
                  body={"lease_token": token, "status": "completed", "log": "done\n",
                        "warnings": {"count": 1, "last": [{"line": "@rung {", "why": "x"}]}})
        self.call(d, "GET", tp, T + "/{id}", 200)
        # Tags and notes, the submitted spec and the timeline.
        got = self.call(d, "PATCH", tp, T + "/{id}", 200,
                        body={"tags": ["good", "x y"], "notes": "fine"})
        self.assertEqual((got["tags"], got["notes"]), (["good", "x y"], "fine"))
        self.call(d, "PATCH", tp, T + "/{id}", 400, body={"state": "failed"})
        self.call(d, "GET", ep + "/trials?tag=good", E + "/{id}/trials", 200)
        self.call(d, "GET", ep + "/trials?tag=a,b", E + "/{id}/trials", 400)
        self.call(d, "PATCH", ep, E + "/{id}", 200, body={"tags": ["base"], "notes": "n"})
        self.call(d, "GET", E + "?tag=base", E, 200)
        specs = self.call(d, "GET", ep + "/spec", E + "/{id}/spec", 200)
        self.assertEqual(specs["submitted"], s)
        timeline = self.call(d, "GET", ep + "/timeline", E + "/{id}/timeline", 200)
        self.assertEqual([i[0] for i in timeline["items"]], [tid])
        self.call(d, "GET", E + "/999/timeline", E + "/{id}/timeline", 404)
        self.call(d, "GET", ep + "/trials?sort=value", E + "/{id}/trials", 200)
        self.call(d, "GET", ep + "/curves", E + "/{id}/curves", 200)
        self.call(d, "GET", ep + "/curves?best=1", E + "/{id}/curves", 200)
        self.call(d, "PATCH", ep, E + "/{id}", 200, body={"priority": 3, "share": 2})
        self.call(d, "POST", ep + "/pause", E + "/{id}/pause", 200, body={})
        self.call(d, "POST", ep + "/resume", E + "/{id}/resume", 200, body={})

        # The multi-objective experiment's trial, reported and read back.
        lease = self.call(d, "POST", "%s/%d/lease" % (W, wid), W + "/{id}/lease", 200,
                          body={"cpus": 1, "wait_s": 5, "trainables": ["command"]})
        mt = lease["trial"]
        self.assertEqual(mt["experiment_id"], multi_exp["id"])
        self.call(d, "POST", "%s/%d/report" % (T, mt["id"]), T + "/{id}/report", 200,
                  body={"lease_token": mt["lease_token"], "step": 1,
                        "metrics": {"loss": 0.1, "ms": 3, "mem": 2}})
        self.call(d, "POST", "%s/%d/finish" % (T, mt["id"]), T + "/{id}/finish", 200,
                  body={"lease_token": mt["lease_token"], "status": "completed"})
        self.call(d, "GET", "%s/%d" % (T, mt["id"]), T + "/{id}", 200)
        self.call(d, "GET", "%s/%d" % (E, multi_exp["id"]), E + "/{id}", 200)
        # What the completed trials say: too few for importance (a reason),
        # a surface of the one point, and bad arguments.
        mp = "%s/%d" % (E, multi_exp["id"])
        self.call(d, "GET", ep + "/importance", E + "/{id}/importance", 200)
        self.call(d, "GET", mp + "/importance", E + "/{id}/importance", 200)
        self.call(d, "GET", mp + "/importance?metric=mem", E + "/{id}/importance", 200)
        self.call(d, "GET", ep + "/importance?metric=nope", E + "/{id}/importance", 400)
        self.call(d, "GET", ep + "/surface?x=x&y=model.depth&n=4", E + "/{id}/surface", 200)
        self.call(d, "GET", ep + "/surface?x=opt.name&y=x", E + "/{id}/surface", 400)
        self.call(d, "GET", E + "/9999/surface?x=x&y=n", E + "/{id}/surface", 404)

        # Nothing left for the worker: 204, no body.
        self.call(d, "POST", "%s/%d/lease" % (W, wid), W + "/{id}/lease", 204,
                  body={"cpus": 1, "wait_s": 0, "trainables": ["command"]})
        # Stopping a pending trial, canceling, retrying, deleting.
        pending = d.ok("GET", ep + "/trials?state=pending")["items"]
        if pending:
            self.call(d, "POST", "%s/%d/stop" % (T, pending[0]["id"]), T + "/{id}/stop", 200,
                      body={})
        self.call(d, "POST", ep + "/cancel", E + "/{id}/cancel", 200)
        self.call(d, "POST", ep + "/retry-failed", E + "/{id}/retry-failed", 409, body={})
        self.call(d, "DELETE", ep, E + "/{id}", 200)
        self.call(d, "GET", "/api/v1/events?after=0&limit=50", "/api/v1/events", 200)
        self.call(d, "GET", "/api/v1/whoami", "/api/v1/whoami", 200)
        self.call(d, "GET", "/healthz", "/healthz", 200)

        # Errors, each in the error shape.
        self.call(d, "GET", ep, E + "/{id}", 404)
        bad = self.call(d, "POST", E, E, 400, body=spec(mode="sideways"))
        self.assertEqual(bad["error"]["field"], "mode")
        self.call(d, "POST", E, E, 400, raw=b"{nope")
        self.call(d, "GET", E + "?limit=0", E, 400)
        self.call(d, "POST", "%s/%d/report" % (T, mt["id"]), T + "/{id}/report", 409,
                  body={"lease_token": "0" * 32, "step": 9, "metrics": {"loss": 1}})
        self.call(d, "GET", "/api/v1/blobs/" + "ab" * 32, "/api/v1/blobs/{sha256}", 404)
        r = d.request("HEAD", "/api/v1/blobs/" + "ab" * 32)
        self.assertEqual(r.status, 404)
        self.assertIn("404", self.ops[("HEAD", "/api/v1/blobs/{sha256}")]["responses"])

    def test_the_example_specs(self):
        # examples/*.json are specs as people write them: each is an
        # ExperimentSpec, and what rungd makes of it an Experiment.
        d = self.daemon()
        E = "/api/v1/experiments"
        body = {"allOf": [{"$ref": "#/components/schemas/ExperimentSpec"}],
                "unevaluatedProperties": False}
        names = sorted(n for n in os.listdir(os.path.join(ROOT, "examples"))
                       if n.endswith(".json"))
        self.assertGreaterEqual(len(names), 5)
        for name in names:
            with open(os.path.join(ROOT, "examples", name), encoding="utf-8") as f:
                example = json.load(f)
            errs = validate(self.doc, example, body)
            self.assertEqual(errs, [], "examples/%s is no ExperimentSpec of docs/openapi.yaml:"
                             "\n%s" % (name, "\n".join(errs[:20])))
            exp = self.call(d, "POST", E, E, 201, body=example)
            self.call(d, "GET", "%s/%d" % (E, exp["id"]), E + "/{id}", 200)

    def test_users_tokens_and_a_session(self):
        boot = "bootstrap-token-for-openapi-0123456789"
        d = self.daemon("--token", boot, token=boot)
        U, K = "/api/v1/users", "/api/v1/tokens"
        alice = self.call(d, "POST", U, U, 201,
                          body={"name": "alice", "role": "member", "expires_in_days": 30})
        self.call(d, "GET", U, U, 200)
        tok = alice["token"]
        made = self.call(d, "POST", K, K, 201, body={"name": "laptop"}, token=tok)
        self.call(d, "GET", K, K, 200, token=tok)
        self.call(d, "GET", K + "?all=true", K, 200)
        self.call(d, "GET", K + "?all=true", K, 403, token=tok)
        self.call(d, "DELETE", "%s/%d" % (K, made["token_id"]), K + "/{id}", 200, token=tok)
        self.call(d, "GET", "/api/v1/whoami", "/api/v1/whoami", 200, token=tok)
        self.call(d, "GET", "/api/v1/whoami", "/api/v1/whoami", 401, token=None)
        S = "/api/v1/session"
        r = d.request("POST", S, token=tok)
        sess = self.check(r, "POST", S, 201)
        cookie = r.headers["set-cookie"].split(";")[0]
        self.assertTrue(cookie.startswith("rung_session="), cookie)
        self.call(d, "GET", S, S, 200, token=None, headers={"Cookie": cookie})
        self.call(d, "DELETE", S, S, 200, token=None,
                  headers={"Cookie": cookie, "X-CSRF-Token": sess["csrf"]})
        self.call(d, "DELETE", "%s/%d" % (U, alice["id"]), U + "/{id}", 200)
        self.call(d, "GET", "/metrics", "/metrics", 200, token=None)

    def test_the_validator_finds_drift(self):
        d = self.daemon()
        exp = d.create_experiment(spec())
        schema = {"$ref": "#/components/schemas/Experiment"}
        self.assertEqual(validate(self.doc, exp, schema), [])
        self.assertTrue(validate(self.doc, dict(exp, bogus=1), schema))
        self.assertTrue(validate(self.doc, {k: v for k, v in exp.items() if k != "counts"},
                                 schema))
        self.assertTrue(validate(self.doc, dict(exp, state="sleeping"), schema))
        self.assertTrue(validate(self.doc, dict(exp, created_at="yesterday"), schema))
        self.assertTrue(validate(self.doc, dict(exp, scheduler={"type": "fifo", "x": 1}), schema))
        worker = {"$ref": "#/components/schemas/Worker"}
        w = d.ok("POST", "/api/v1/workers", {"name": "w"}, status=201)
        listed = d.ok("GET", "/api/v1/workers")["items"][0]
        self.assertEqual(listed["id"], w["worker_id"])
        self.assertEqual(validate(self.doc, listed, worker), [])
        self.assertTrue(validate(self.doc, dict(listed, alive="yes"), worker))
        metric = {"$ref": "#/components/schemas/MetricValue"}
        self.assertEqual(validate(self.doc, "-Infinity", metric), [])
        self.assertEqual(validate(self.doc, 0.5, metric), [])
        self.assertTrue(validate(self.doc, "nan", metric))
        self.assertTrue(validate(self.doc, None, metric))
        err = {"$ref": "#/components/schemas/Error"}
        self.assertTrue(validate(self.doc, {"error": {"code": "oops", "message": "m"}}, err))
        self.assertTrue(validate(self.doc, {"error": {"message": "m"}}, err))


if __name__ == "__main__":
    main()
