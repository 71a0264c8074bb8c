"""YAML for sweep files and specs, read as YAML 1.2's core schema.

`load_yaml(text)` gives the Python value of one YAML document. With PyYAML
installed it parses with PyYAML's safe loader; without it, with the small
reader below (`parse_subset`), which covers what sweep files and specs use.
Both resolve plain scalars the same way, by YAML 1.2's core schema, as
`rung submit` (cli/yaml.h) does:

- empty, `~`, `null`, `Null`, `NULL` are None; `true`/`True`/`TRUE` and
  `false`/`False`/`FALSE` booleans; decimal integers with an optional sign,
  `0o17` and `0x1F` integers; `1.5`, `.5`, `1e-4`, `-2.5E+3` floats;
  anything else is a string: `yes`, `no`, `on`, `off` (YAML 1.1's booleans,
  which PyYAML's own safe_load still reads as booleans) and `2024-01-01`
  included;
- `1e-4` is a float (PyYAML's safe_load, which follows YAML 1.1, reads it
  as the string "1e-4" unless it is written `1.0e-4` or tagged `!!float`);
- `.inf`, `-.inf` and `.nan` are errors: a spec's numbers must be finite,
  and JSON has no spelling for them; so are integers outside int64 and
  floats too large for a double (`1e999`), as in `rung submit`;
- mapping keys are strings as written (`1: x` gives the key "1");
- a key given twice is an error (a mistyped override would otherwise pass
  silently); anchors and aliases are errors (a sweep never needs them);
  so are an empty document, a second one, and a string holding NUL;
- the tags `!!str`, `!!int`, `!!float`, `!!bool`, `!!null`, `!!seq`,
  `!!map` and the non-specific `!` are honoured; any other is an error.

W&B mode (`load_yaml(text, wandb=True)`, what `rung.convert.from_wandb`
reads a sweep file with; `rung submit` has the same for W&B sweep files,
cli/yaml.h): W&B reads sweep files with PyYAML, whose YAML 1.1 also
takes `yes`, `Yes`, `YES`, `no`, `No`, `NO`, `on`, `On`, `ON`, `off`,
`Off`, `OFF` as booleans, and so does this mode (as values, and after
`!!bool`; keys stay strings as written). Everything else reads as above;
`1e-5` is a float in both modes, as W&B's users mean it.

Every error is a ValueError whose message starts with the 1-based line:
"line 7: duplicate key 'lr'", in cli/yaml.c's words where the two refuse
the same thing. The corpus in tests/data/yaml/ holds documents with what
each gives, and both this module's readers and cli/yaml.c must pass it.

The reader without PyYAML takes: block mappings and sequences by
indentation (a sequence may sit at its key's indentation), `- key: value`
items, flow sequences `[a, b]` and mappings `{a: 1}` (also over several
lines), plain, single- and double-quoted scalars, literal `|` and folded
`>` block scalars, comments, `---` before and `...` after the document.
It refuses what sweep files do not need: anchors, aliases, `?` keys,
directives, several documents, multi-line plain or quoted scalars.
"""

from __future__ import annotations

import io
import json
import math
import re
import sys
from typing import Any, Callable, Optional

__all__ = ["load_yaml", "load_json", "parse_subset", "read_document", "resolve_plain"]

# YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution).
_NULL_RE = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL_RE = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_INT_RE = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT_RE = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
_NONFINITE_RE = re.compile(r"^(?:[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")
# W&B mode (load_yaml(text, wandb=True)): YAML 1.1's further booleans, in the
# spellings PyYAML's resolver takes (W&B reads sweep files with PyYAML).
_BOOL11_RE = re.compile(r"^(?:yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF)$")


def _bool_of(text: str, wandb: bool) -> Optional[bool]:
    """The boolean a plain scalar's text spells, or None."""
    if _BOOL_RE.match(text):
        return text[0] in "tT"
    if wandb and _BOOL11_RE.match(text):
        return text[:2] in ("ye", "Ye", "YE", "on", "On", "ON")
    return None

# Collections nest at most this deep, as in `rung submit` (cli/yaml.c, whose
# bound is common/jsonv.h's JSONV_MAX_DEPTH): the 33rd is refused, by line,
# before PyYAML's recursive composer could raise RecursionError.
_MAX_DEPTH = 32
# Integers a spec can carry: JSON's as rungd (and cli/yaml.c) read them.
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
# cli/yaml.c's words for what both readers refuse at the document level.
_SECOND_DOCUMENT = "a second document (---): a spec is one document"
_EMPTY_DOCUMENT = "empty document: a spec is a mapping (name: ...)"
# A spec or sweep file larger than this is refused before it is read
# (cli/experiments.c's SPEC_MAX): rungd takes 1 MiB bodies by default.
MAX_FILE_BYTES = 64 << 20


def _deeper(depth: int) -> str:
    """The error of a collection with depth collections around it, or ""."""
    return f"nested deeper than {_MAX_DEPTH} levels" if depth + 1 > _MAX_DEPTH else ""


class _Error(ValueError):
    """A ValueError that carries its 1-based line."""

    def __init__(self, line: int, message: str):
        self.line = line
        super().__init__(f"line {line}: {message}")


def _quote(text: str) -> str:
    return repr(text if len(text) <= 64 else text[:61] + "...")


