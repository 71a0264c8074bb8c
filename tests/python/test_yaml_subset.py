"""rung._yaml: the built-in YAML reader (parse_subset) and load_yaml.

The built-in reader runs here whether or not PyYAML is installed (it is
called directly). With PyYAML, every fixture is also read by PyYAML, both
through load_yaml (YAML 1.2's core schema on PyYAML) and by plain
yaml.safe_load, which follows YAML 1.1: the only differences allowed from
the latter are the scalars that YAML 1.1 reads otherwise (`1e-5` is a
string there, `yes` a boolean, `0o17` a string).
"""

from __future__ import annotations

import glob
import os
import re
import sys
import unittest
from typing import Any
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))

from rung import _yaml  # noqa: E402
from rung._yaml import load_yaml, parse_subset  # noqa: E402

try:
    import yaml
except ImportError:  # the built-in reader is then load_yaml's only path
    yaml = None

FIXTURES = sorted(glob.glob(os.path.join(HERE, "fixtures", "*.yaml")))
_FLOAT12 = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")


def read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def yaml11_differences(ours: Any, theirs: Any, path: str = "") -> list[str]:
    """Paths where `ours` (YAML 1.2 core) and `theirs` (PyYAML's YAML 1.1
    safe_load) differ. A difference that YAML 1.1 explains (an exponent
    float without a dot read as a string, yes/no/on/off as booleans, 0o
    integers as strings) is listed with a `~` in front; any other with a `!`."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        out = []
        if [str(k) for k in ours] != [str(k) for k in theirs]:
            return [f"!{path}: keys {list(ours)} != {list(theirs)}"]
        for (k, a), b in zip(ours.items(), theirs.values()):
            out += yaml11_differences(a, b, f"{path}.{k}" if path else str(k))
        return out
    if isinstance(ours, list) and isinstance(theirs, list):
        if len(ours) != len(theirs):
            return [f"!{path}: lengths differ"]
        out = []
        for i, (a, b) in enumerate(zip(ours, theirs)):
            out += yaml11_differences(a, b, f"{path}[{i}]")
        return out
    if type(ours) is type(theirs) and ours == theirs:
        return []
    if isinstance(ours, float) and isinstance(theirs, str) and _FLOAT12.match(theirs) \
            and float(theirs) == ours:
        return [f"~{path}"]
    if isinstance(ours, str) and isinstance(theirs, bool) and \
            ours.lower() in ("yes", "no", "on", "off", "y", "n"):
        return [f"~{path}"]
    if isinstance(ours, int) and isinstance(theirs, str) and theirs.startswith("0o") and \
            int(theirs[2:], 8) == ours:
        return [f"~{path}"]
    return [f"!{path}: {ours!r} != {theirs!r}"]


class FixtureTest(unittest.TestCase):
    """Every fixture under fixtures/: the built-in reader against PyYAML."""

    def test_fixtures_exist(self) -> None:
        self.assertGreaterEqual(len(FIXTURES), 4, FIXTURES)

    def test_builtin_reader_reads_every_fixture(self) -> None:
        for path in FIXTURES:
            with self.subTest(fixture=os.path.basename(path)):
                value = parse_subset(read(path))
                self.assertIsInstance(value, dict)

    @unittest.skipIf(yaml is None, "PyYAML is not installed: nothing to compare the built-in "
                     "reader with")
    def test_same_as_pyyaml_core_schema(self) -> None:
        core = _yaml._pyyaml_core_loader()
        for path in FIXTURES:
            with self.subTest(fixture=os.path.basename(path)):
                text = read(path)
                self.assertEqual(parse_subset(text), core(text))
                self.assertEqual(load_yaml(text), core(text))

    @unittest.skipIf(yaml is None, "PyYAML is not installed: nothing to compare the built-in "
                     "reader with")
    def test_same_as_safe_load_but_for_yaml_1_1(self) -> None:
        explained = {}
        for path in FIXTURES:
            with self.subTest(fixture=os.path.basename(path)):
                text = read(path)
                diffs = yaml11_differences(parse_subset(text), yaml.safe_load(text))
                self.assertEqual([d for d in diffs if d.startswith("!")], [])
                explained[os.path.basename(path)] = diffs
        # W&B's own example writes 1e-5 without a dot: YAML 1.1 (PyYAML's
        # safe_load, and so W&B) reads the three values as strings.
        self.assertEqual(explained["wandb_bayes_hyperband.yaml"],
                         ["~parameters.decay.values[0]", "~parameters.decay.values[1]",
                          "~parameters.decay.values[2]"])
        self.assertEqual(explained["yaml_features.yaml"], [])
        self.assertEqual(explained["wandb_random.yaml"], [])

    def test_features_fixture_values(self) -> None:
        doc = parse_subset(read(os.path.join(HERE, "fixtures", "yaml_features.yaml")))
        self.assertEqual(doc["name"], 'features: quoted "name"\t\u00e9')
        self.assertEqual(doc["single"], "it's single")
        self.assertEqual(doc["plain"], "a plain string with spaces")
        self.assertEqual(doc["url"], "http://example.com:8080/path")
        self.assertEqual(doc["numbers"], [0, -7, 3, 1.5, 0.5, -2500.0, 0.0001, 12.0])
        self.assertEqual([type(v) for v in doc["numbers"][:3]], [int, int, int])
        self.assertEqual(doc["nulls"], [None] * 4)
        self.assertIsNone(doc["empty_value"])
        self.assertEqual(doc["flow_map"], {"a": 1, "b c": ["x", "y", {"z": None}], "d": None})
        self.assertEqual(doc["multi_line_flow"], ["alpha", "beta", {"gamma": 3, "delta": [4, 5]}])
        self.assertEqual(doc["seq_at_key_indent"],
                         ["one", {"two": 2, "three": 3}, ["nested", "list"], {"deeper": True}])
        self.assertEqual(doc["indented_seq"], [1, 2])
        self.assertEqual(doc["literal"], "line one\n  indented\n# not a comment\n\nafter a blank\n")
        self.assertEqual(doc["folded"], "folded text\nnew paragraph")
        self.assertEqual(doc["keep"], "kept\n\n")
        self.assertEqual(doc["strip"], "stripped")
        self.assertEqual(doc["tagged"], {"s": "12", "f": 3.0, "i": 7})
        self.assertEqual(doc["quoted key"], "value")
        self.assertEqual(doc["single key"], "value")


class CoreSchemaTest(unittest.TestCase):
    """Plain scalars resolve by YAML 1.2's core schema, in both readers."""

    CASES = [
        ("1e-4", 1e-4), ("-2.5E+3", -2500.0), ("1.", 1.0), (".5", 0.5), ("+3", 3),
        ("007", 7), ("0o17", 15), ("0x1F", 31), ("true", True), ("False", False),
        ("TRUE", True), ("yes", "yes"), ("no", "no"), ("on", "on"), ("off", "off"),
        ("~", None), ("null", None), ("", None), ("2024-01-01", "2024-01-01"),
        ("1_000", "1_000"), ("1:30", "1:30"), ("0b101", "0b101"), ("-x", "-x"),
        ("'1e-4'", "1e-4"), ('"true"', "true"), ("!!str 1e-4", "1e-4"),
        ("!!float 1", 1.0), ("!!float 1e-5", 1e-5), ("!!int 0x10", 16), ("!!bool true", True),
        ("!!null ''", None), ("! 12", "12"),
    ]

    def readers(self) -> list:
        out = [("builtin", parse_subset)]
        if yaml is not None:
            out.append(("pyyaml", _yaml._pyyaml_core_loader()))
        return out

    def test_scalars(self) -> None:
        for name, read_doc in self.readers():
            for text, expected in self.CASES:
                with self.subTest(reader=name, scalar=text):
                    value = read_doc(f"v: {text}\n")["v"]
                    self.assertEqual(value, expected)
                    self.assertIs(type(value), type(expected))

    def test_keys_are_strings_as_written(self) -> None:
        for name, read_doc in self.readers():
            with self.subTest(reader=name):
                self.assertEqual(read_doc("1: a\ntrue: b\nnull: c\n1.5: d\n"),
                                 {"1": "a", "true": "b", "null": "c", "1.5": "d"})
                self.assertEqual(read_doc("{1: a, 0x2: b}"), {"1": "a", "0x2": "b"})

    def test_non_finite_numbers_are_errors(self) -> None:
        for name, read_doc in self.readers():
            for text in (".inf", "-.inf", ".NaN", "!!float .inf"):
                with self.subTest(reader=name, scalar=text):
                    with self.assertRaisesRegex(ValueError,
                                                r"^line 2: .*infinite and NaN numbers are not"):
                        read_doc(f"a: 1\nv: {text}\n")
            with self.subTest(reader=name, scalar="quoted"):
                self.assertEqual(read_doc("v: '.inf'\n"), {"v": ".inf"})

    def test_empty_document_is_an_error(self) -> None:
        # As in `rung submit` (cli/yaml.h): an empty spec is a mistake, said
        # as one rather than as "not a mapping".
        for name, read_doc in self.readers():
            with self.subTest(reader=name):
                for text in ("", "# only a comment\n\n", "---\n", "--- # empty\n...\n"):
                    with self.assertRaisesRegex(ValueError, "^line 1: empty document"):
                        read_doc(text)
                self.assertEqual(read_doc("just text\n"), "just text")
                self.assertEqual(read_doc("- 1\n- 2\n"), [1, 2])


