"""The shared W&B sweep corpus (tests/data/wandb/, README.md there): every
sweep file, read in the YAML readers' W&B mode and converted by
rung.convert.wandb_to_spec, gives the spec of NAME.json or is refused with a
message starting as NAME.error says, as cli/wandb.c must too
(tests/unit/test_wandb.c walks the same folder).
"""

from __future__ import annotations

import glob
import json
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(ROOT, "tests", "data", "wandb")
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, HERE)

from rung import _yaml  # noqa: E402
from rung.convert import wandb_to_spec  # noqa: E402
from test_yaml_corpus import readers, same  # noqa: E402


class WandbCorpusTest(unittest.TestCase):
    CASES = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(CORPUS, "*.yaml")))

    def test_corpus_is_there(self) -> None:
        self.assertGreaterEqual(len(self.CASES), 15)
        for name in self.CASES:
            with self.subTest(case=name):
                answers = [os.path.exists(os.path.join(CORPUS, name + ext))
                           for ext in (".json", ".error")]
                self.assertEqual(sum(answers), 1, "one of NAME.json and NAME.error")

    def test_every_sweep(self) -> None:
        for reader, read in readers(wandb=True):
            for name in self.CASES:
                with open(os.path.join(CORPUS, name + ".yaml"), encoding="utf-8") as f:
                    sweep = read(f.read())
                json_path = os.path.join(CORPUS, name + ".json")
                with self.subTest(reader=reader, case=name):
                    if os.path.exists(json_path):
                        with open(json_path, encoding="utf-8") as f:
                            want = json.load(f)
                        got = wandb_to_spec(sweep)
                        self.assertTrue(same(got, want), f"got {got!r}, want {want!r}")
                    else:
                        with open(os.path.join(CORPUS, name + ".error"), encoding="utf-8") as f:
                            want = f.readline().strip()
                        with self.assertRaises(ValueError) as ctx:
                            wandb_to_spec(sweep)
                        self.assertTrue(str(ctx.exception).startswith(want),
                                        f"{str(ctx.exception)!r} against {want!r}")

    def test_from_wandb_reads_in_wandb_mode(self) -> None:
        # from_wandb reads the file itself: yes/no as W&B's booleans.
        from rung.convert import from_wandb
        exp = from_wandb(os.path.join(CORPUS, "yaml11_spellings.yaml"))
        self.assertEqual(exp.spec()["search_space"]["amsgrad"],
                         {"type": "choice", "values": [True, False]})
        self.assertEqual(_yaml.load_yaml("a: yes\n")["a"], "yes")  # the default stays


if __name__ == "__main__":
    unittest.main()