def _int(text: str, line: int = 0) -> int:
    if text.startswith("0o"):
        value = int(text[2:], 8)
    elif text.startswith("0x"):
        value = int(text[2:], 16)
    else:
        value = int(text, 10)
    if not _INT64_MIN <= value <= _INT64_MAX:
        # JSON integers past int64 would reach rungd as reals, silently
        # changing a seed (cli/yaml.h): refused, as `rung submit` does.
        raise _Error(line, f"{text} is out of range")
    return value


def _float(text: str, line: int = 0) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Error(line, f"{text} is out of range")
    return value


def _nonfinite(text: str, line: int) -> _Error:
    return _Error(line, f"{text}: infinite and NaN numbers are not allowed (a spec's numbers "
                  "are finite)")


def _tag_name(tag: str) -> str:
    """A tag as cli/yaml.c names it in errors: !!x is tag:yaml.org,2002:x."""
    return "tag:yaml.org,2002:" + tag[2:] if tag.startswith("!!") else tag


def _anchor_error(text: str, line: int) -> _Error:
    """&name or *name at the start of text, in cli/yaml.c's words."""
    m = re.match(r"[&*][^ \t,\[\]{}]*", text)
    token = m.group(0) if m else text[:1]
    what = "anchors" if token.startswith("&") else "aliases"
    return _Error(line, f"{what} ({token}) are not supported; write the value out")


def _no_nul(text: str, line: int, what: str = "a string") -> str:
    if "\0" in text:
        raise _Error(line, f"{what} holds a NUL character")
    return text


def resolve_plain(text: str, line: int = 0, wandb: bool = False) -> Any:
    """The value of a plain (unquoted) scalar by YAML 1.2's core schema
    (with `wandb`, yes/no/on/off are booleans too)."""
    if _NULL_RE.match(text):
        return None
    boolean = _bool_of(text, wandb)
    if boolean is not None:
        return boolean
    if _INT_RE.match(text):
        return _int(text, line)
    if _FLOAT_RE.match(text):
        return _float(text, line)
    if _NONFINITE_RE.match(text):
        raise _nonfinite(text, line)
    return text


def _tagged(tag: str, value: Any, plain: Optional[str], line: int, wandb: bool = False) -> Any:
    """Applies an explicit scalar tag; `plain` is the scalar's text when it
    was written plain, else None (quoted or block)."""
    text = plain if plain is not None else value
    if tag in ("!", "!!str"):
        return text if isinstance(text, str) else value
    if not isinstance(text, str):
        raise _Error(line, f"tag {tag} needs a scalar")
    if tag == "!!int":
        if _INT_RE.match(text):
            return _int(text, line)
        raise _Error(line, f"{_quote(text)} is not a !!int")
    if tag == "!!float":
        if _INT_RE.match(text):
            return float(_int(text, line))
        if _FLOAT_RE.match(text):
            return _float(text, line)
        if _NONFINITE_RE.match(text):
            raise _nonfinite(text, line)
        raise _Error(line, f"{_quote(text)} is not a !!float")
    if tag == "!!bool":
        boolean = _bool_of(text, wandb)
        if boolean is not None:
            return boolean
        raise _Error(line, f"{_quote(text)} is not a !!bool")
    if tag == "!!null":
        if _NULL_RE.match(text):
            return None
        raise _Error(line, f"{_quote(text)} is not a !!null")
    raise _Error(line, f"tag {_quote(_tag_name(tag))} is not supported on a scalar")


# ---------------------------------------------------------------------------
# The reader used without PyYAML.


class _Line:
    __slots__ = ("number", "indent", "text")

    def __init__(self, number: int, indent: int, text: str):
        self.number = number  # 1-based
        self.indent = indent  # columns of leading spaces
        self.text = text  # the rest, comments not yet removed


def _is_comment_or_blank(text: str) -> bool:
    stripped = text.strip()
    return not stripped or stripped.startswith("#")


def _strip_comment(text: str) -> str:
    """Removes a trailing ` # comment` from plain text (no quotes in it)."""
    for i, ch in enumerate(text):
        if ch == "#" and (i == 0 or text[i - 1] in " \t"):
            return text[:i].rstrip()
    return text.rstrip()


def _find_colon(text: str) -> int:
    """Where the `: ` that ends a plain key is in `text`, or -1."""
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        if ch == "#" and (i == 0 or text[i - 1] in " \t"):
            return -1
        if ch == ":" and (i + 1 == n or text[i + 1] in " \t"):
            return i
        i += 1
    return -1