class ErrorTest(unittest.TestCase):
    """Errors are ValueError("line N: ...") with the line at fault."""

    CASES = [
        ("a: 1\nb: 2\na: 3\n", 3, "duplicate key 'a'"),
        ("m: {x: 1, x: 2}\n", 1, "duplicate key 'x'"),
        ("a: &anchor 1\nb: *anchor\n", 1, "anchors (&anchor) are not supported"),
        ("a: 1\nb: !python/object x\n", 2, "tag '!python/object' is not supported"),
        ("a: [1, 2\nb: 3\n", None, ""),
        ("a:\n\tb: 1\n", 2, ""),
        ("a: 1\n  b: 2\n", 2, ""),
        ("a: 1\n---\nb: 2\n", None, ""),
        ("a: \"open\nb: 1\n", None, ""),
        ("a: b: c\n", 1, ""),
        ("a: 1\n- b\n", 2, ""),
        ("a: -\n", 1, ""),
        ("a: !!int 1.5\n", 1, "'1.5' is not a !!int"),
    ]

    def test_builtin_reader_names_the_line(self) -> None:
        for text, line, words in self.CASES:
            with self.subTest(text=text):
                with self.assertRaises(ValueError) as ctx:
                    parse_subset(text)
                message = str(ctx.exception)
                self.assertRegex(message, r"^line \d+: ")
                if line is not None:
                    self.assertTrue(message.startswith(f"line {line}: "), message)
                self.assertIn(words, message)

    @unittest.skipIf(yaml is None, "PyYAML is not installed")
    def test_pyyaml_path_names_the_line(self) -> None:
        for text, line, words in self.CASES:
            with self.subTest(text=text):
                with self.assertRaises(ValueError) as ctx:
                    load_yaml(text)
                self.assertRegex(str(ctx.exception), r"^line \d+: ")
                if words:
                    self.assertIn(words, str(ctx.exception))

    def test_what_the_builtin_reader_refuses(self) -> None:
        for text, words in [
            ("? complex\n: key\n", "complex keys"),
            ("%YAML 1.2\n---\na: 1\n", "directives"),
            ("a: [x: 1]\n", "single-pair mappings"),
            ("a: @x\n", "cannot start with '@'"),
            ("a: plain\n  continued\n", "multi-line plain"),
        ]:
            with self.subTest(text=text):
                with self.assertRaisesRegex(ValueError, "^line [12]: .*" + re.escape(words)):
                    parse_subset(text)

    def test_not_a_string(self) -> None:
        with self.assertRaises(TypeError):
            parse_subset(b"a: 1")  # type: ignore[arg-type]
        with self.assertRaises(TypeError):
            load_yaml(b"a: 1")  # type: ignore[arg-type]

    def test_depth_is_bounded(self) -> None:
        deep = "[" * 100 + "]" * 100
        with self.assertRaisesRegex(ValueError, "nested deeper"):
            parse_subset(deep)

    @staticmethod
    def nested(n: int) -> dict[str, str]:
        """Documents of n collections, one inside the other."""
        return {
            "block": "".join("  " * i + "a:\n" for i in range(n - 1)) + "  " * (n - 1) + "x: 1\n",
            "flow": "a: " + "[" * (n - 1) + "1" + "]" * (n - 1) + "\n",
            "sequence": "".join("  " * i + "-\n" for i in range(n - 1)) + "  " * (n - 1) + "- 1\n",
        }

    def readers(self) -> list:
        return [parse_subset] + ([_yaml._pyyaml_core_loader()] if yaml is not None else [])

    def test_the_c_clients_depth_bound(self) -> None:
        # cli/yaml.c takes 32 collections, one inside the other, and refuses
        # the 33rd: both readers here do the same, by its line.
        for reader in self.readers():
            for kind, text in self.nested(32).items():
                with self.subTest(reader=reader, kind=kind, n=32):
                    reader(text)
            for kind, text in self.nested(33).items():
                with self.subTest(reader=reader, kind=kind, n=33):
                    line = 1 if kind == "flow" else 33
                    with self.assertRaisesRegex(ValueError,
                                                f"^line {line}: nested deeper than 32 levels$"):
                        reader(text)

    def test_a_thousand_levels_is_a_line_not_a_recursion_error(self) -> None:
        # PyYAML composes recursively: 1,000 levels raised RecursionError.
        for reader in self.readers():
            for kind, text in self.nested(1000).items():
                with self.subTest(reader=reader, kind=kind):
                    with self.assertRaisesRegex(ValueError, "^line [0-9]+: nested deeper"):
                        reader(text)
        with self.assertRaisesRegex(ValueError, "^line 2: nested deeper than 32 levels$"):
            _yaml.load_json('{"a": "[[[\\"[",\n "b": ' + "[" * 5000 + "]" * 5000 + "}")
        self.assertEqual(_yaml.load_json("[[1]]"), [[1]])


