#!/usr/bin/python3
"""No file outside the Core writes a field of its objects (issue 35).

The Core (server/core.h) hands out Trial, Experiment and Worker objects;
only its own files (server/core*.c, and its schedulers server/sched_*.c)
may change their fields, so that every change goes through its functions
and its change queue. This parses the three structs where they are
defined (any server/*.h), then scans every other server/*.c for writes to
one of their fields through a variable declared in the same function as a
pointer to that type (`t->f = ...`, `t->f += ...`, `t->f++`, `++t->f`,
`t->f.g = ...`, `t->f[i] = ...`) or through a lookup's result
(`core_trial(...)->f = ...`). A heuristic: a write through a pointer to a
field (`&t->f` handed to a function) is not seen.

PENDING lists the writes that existed when this check was added, as
(file, field): allowed for now. The check fails on a write not listed, and
on a listed one that no longer occurs, so the list only shrinks.

Usage: check_core_fields.py [REPO_ROOT]"""
import fnmatch
import os
import re
import sys

TYPES = ("Trial", "Experiment", "Worker")

# (files under server/: a glob of one module family; type; field): the
# writes outside the Core when this check was added (issue 35 closes the
# Core). A move inside the family keeps its entry (api.c to api_*.c, store.c
# to store_*.c); a move out of it renames the entry; nothing may join.
PENDING = set()


def strip_code(text):
    """Comments, string and character literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j]) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def struct_fields(root):
    """{type: set of field names} from `typedef struct T { ... } T;`."""
    fields = {}
    sdir = os.path.join(root, "server")
    for name in sorted(os.listdir(sdir)):
        if not name.endswith(".h"):
            continue
        text = strip_code(open(os.path.join(sdir, name), encoding="utf-8").read())
        for t in TYPES:
            m = re.search(r"typedef\s+struct\s+%s\s*\{" % t, text) or \
                re.search(r"\bstruct\s+%s\s*\{" % t, text)
            if not m:
                continue
            depth, i = 1, m.end()
            while depth > 0:
                depth += {"{": 1, "}": -1}.get(text[i], 0)
                i += 1
            body = text[m.end():i - 1]
            names = set()
            for decl in body.split(";"):
                decl = re.sub(r"\[[^\]]*\]", "", decl).strip()
                if not decl:
                    continue
                # "T a, *b, c" or "struct X *a": the names after the type.
                parts = decl.split(",")
                first = re.findall(r"\w+", parts[0])
                if len(first) >= 2:
                    names.add(first[-1])
                for p in parts[1:]:
                    w = re.findall(r"\w+", p)
                    if w:
                        names.add(w[-1])
            fields[t] = names
    missing = [t for t in TYPES if t not in fields]
    if missing:
        sys.exit("check_core_fields: no definition of %s in server/*.h" % ", ".join(missing))
    return fields


def functions(text):
    """(start offset, header + body) of each top-level brace block."""
    depth, start, last_end = 0, 0, 0
    for i, c in enumerate(text):
        if c == "{":
            if depth == 0:
                start = i
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                head_from = max(text.rfind(";", last_end, start), text.rfind("}", 0, start)) + 1
                yield head_from, text[head_from:i + 1]
                last_end = i + 1


DECL = re.compile(r"\b(?:struct\s+)?(Trial|Experiment|Worker)\s*((?:\*\s*(?:const\s+)?)+)(\w+)")
WRITE_OP = r"(?:\.\w+|\[[^\]\n]*\])*\s*(?:\+\+|--|(?:[-+*/%|&^]|<<|>>)?=(?!=))"
LOOKUP = {"Trial": r"core_(?:exp_)?trial", "Experiment": r"core_experiment(?:_at)?",
          "Worker": r"core_worker"}


def declared(body):
    """{variable: type} of the pointers to the Core's types declared in a
    function (its parameters and locals, `T *a = f(x, y), *b` too)."""
    names = {}
    for m in DECL.finditer(body):
        names[m.group(3)] = m.group(1)
        # Further declarators of the same statement, at depth 0.
        depth, i, piece = 0, m.end(), ""
        while i < len(body):
            c = body[i]
            if c in "([{":
                depth += 1
            elif c in ")]}":
                depth -= 1
                if depth < 0:
                    break
            elif c == ";" and depth == 0:
                break
            elif c == "," and depth == 0:
                nm = re.match(r"\s*\*+\s*(\w+)", body[i + 1:])
                if nm:
                    names[nm.group(1)] = m.group(1)
            i += 1
    return names


def writes(path, fields):
    """(line, type, variable, field) of each write to a Core field in path."""
    raw = open(path, encoding="utf-8").read()
    text = strip_code(raw)
    found = []
    for off, fn in functions(text):
        names = declared(fn)
        pats = []
        for var, typ in names.items():
            pats.append((typ, var, re.escape(var)))
        for typ, call in LOOKUP.items():
            pats.append((typ, call + "()", call + r"\s*\([^;{}]*?\)"))
        for typ, label, expr in pats:
            flist = "|".join(sorted(fields[typ], key=len, reverse=True))
            post = re.compile(r"(?<![\w.>])%s\s*->\s*(%s)\b(?=%s)" % (expr, flist, WRITE_OP))
            pre = re.compile(r"(?:\+\+|--)\s*%s\s*->\s*(%s)\b" % (expr, flist))
            for rx in (post, pre):
                for m in rx.finditer(fn):
                    line = text.count("\n", 0, off + m.start()) + 1
                    found.append((line, typ, label, m.group(1)))
    return sorted(set(found))


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else \
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    fields = struct_fields(root)
    sdir = os.path.join(root, "server")
    bad, seen = [], set()
    for name in sorted(os.listdir(sdir)):
        if not name.endswith(".c") or name.startswith("core") or name.startswith("sched_"):
            continue
        for line, typ, var, field in writes(os.path.join(sdir, name), fields):
            key = next((k for k in PENDING
                        if fnmatch.fnmatchcase(name, k[0]) and k[1:] == (typ, field)), None)
            if key is not None:
                seen.add(key)
            else:
                bad.append("server/%s:%d: %s->%s written (a %s field) outside the Core"
                           % (name, line, var, field, typ))
    gone = sorted(PENDING - seen)
    for name, typ, field in gone:
        bad.append("server/%s: no longer writes %s.%s: take it out of PENDING in %s"
                   % (name, typ, field, "tests/lint/check_core_fields.py"))
    print("check_core_fields: %d pending writes of Core fields outside the Core (%s)"
          % (len(PENDING), ", ".join("%s:%s.%s" % k for k in sorted(PENDING)) or "none"))
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