class _Reader:
    """A recursive-descent reader over the document's lines."""

    def __init__(self, text: str, wandb: bool = False):
        self.wandb = wandb
        self.lines: list[_Line] = []
        self.raw = text.split("\n")
        self.i = 0
        self._split_lines()

    # -- lines ---------------------------------------------------------------

    def _split_lines(self) -> None:
        started = False
        for number, raw in enumerate(self.raw, start=1):
            raw = raw.rstrip("\r")
            if raw.startswith("\ufeff") and number == 1:
                raw = raw[1:]
            if "\x00" in raw:
                raise _Error(number, "NUL byte in the document")
            body = raw.lstrip(" ")
            indent = len(raw) - len(body)
            if body.startswith("\t") and not _is_comment_or_blank(body):
                raise _Error(number, "tab in indentation (YAML indents with spaces)")
            if _is_comment_or_blank(body):
                # Kept as blank lines so block scalars see them.
                self.lines.append(_Line(number, -1, ""))
                continue
            if indent == 0 and (body == "---" or body.startswith("--- ") or
                                body.startswith("---\t")):
                rest = _strip_comment(body[3:])
                if started:
                    raise _Error(number, _SECOND_DOCUMENT)
                if rest:
                    raise _Error(number, "content on the line of '---' is not supported")
                started = True
                continue
            if indent == 0 and (body == "..." or body.startswith("... ")):
                for later in range(number, len(self.raw)):
                    if not _is_comment_or_blank(self.raw[later]):
                        raise _Error(later + 1, _SECOND_DOCUMENT)
                break
            if indent == 0 and body.startswith("%"):
                raise _Error(number, "directives (%YAML, %TAG) are not supported")
            started = True
            self.lines.append(_Line(number, indent, body))

    def _skip_blank(self) -> None:
        while self.i < len(self.lines) and self.lines[self.i].indent < 0:
            self.i += 1

    def _peek(self) -> Optional[_Line]:
        self._skip_blank()
        return self.lines[self.i] if self.i < len(self.lines) else None

    # -- document ------------------------------------------------------------

    def document(self) -> Any:
        line = self._peek()
        if line is None:
            raise _Error(1, _EMPTY_DOCUMENT)
        value = self._block(line.indent, 0)
        rest = self._peek()
        if rest is not None:
            raise _Error(rest.number, "unexpected indentation" if rest.indent > line.indent
                         else "text after the end of the document's top-level value")
        return value

    def _block(self, indent: int, depth: int) -> Any:
        """The node that starts at the current line, whose indentation is
        `indent`: a sequence, a mapping, or a single scalar/flow node."""
        line = self.lines[self.i]
        text = line.text
        if text == "-" or text.startswith("- ") or text.startswith("-\t"):
            return self._sequence(indent, depth)
        if self._mapping_key(line) is not None:
            return self._mapping(indent, depth)
        value = self._inline_value(line, text, indent, depth)
        return value

    def _sequence(self, indent: int, depth: int) -> list:
        if _deeper(depth):
            raise _Error(self.lines[self.i].number, _deeper(depth))
        out: list = []
        while True:
            line = self._peek()
            if line is None or line.indent < indent:
                return out
            if line.indent > indent:
                raise _Error(line.number, "unexpected indentation")
            text = line.text
            if not (text == "-" or text.startswith("- ") or text.startswith("-\t")):
                if self._mapping_key(line) is not None:
                    return out  # the parent mapping's next key (sequence at key indent)
                raise _Error(line.number, "expected '- ' (a sequence item)")
            rest = text[1:].lstrip(" \t")
            if not rest or rest.startswith("#"):
                self.i += 1
                nxt = self._peek()
                if nxt is not None and nxt.indent > indent:
                    out.append(self._block(nxt.indent, depth + 1))
                else:
                    out.append(None)
                continue
            # The item's content starts on the dash's line. A mapping or a
            # sequence there is read as a line of its own at the column where
            # it starts (its next lines align with it); anything else is a
            # value whose block (a `|` scalar) is indented from the dash.
            column = indent + (len(text) - len(rest))
            item = _Line(line.number, column, rest)
            if (rest == "-" or rest.startswith("- ") or rest.startswith("-\t") or
                    self._mapping_key(item) is not None):
                self.lines[self.i] = item
                out.append(self._block(column, depth + 1))
            else:
                out.append(self._inline_value(line, rest, indent, depth + 1))

    def _mapping_key(self, line: _Line) -> Optional[tuple[str, str]]:
        """(key, rest after the colon) when the line is `key: ...`, else None."""
        text = line.text
        if text == "-" or text.startswith("- ") or text.startswith("-\t"):
            return None
        if text[0] in "\"'":
            end = _quoted_end(text, 0)
            if end < 0:
                return None
            after = text[end:].lstrip(" \t")
            if not after.startswith(":") or (len(after) > 1 and after[1] not in " \t"):
                return None
            key = _no_nul(_quoted_value(text[:end], line.number), line.number, "a key")
            return key, after[1:].lstrip(" \t")
        if text[0] in "[{":
            return None
        if text.startswith("? ") or text == "?":
            raise _Error(line.number, "complex keys ('? ') are not supported")
        at = _find_colon(text)
        if at < 0:
            return None
        key = text[:at].rstrip(" \t")
        if not key:
            raise _Error(line.number, "a mapping key is empty")
        _check_plain_start(key, line.number)
        return key, text[at + 1:].lstrip(" \t")

    def _mapping(self, indent: int, depth: int) -> dict:
        if _deeper(depth):
            raise _Error(self.lines[self.i].number, _deeper(depth))
        out: dict = {}
        while True:
            line = self._peek()
            if line is None or line.indent < indent:
                return out
            if line.indent > indent:
                raise _Error(line.number, "unexpected indentation")
            pair = self._mapping_key(line)
            if pair is None:
                raise _Error(line.number, "expected 'key: value' (a mapping entry)")
            key, rest = pair
            if key in out:
                raise _Error(line.number, f"duplicate key {_quote(key)}")
            if not rest or rest.startswith("#"):
                self.i += 1
                nxt = self._peek()
                if nxt is not None and nxt.indent > indent:
                    out[key] = self._block(nxt.indent, depth + 1)
                elif nxt is not None and nxt.indent == indent and (
                        nxt.text == "-" or nxt.text.startswith("- ") or
                        nxt.text.startswith("-\t")):
                    out[key] = self._sequence(indent, depth + 1)
                else:
                    out[key] = None
                continue
            out[key] = self._inline_value(line, rest, indent, depth + 1)

    # -- values on one line --------------------------------------------------

    def _inline_value(self, line: _Line, text: str, indent: int, depth: int) -> Any:
        """The value written at the end of `line` (its text from `text` on):
        a flow collection (which may go on over the next lines), a block
        scalar header, or a scalar. Consumes the lines it uses."""
        tag = None
        if text.startswith("!"):
            m = re.match(r"(!!?[A-Za-z]*)(?:[ \t]+|$)", text)
            if not m:
                raise _Error(line.number, f"tag {_quote(text.split()[0])} is not supported")
            tag = m.group(1)
            if tag not in ("!", "!!str", "!!int", "!!float", "!!bool", "!!null", "!!seq",
                           "!!map"):
                raise _Error(line.number, f"tag {_quote(_tag_name(tag))} is not supported")
            text = text[m.end():]
            if not text or text.startswith("#"):
                # The tagged node is the block below.
                self.i += 1
                nxt = self._peek()
                if nxt is not None and nxt.indent > indent:
                    value = self._block(nxt.indent, depth + 1)
                else:
                    value = None if tag != "!!str" else ""
                return _check_collection_tag(tag, value, line.number, None)
        if text.startswith("&") or text.startswith("*"):
            raise _anchor_error(text, line.number)
        if text[0] in "[{":
            value = self._flow(line, text, depth)
            return _check_collection_tag(tag, value, line.number, None)
        if text[0] in "|>":
            value = self._block_scalar(line, text, indent)
            return _tagged(tag, value, None, line.number, self.wandb) if tag else value
        if text[0] in "\"'":
            end = _quoted_end(text, 0)
            if end < 0:
                raise _Error(line.number, "quoted scalar not closed on its line (multi-line "
                             "quoted scalars are not supported)")
            rest = text[end:].strip(" \t")
            if rest and not rest.startswith("#"):
                raise _Error(line.number, f"text after a quoted scalar: {_quote(rest)}")
            value = _no_nul(_quoted_value(text[:end], line.number), line.number)
            self.i += 1
            self._no_continuation(indent)
            return _tagged(tag, value, None, line.number, self.wandb) if tag else value
        plain = _strip_comment(text)
        if plain == "-" or plain.startswith("- ") or plain.startswith("-\t"):
            raise _Error(line.number, "a sequence cannot start on this line")
        _check_plain_start(plain, line.number)
        if ": " in plain or plain.endswith(":"):
            raise _Error(line.number, f"a mapping cannot start on this line: {_quote(plain)}")
        self.i += 1
        self._no_continuation(indent)
        if tag:
            return _tagged(tag, plain, plain, line.number, self.wandb)
        return resolve_plain(plain, line.number, self.wandb)

    def _no_continuation(self, indent: int) -> None:
        nxt = self._peek()
        if nxt is not None and nxt.indent > indent:
            raise _Error(nxt.number, "unexpected indentation (multi-line plain scalars are "
                         "not supported)")

    def _flow(self, line: _Line, text: str, depth: int) -> Any:
        """A flow collection starting at `text`; joins the following lines
        until its brackets close."""
        start = line.number
        source = text
        self.i += 1
        parser = _Flow(source, start, depth, self.wandb)
        while True:
            try:
                value = parser.parse()
                break
            except _NeedMore:
                # Read on: the collection goes on over the next raw lines.
                if self.i >= len(self.lines):
                    raise _Error(start, "flow collection not closed") from None
                nxt = self.lines[self.i]
                self.i += 1
                raw = self.raw[nxt.number - 1].rstrip("\r")
                source += "\n" + raw
                parser = _Flow(source, start, depth, self.wandb)
        return value

    def _block_scalar(self, line: _Line, header: str, indent: int) -> str:
        m = re.match(r"([|>])([1-9])?([-+])?([1-9])?[ \t]*(?:#.*)?$", header)
        if not m or (m.group(2) and m.group(4)):
            raise _Error(line.number, f"bad block scalar header {_quote(header)}")
        style = m.group(1)
        explicit = m.group(2) or m.group(4)
        chomp = m.group(3) or ""
        self.i += 1
        # The scalar's lines: every raw line after the header that is blank or
        # indented more than the parent node.
        first = self.i
        raw_lines: list[tuple[int, str]] = []
        j = first
        while j < len(self.lines):
            ln = self.lines[j]
            raw = self.raw[ln.number - 1].rstrip("\r")
            if ln.indent >= 0 and ln.indent <= indent:
                break
            # Blank and comment-only lines (indent -1) go in too: blank ones
            # are empty lines of the scalar, and a `#` line indented into
            # the scalar is text; one less indented ends it (below).
            raw_lines.append((ln.number, raw))
            j += 1
        if explicit:
            content_indent = indent + int(explicit)
        else:
            content_indent = None
            for _, raw in raw_lines:
                lead = len(raw) - len(raw.lstrip(" "))
                if raw.strip() and not (raw.lstrip(" ").startswith("#") and lead <= indent):
                    content_indent = lead
                    break
            if content_indent is None:
                content_indent = indent + 1
        body: list[str] = []
        consumed = 0
        for number, raw in raw_lines:
            if raw.strip() == "":
                body.append("")
                consumed += 1
                continue
            lead = len(raw) - len(raw.lstrip(" "))
            if lead < content_indent:
                if raw.lstrip(" ").startswith("#"):
                    break  # a comment after the scalar
                raise _Error(number, "block scalar line less indented than its first line")
            body.append(raw[content_indent:])
            consumed += 1
        self.i = first + consumed
        trailing_blanks = 0
        while body and body[-1] == "":
            body.pop()
            trailing_blanks += 1
        if not body:
            return "\n" * trailing_blanks if chomp == "+" else ""
        text = "\n".join(body) if style == "|" else _fold(body)
        if chomp == "-":
            return text
        if chomp == "+":
            return text + "\n" * (trailing_blanks + 1)
        return text + "\n"


