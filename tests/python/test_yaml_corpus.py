"""The shared YAML corpus (tests/data/yaml/, README.md there): every
document, read by each Python reader, gives the JSON of NAME.json or is
refused with the error of NAME.err (in W&B mode: NAME.wandb.json or
NAME.wandb.err where there is one), as cli/yaml.c must too
(tests/unit/test_yaml.c walks the same folder). The readers: the built-in
one (parse_subset), and load_yaml on PyYAML where PyYAML is installed.
"""

from __future__ import annotations

import glob
import json
import math
import os
import re
import sys
import unittest
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(ROOT, "tests", "data", "yaml")
sys.path.insert(0, os.path.join(ROOT, "python"))

from rung import _yaml  # noqa: E402


def readers(wandb: bool = False) -> list[tuple[str, Callable[[str], Any]]]:
    out = [("builtin", lambda text: _yaml.parse_subset(text, wandb))]
    core = _yaml._pyyaml_core_loader(wandb)
    if core is not None:
        out.append(("pyyaml", core))
    return out


def answer(name: str, wandb: bool) -> str:
    """The path of NAME's answer: NAME.json or NAME.err, or in W&B mode
    NAME.wandb.json or NAME.wandb.err where the corpus has one."""
    stems = [name + ".wandb", name] if wandb else [name]
    for stem in stems:
        for ext in (".json", ".err"):
            path = os.path.join(CORPUS, stem + ext)
            if os.path.exists(path):
                return path
    raise AssertionError(f"{name}: neither {name}.json nor {name}.err")


def same(a: Any, b: Any) -> bool:
    """JSON equality as jansson's json_equal has it: 1 and 1.0 differ (an
    integer and a real), key order does not matter."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return math.isfinite(a) and a == b
    return a == b


def error_matches(message: str, want: str) -> bool:
    """NAME.err is "line N", optionally ": FRAGMENT": the message starts with
    "line N: " (libyaml's "line N, column C: " in C) and holds FRAGMENT."""
    line, _, fragment = want.partition(":")
    m = re.match(rf"^{re.escape(line)}(, column [0-9]+)?: ", message)
    return m is not None and fragment.strip() in message[m.end():]


class CorpusTest(unittest.TestCase):
    CASES = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(CORPUS, "*.yaml")))

    def test_corpus_is_there(self) -> None:
        # A corpus that vanished, or a case without its answer, must not pass.
        self.assertGreaterEqual(len(self.CASES), 40)
        for name in self.CASES:
            with self.subTest(case=name):
                answers = [os.path.exists(os.path.join(CORPUS, name + ext))
                           for ext in (".json", ".err")]
                self.assertEqual(sum(answers), 1, "one of NAME.json and NAME.err")
                answers = [os.path.exists(os.path.join(CORPUS, name + ext))
                           for ext in (".wandb.json", ".wandb.err")]
                self.assertLessEqual(sum(answers), 1, "at most one W&B mode answer")
        # W&B mode reads some documents otherwise, and the corpus says so.
        self.assertIn("wandb_yaml11", self.CASES)

    def test_every_reader_passes_every_document(self) -> None:
        self.check_every_document(wandb=False)

    def test_every_reader_passes_every_document_in_wandb_mode(self) -> None:
        self.check_every_document(wandb=True)

    def check_every_document(self, wandb: bool) -> None:
        for reader, read in readers(wandb):
            for name in self.CASES:
                with open(os.path.join(CORPUS, name + ".yaml"), encoding="utf-8") as f:
                    text = f.read()
                path = answer(name, wandb)
                with self.subTest(reader=reader, case=name, wandb=wandb):
                    if path.endswith(".json"):
                        with open(path, encoding="utf-8") as f:
                            want = json.load(f)
                        got = read(text)
                        self.assertTrue(same(got, want), f"got {got!r}, want {want!r}")
                    else:
                        with open(path, encoding="utf-8") as f:
                            want = f.readline().strip()
                        with self.assertRaises(ValueError) as ctx:
                            read(text)
                        self.assertTrue(error_matches(str(ctx.exception), want),
                                        f"{str(ctx.exception)!r} against {want!r}")

    def test_error_matching_can_fail(self) -> None:
        self.assertTrue(error_matches("line 3, column 2: did not find", "line 3"))
        self.assertTrue(error_matches("line 3: duplicate key 'a'", "line 3: duplicate key"))
        self.assertFalse(error_matches("line 30: duplicate key 'a'", "line 3"))
        self.assertFalse(error_matches("line 3: other", "line 3: duplicate key"))
        self.assertFalse(same({"a": 1}, {"a": 1.0}))
        self.assertFalse(same([True], [1]))


if __name__ == "__main__":
    unittest.main()
