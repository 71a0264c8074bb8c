"""Unit tests of rung._pack (python/rung/_pack.py): the working directory's
tar of docs/api.md (trainable.working_dir) as the Python client makes it.
The same folder must give the same bytes (so the same sha256, and a second
upload sends nothing), and what a worker could not unpack inside the tree is
refused here, naming the entry. The .rungignore rules run the shared corpus
tests/data/rungignore/cases.json, which cli/ignore.c's test_ignore runs too."""

import io
import json
import os
import sys
import tarfile
import tempfile
import unittest

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(REPO, "python"))

from rung import _pack  # noqa: E402


def write(top, rel, text, mode=0o644):
    path = os.path.join(top, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


class PackTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.top = os.path.join(self.tmp.name, "work")
        os.makedirs(self.top)

    def tearDown(self):
        self.tmp.cleanup()

    def packed(self):
        buf = io.BytesIO()
        stats = _pack.pack(self.top, buf)
        return buf.getvalue(), stats

    def test_the_rungignore_corpus(self):
        with open(os.path.join(REPO, "tests", "data", "rungignore", "cases.json")) as f:
            cases = json.load(f)["cases"]
        bad = []
        for case in cases:
            ig = _pack.Ignore(case["rungignore"])
            venvs = set(case.get("venvs", []))
            for path, want in case["paths"].items():
                is_dir = path.endswith("/")
                parts = path.rstrip("/").split("/")
                # A file inside an excluded folder is excluded (git's rule).
                got = all(ig.packed("/".join(parts[:k]), True, "/".join(parts[:k]) + "/" in venvs)
                          for k in range(1, len(parts)))
                got = got and ig.packed("/".join(parts), is_dir, is_dir and path in venvs)
                if got != want:
                    bad.append((case["name"], path, got))
        self.assertEqual(bad, [])
        self.assertGreaterEqual(len(cases), 25)

    def test_same_folder_same_bytes(self):
        write(self.top, "train.py", "print('hi')\n", 0o755)
        write(self.top, "pkg/__init__.py", "X = 1\n", 0o600)
        write(self.top, "pkg/__pycache__/x.pyc", "junk")
        write(self.top, "data/b.txt", "b\n")
        os.symlink("../data/b.txt", os.path.join(self.top, "pkg", "b.txt"))
        first, stats = self.packed()
        # Times and modes other than the executable bit must not change it.
        os.utime(os.path.join(self.top, "data", "b.txt"), (1, 1))
        os.chmod(os.path.join(self.top, "pkg", "__init__.py"), 0o664)
        second, again = self.packed()
        self.assertEqual(first, second)
        self.assertEqual(stats["sha256"], again["sha256"])
        import hashlib
        self.assertEqual(stats["sha256"], hashlib.sha256(first).hexdigest())
        self.assertEqual(stats["size"], len(first))
        with tarfile.open(fileobj=io.BytesIO(first)) as tf:
            members = tf.getmembers()
        names = [m.name for m in members]
        self.assertEqual(names, sorted(names))
        self.assertEqual(names, ["data", "data/b.txt", "pkg", "pkg/__init__.py", "pkg/b.txt",
                                 "train.py"])
        for m in members:
            self.assertEqual((m.uid, m.gid, m.uname, m.gname, m.mtime), (0, 0, "", "", 0), m.name)
        modes = {m.name: m.mode for m in members if not m.issym()}
        self.assertEqual(modes, {"data": 0o755, "data/b.txt": 0o644, "pkg": 0o755,
                                 "pkg/__init__.py": 0o644, "train.py": 0o755})

    def test_a_link_leaving_the_tree_is_refused_by_name(self):
        write(self.top, "ok.txt", "x")
        os.symlink("../../etc/passwd", os.path.join(self.top, "out"))
        with self.assertRaises(_pack.PackError) as caught:
            self.packed()
        self.assertIn("out is a symbolic link to ../../etc/passwd", str(caught.exception))
        os.remove(os.path.join(self.top, "out"))
        os.symlink("/etc/passwd", os.path.join(self.top, "abs"))
        with self.assertRaises(_pack.PackError) as caught:
            self.packed()
        self.assertIn("abs is a symbolic link to /etc/passwd", str(caught.exception))

    def test_a_fifo_is_refused_by_name(self):
        os.mkfifo(os.path.join(self.top, "pipe"))
        with self.assertRaises(_pack.PackError) as caught:
            self.packed()
        self.assertIn("pipe is not a file, folder or link", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