def _fold(body: list[str]) -> str:
    """Folds the lines of a `>` scalar: lines join with a space, n blank
    lines give n line breaks, and the breaks around more-indented lines
    are kept."""
    out: list[str] = []
    started = False
    prev_more = False
    blanks = 0
    for line in body:
        if line == "":
            blanks += 1
            continue
        more = line[0] in " \t"
        if not started:
            out.append("\n" * blanks)
        elif more or prev_more:
            out.append("\n" * (blanks + 1))
        elif blanks:
            out.append("\n" * blanks)
        else:
            out.append(" ")
        out.append(line)
        started = True
        prev_more = more
        blanks = 0
    return "".join(out)


def _check_collection_tag(tag: Optional[str], value: Any, line: int, plain: Optional[str]) -> Any:
    if tag is None or tag == "!":
        return value
    if tag in ("!!seq", "!!map"):
        if isinstance(value, list if tag == "!!seq" else dict):
            return value
        what = ("a sequence" if isinstance(value, list) else
                "a mapping" if isinstance(value, dict) else "a scalar")
        raise _Error(line, f"tag {_quote(_tag_name(tag))} is not supported on {what}")
    if isinstance(value, (list, dict)):
        raise _Error(line, f"tag {tag} on a collection")
    if value is None and tag == "!!null":
        return None
    raise _Error(line, f"tag {tag} needs a scalar on its line")