class ReadDocumentTest(unittest.TestCase):
    """read_document: a spec or sweep file, at most 64 MiB as `rung submit`
    reads (cli/experiments.c)."""

    def test_size_bound(self) -> None:
        import tempfile

        folder = tempfile.mkdtemp()
        path = os.path.join(folder, "big.yaml")
        try:
            with open(path, "wb") as f:
                f.truncate(_yaml.MAX_FILE_BYTES + 1)  # sparse: no time to write
            with self.assertRaisesRegex(ValueError, r"^larger than 64 MiB; is it a spec\?$"):
                _yaml.read_document(path)
            with open(path, "wb") as f:
                f.write(b"a: 1\r\nb: \xc3\xa9\r\n")
            self.assertEqual(_yaml.read_document(path), "a: 1\nb: \u00e9\n")
            with open(path, "wb") as f:
                f.write(b"a: \xff\n")
            with self.assertRaisesRegex(ValueError, "not UTF-8"):
                _yaml.read_document(path)
        finally:
            os.unlink(path)
            os.rmdir(folder)


class WithoutPyYAMLTest(unittest.TestCase):
    """load_yaml falls back to the built-in reader when PyYAML cannot be
    imported."""

    def test_fallback(self) -> None:
        text = read(os.path.join(HERE, "fixtures", "wandb_random.yaml"))
        with mock.patch.dict(sys.modules, {"yaml": None}), \
                mock.patch.object(_yaml, "_core_loader", None):
            self.assertIsNone(_yaml._make_core_loader())
            with mock.patch.object(_yaml, "parse_subset", wraps=_yaml.parse_subset) as spy:
                value = _yaml.load_yaml(text)
                spy.assert_called_once()
        self.assertEqual(value, parse_subset(text))
        self.assertEqual(value["parameters"]["batch_size"]["q"], 8)


if __name__ == "__main__":
    unittest.main()