def _check_plain_start(text: str, line: int) -> None:
    if not text:
        return
    if text[0] in "&*":
        raise _anchor_error(text, line)
    if text[0] in "@`":
        raise _Error(line, f"a plain scalar cannot start with {text[0]!r}: quote it")
    if text[0] == "!":
        raise _Error(line, f"tag {_quote(text.split()[0])} is not supported")
    if text[0] == "%":
        raise _Error(line, "a plain scalar cannot start with '%': quote it")


def _quoted_end(text: str, start: int) -> int:
    """The index just after the quoted scalar that starts at `start`, or -1
    when it does not close in `text`."""
    quote = text[start]
    i = start + 1
    n = len(text)
    while i < n:
        ch = text[i]
        if quote == "'":
            if ch == "'":
                if i + 1 < n and text[i + 1] == "'":
                    i += 2
                    continue
                return i + 1
        else:
            if ch == "\\":
                i += 2
                continue
            if ch == '"':
                return i + 1
        if ch == "\n":
            return -1
        i += 1
    return -1


_ESCAPES = {"0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v",
            "f": "\f", "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\",
            "N": "\x85", "_": "\xa0", "L": "\u2028", "P": "\u2029"}
_HEX_LEN = {"x": 2, "u": 4, "U": 8}


def _quoted_value(token: str, line: int) -> str:
    """The string of a whole quoted token (quotes included)."""
    body = token[1:-1]
    if token[0] == "'":
        return body.replace("''", "'")
    out = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        if i + 1 >= len(body):
            raise _Error(line, "a backslash ends the quoted scalar")
        esc = body[i + 1]
        if esc in _ESCAPES:
            out.append(_ESCAPES[esc])
            i += 2
        elif esc in _HEX_LEN:
            digits = body[i + 2:i + 2 + _HEX_LEN[esc]]
            if len(digits) != _HEX_LEN[esc] or not re.fullmatch(r"[0-9a-fA-F]+", digits):
                raise _Error(line, f"bad escape \\{esc}{digits}")
            out.append(chr(int(digits, 16)))
            i += 2 + _HEX_LEN[esc]
        else:
            raise _Error(line, f"unknown escape \\{esc}")
    return "".join(out)


class _NeedMore(Exception):
    """The flow collection goes on past the text read so far."""


class _Flow:
    """A flow collection (`[...]`, `{...}`) over a piece of text that may
    span several lines."""

    def __init__(self, text: str, first_line: int, depth: int, wandb: bool = False):
        self.wandb = wandb
        self.text = text
        self.pos = 0
        self.first_line = first_line
        self.depth = depth

    def line(self) -> int:
        return self.first_line + self.text.count("\n", 0, self.pos)

    def error(self, message: str) -> _Error:
        return _Error(self.line(), message)

    def parse(self) -> Any:
        value = self.node(self.depth)
        self.space()
        rest = self.text[self.pos:]
        if rest.strip():
            raise self.error(f"text after a flow collection: {_quote(rest.strip())}")
        return value

    def space(self) -> None:
        """Skips whitespace, line breaks and comments."""
        text = self.text
        while self.pos < len(text):
            ch = text[self.pos]
            if ch in " \t\n\r":
                self.pos += 1
            elif ch == "#" and (self.pos == 0 or text[self.pos - 1] in " \t\n"):
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            else:
                return

    def peek(self) -> str:
        self.space()
        if self.pos >= len(self.text):
            raise _NeedMore()
        return self.text[self.pos]

    def node(self, depth: int) -> Any:
        ch = self.peek()
        if ch in "[{" and _deeper(depth):
            raise self.error(_deeper(depth))
        if ch == "[":
            return self.sequence(depth)
        if ch == "{":
            return self.mapping(depth)
        return self.scalar(key=False)

    def sequence(self, depth: int) -> list:
        self.pos += 1
        out: list = []
        while True:
            ch = self.peek()
            if ch == "]":
                self.pos += 1
                return out
            if ch == ",":
                raise self.error("empty entry in a flow sequence")
            item = self.node(depth + 1)
            ch = self.peek()
            if ch == ":":
                raise self.error("single-pair mappings inside a flow sequence are not "
                                 "supported; write {key: value}")
            out.append(item)
            if ch == ",":
                self.pos += 1
            elif ch != "]":
                raise self.error(f"expected ',' or ']' in a flow sequence, found {ch!r}")

    def mapping(self, depth: int) -> dict:
        self.pos += 1
        out: dict = {}
        while True:
            ch = self.peek()
            if ch == "}":
                self.pos += 1
                return out
            if ch == ",":
                raise self.error("empty entry in a flow mapping")
            if ch in "[{":
                raise self.error("a flow mapping's key must be a scalar")
            key_line = self.line()
            key = self.scalar(key=True)
            if not isinstance(key, str):
                key = "" if key is None else str(key)
            if key in out:
                raise _Error(key_line, f"duplicate key {_quote(key)}")
            ch = self.peek()
            if ch == ":":
                self.pos += 1
                ch = self.peek()
                if ch in ",}":
                    out[key] = None
                else:
                    out[key] = self.node(depth + 1)
                ch = self.peek()
            else:
                out[key] = None
            if ch == ",":
                self.pos += 1
            elif ch != "}":
                raise self.error(f"expected ',' or '}}' in a flow mapping, found {ch!r}")

    def scalar(self, key: bool) -> Any:
        """A scalar inside a flow collection. Keys come back as the text
        written (plain) or the quoted string."""
        text = self.text
        ch = self.peek()
        if ch in "\"'":
            end = _quoted_end(text, self.pos)
            if end < 0:
                if "\n" not in text[self.pos:] and not text.endswith("\n"):
                    raise _NeedMore()
                raise self.error("multi-line quoted scalars are not supported")
            value = _no_nul(_quoted_value(text[self.pos:end], self.line()), self.line(),
                            "a key" if key else "a string")
            self.pos = end
            return value
        if ch in "&*":
            raise _anchor_error(text[self.pos:], self.line())
        if ch == "!":
            m = re.compile(r"(!!?[A-Za-z]*)[ \t]+").match(text, self.pos)
            if not m or m.group(1) not in ("!", "!!str", "!!int", "!!float", "!!bool",
                                          "!!null"):
                token = re.compile(r"[^ \t,\[\]{}]*").match(text, self.pos).group(0)
                raise self.error(f"tag {_quote(_tag_name(token))} is not supported")
            tag = m.group(1)
            self.pos = m.end()
            line = self.line()
            if self.peek() in "\"'":
                value = self.scalar(key)
                return _tagged(tag, value, None, line, self.wandb)
            plain = self.plain()
            return _tagged(tag, plain, plain, line, self.wandb)
        if ch in "@`|>%":
            raise self.error(f"a plain scalar cannot start with {ch!r}: quote it")
        line = self.line()
        plain = self.plain()
        if key:
            return plain
        return resolve_plain(plain, line, self.wandb)

    def plain(self) -> str:
        """A plain scalar in flow context: up to `,`, `[`, `]`, `{`, `}`,
        a `: `, a ` #` or the end of the line."""
        text = self.text
        start = self.pos
        i = start
        n = len(text)
        while i < n:
            ch = text[i]
            if ch in ",[]{}\n":
                break
            if ch == ":" and (i + 1 == n or text[i + 1] in " \t\n,[]{}"):
                break
            if ch == "#" and i > start and text[i - 1] in " \t":
                break
            i += 1
        if i == n:
            raise _NeedMore()
        self.pos = i
        value = text[start:i].strip(" \t")
        if "\n" in text[start:i]:
            raise self.error("multi-line plain scalars are not supported")
        return value


def parse_subset(text: str, wandb: bool = False) -> Any:
    """Reads one YAML document with the built-in reader (no PyYAML needed);
    ValueError("line N: ...") for what it cannot read. `wandb`: W&B mode
    (module docstring)."""
    if not isinstance(text, str):
        raise TypeError("parse_subset() takes the document as a str")
    return _Reader(text, wandb).document()


# ---------------------------------------------------------------------------
# PyYAML, made to read the same way.

_core_loader: Optional[type] = None
_wandb_loader: Optional[type] = None


def _make_core_loader() -> Optional[type]:
    """A PyYAML SafeLoader reading YAML 1.2's core schema, with string keys,
    no duplicate keys, no aliases; None without PyYAML."""
    global _core_loader
    if _core_loader is not None:
        return _core_loader
    try:
        import yaml
    except ImportError:
        return None

    class CoreLoader(yaml.SafeLoader):  # type: ignore[misc,valid-type]
        """YAML 1.2 core schema on top of PyYAML's SafeLoader."""

    dropped = {"tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
               "tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:merge",
               "tag:yaml.org,2002:value", "tag:yaml.org,2002:null"}
    CoreLoader.yaml_implicit_resolvers = {
        first: [r for r in resolvers if r[0] not in dropped]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    CoreLoader.add_implicit_resolver("tag:yaml.org,2002:null", _NULL_RE,
                                     ["~", "n", "N", ""])
    CoreLoader.add_implicit_resolver("tag:yaml.org,2002:bool", _BOOL_RE, list("tTfF"))
    CoreLoader.add_implicit_resolver("tag:yaml.org,2002:int", _INT_RE, list("-+0123456789"))
    CoreLoader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_RE,
                                     list("-+0123456789."))
    CoreLoader.add_implicit_resolver("tag:yaml.org,2002:float", _NONFINITE_RE, list("-+."))

    def mark_line(node: Any) -> int:
        return node.start_mark.line + 1

    def construct_int(loader: Any, node: Any) -> int:
        text = loader.construct_scalar(node)
        if not _INT_RE.match(text):
            raise _Error(mark_line(node), f"{_quote(text)} is not a !!int")
        return _int(text, mark_line(node))

    def construct_float(loader: Any, node: Any) -> float:
        text = loader.construct_scalar(node)
        return _tagged("!!float", text, text, mark_line(node))

    def construct_bool(loader: Any, node: Any) -> bool:
        text = loader.construct_scalar(node)
        return _tagged("!!bool", text, text, mark_line(node))

    def construct_null(loader: Any, node: Any) -> None:
        text = loader.construct_scalar(node)
        return _tagged("!!null", text, text, mark_line(node))

    def construct_mapping(loader: Any, node: Any, deep: bool = False) -> dict:
        if not isinstance(node, yaml.MappingNode):
            what = "a sequence" if isinstance(node, yaml.SequenceNode) else "a scalar"
            raise _Error(mark_line(node),
                         f"tag 'tag:yaml.org,2002:map' is not supported on {what}")
        out: dict = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                what = "a sequence" if isinstance(key_node, yaml.SequenceNode) else "a mapping"
                raise _Error(mark_line(key_node), f"a key must be a scalar, not {what}")
            key = key_node.value
            if key in out:
                raise _Error(mark_line(key_node), f"duplicate key {_quote(key)}")
            out[key] = loader.construct_object(value_node, deep=deep)
        return out

    def construct_sequence(loader: Any, node: Any, deep: bool = False) -> list:
        if not isinstance(node, yaml.SequenceNode):
            what = "a mapping" if isinstance(node, yaml.MappingNode) else "a scalar"
            raise _Error(mark_line(node),
                         f"tag 'tag:yaml.org,2002:seq' is not supported on {what}")
        return [loader.construct_object(child, deep=deep) for child in node.value]

    def construct_map(loader: Any, node: Any) -> Any:
        data: dict = {}
        yield data
        data.update(construct_mapping(loader, node))

    def compose_node(loader: Any, parent: Any, index: Any) -> Any:
        if loader.check_event(yaml.AliasEvent):
            event = loader.peek_event()
            raise _anchor_error("*" + event.anchor, event.start_mark.line + 1)
        event = loader.peek_event()
        if getattr(event, "anchor", None):
            raise _anchor_error("&" + event.anchor, event.start_mark.line + 1)
        if isinstance(event, yaml.ScalarEvent):
            # A mapping's key is composed with index None (Composer.compose_mapping_node).
            key = isinstance(parent, yaml.MappingNode) and index is None
            _no_nul(event.value, event.start_mark.line + 1, "a key" if key else "a string")
        tag = getattr(event, "tag", None)
        if tag == "!" and isinstance(event, yaml.ScalarEvent):
            event.tag = "tag:yaml.org,2002:str"  # the non-specific tag: a string
        if tag not in (None, "!") and (not tag.startswith("tag:yaml.org,2002:") or tag[18:]
                                       not in ("str", "int", "float", "bool", "null", "seq",
                                               "map")):
            raise _Error(event.start_mark.line + 1, f"tag {_quote(tag)} is not supported")
        if not isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            return yaml.composer.Composer.compose_node(loader, parent, index)
        # PyYAML composes (and constructs) recursively: bounded here, as
        # the reader above is, a deep file is a line's error.
        depth = getattr(loader, "_rung_depth", 0)
        if _deeper(depth):
            raise _Error(event.start_mark.line + 1, _deeper(depth))
        loader._rung_depth = depth + 1
        try:
            return yaml.composer.Composer.compose_node(loader, parent, index)
        finally:
            loader._rung_depth = depth

    CoreLoader.compose_node = compose_node  # type: ignore[method-assign]
    CoreLoader.construct_mapping = construct_mapping  # type: ignore[method-assign]
    CoreLoader.construct_sequence = construct_sequence  # type: ignore[method-assign]
    CoreLoader.add_constructor("tag:yaml.org,2002:int", construct_int)
    CoreLoader.add_constructor("tag:yaml.org,2002:float", construct_float)
    CoreLoader.add_constructor("tag:yaml.org,2002:bool", construct_bool)
    CoreLoader.add_constructor("tag:yaml.org,2002:null", construct_null)
    CoreLoader.add_constructor("tag:yaml.org,2002:map", construct_map)
    _core_loader = CoreLoader
    return CoreLoader


def _make_wandb_loader() -> Optional[type]:
    """CoreLoader in W&B mode: yes/no/on/off are booleans too; None without
    PyYAML."""
    global _wandb_loader
    if _wandb_loader is not None:
        return _wandb_loader
    core = _make_core_loader()
    if core is None:
        return None

    class WandbLoader(core):  # type: ignore[misc,valid-type]
        """CoreLoader with YAML 1.1's yes/no/on/off booleans."""

    WandbLoader.yaml_implicit_resolvers = {
        first: list(resolvers) for first, resolvers in core.yaml_implicit_resolvers.items()}
    WandbLoader.add_implicit_resolver("tag:yaml.org,2002:bool", _BOOL11_RE, list("yYnNoO"))

    def construct_bool(loader: Any, node: Any) -> bool:
        text = loader.construct_scalar(node)
        return _tagged("!!bool", text, text, node.start_mark.line + 1, True)

    WandbLoader.add_constructor("tag:yaml.org,2002:bool", construct_bool)
    _wandb_loader = WandbLoader
    return WandbLoader


def _load_pyyaml(text: str, loader: type) -> Any:
    import yaml

    documents = []
    try:
        stream = loader(text)
        try:
            while stream.check_node():
                start = stream.peek_event().start_mark.line + 1  # the "---", or the content
                if documents:
                    raise _Error(start, _SECOND_DOCUMENT)
                node = stream.get_node()
                if isinstance(node, yaml.ScalarNode) and node.value == "" and \
                        node.style is None and node.tag == "tag:yaml.org,2002:null":
                    raise _Error(start, _EMPTY_DOCUMENT)  # "---" and nothing else
                documents.append(stream.construct_document(node))
        finally:
            stream.dispose()
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark is not None else 1
        problem = err.problem or err.context or "invalid YAML"
        if err.context and err.problem:
            problem = f"{err.problem} ({err.context})"
        raise _Error(line, problem) from None
    except yaml.YAMLError as err:
        raise ValueError(f"line 1: {err}") from None
    if not documents:
        raise _Error(1, _EMPTY_DOCUMENT)  # blank, or comments only
    return documents[0]


def load_yaml(text: str, wandb: bool = False) -> Any:
    """The value of one YAML document (module docstring: YAML 1.2's core
    schema, string keys, no duplicate keys; `wandb`: W&B mode). Uses PyYAML
    when it is installed, else the built-in reader; ValueError("line N:
    ...") on errors."""
    if not isinstance(text, str):
        raise TypeError("load_yaml() takes the document as a str")
    loader = _make_wandb_loader() if wandb else _make_core_loader()
    if loader is None:
        return parse_subset(text, wandb)
    return _load_pyyaml(text, loader)


def _pyyaml_core_loader(wandb: bool = False) -> Optional[Callable[[str], Any]]:
    """For tests: the PyYAML path of load_yaml, or None without PyYAML."""
    loader = _make_wandb_loader() if wandb else _make_core_loader()
    if loader is None:
        return None
    return lambda text: _load_pyyaml(text, loader)


# ---------------------------------------------------------------------------
# Files, read as `rung submit` reads them (cli/experiments.c).


def read_document(path: str) -> str:
    """The text of a spec or sweep file (`-`: stdin), newlines as Python's
    text files give them. ValueError when it is larger than MAX_FILE_BYTES
    (read no further: a mistaken path to a data file is not loaded whole)
    or not UTF-8; OSError when it cannot be read."""
    if path == "-":
        data = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
    else:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(f"larger than {MAX_FILE_BYTES >> 20} MiB; is it a spec?")
    try:
        return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8").read()
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None


def load_json(text: str) -> Any:
    """json.loads, with a document nested deeper than Python's recursion
    allows refused as YAML's are (ValueError "line N: nested deeper than 32
    levels") instead of a RecursionError."""
    try:
        return json.loads(text)
    except RecursionError:
        pass
    depth, line, quoted, escaped = 0, 1, False, False
    for ch in text:  # only for such a document: find the line at fault
        if quoted:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
        elif ch in "[{":
            if _deeper(depth):
                break
            depth += 1
        elif ch in "]}":
            depth -= 1
        if ch == "\n":
            line += 1
    raise _Error(line, f"nested deeper than {_MAX_DEPTH} levels")
