"""A working directory packed for rungd (docs/api.md, "Blobs"): the files a
`.rungignore` (gitignore syntax) and the default rules leave in, as an
uncompressed pax tar whose bytes depend only on the files (sorted names,
owner 0, no user names, mtime 0, modes 0644/0755), so the same folder gives
the same SHA-256 and a second upload sends nothing. The rules are
cli/ignore.h's, and both pass tests/data/rungignore/cases.json."""

import hashlib
import io
import os
import stat
import tarfile
import tempfile
from typing import Optional

MAX_ENTRIES = 100000  # what a worker's unpack takes (worker/ckpt.h)
DEFAULTS = ("__pycache__/", "*.pyc", ".venv/", "venv/")


def _class_match(glob: str, i: int, c: str):
    """(matched, index after the class) for the class at glob[i] == '[',
    or None when it is not closed (then '[' is literal)."""
    p = i + 1
    neg = p < len(glob) and glob[p] in "!^"
    if neg:
        p += 1
    first, hit = p, False
    while p < len(glob) and (glob[p] != "]" or p == first):
        lo = glob[p]
        if lo == "\\" and p + 1 < len(glob):
            p += 1
            lo = glob[p]
        if p + 2 < len(glob) and glob[p + 1] == "-" and glob[p + 2] != "]":
            if lo <= c <= glob[p + 2]:
                hit = True
            p += 2
        elif c == lo:
            hit = True
        p += 1
    if p >= len(glob):
        return None
    return (hit != neg and c != "/"), p + 1


def glob_match(g: str, s: str) -> bool:
    """Whether glob g matches s as .gitignore does ('*' and '?' stop at '/')."""
    i = j = 0
    while i < len(g):
        if g.startswith("**", i) and (i + 2 == len(g) or g[i + 2] == "/"):
            if i + 2 == len(g):
                return True
            for t in range(j, len(s) + 1):
                if (t == j or s[t - 1] == "/") and glob_match(g[i + 3:], s[t:]):
                    return True
            return False
        if g[i] == "*":
            while i < len(g) and g[i] == "*":
                i += 1
            t = j
            while True:
                if glob_match(g[i:], s[t:]):
                    return True
                if t == len(s) or s[t] == "/":
                    return False
                t += 1
        if j == len(s):
            return False
        if g[i] == "?":
            if s[j] == "/":
                return False
            i, j = i + 1, j + 1
            continue
        if g[i] == "[":
            m = _class_match(g, i, s[j])
            if m is not None:
                if not m[0]:
                    return False
                i, j = m[1], j + 1
                continue
        if g[i] == "\\" and i + 1 < len(g):
            i += 1
        if g[i] != s[j]:
            return False
        i, j = i + 1, j + 1
    return j == len(s)


class Ignore:
    """The rules of a .rungignore after the defaults (cli/ignore.h)."""

    def __init__(self, text: str = ""):
        self.rules = []  # (glob, negate, dir_only, anchored, fixed)
        self._add(".git/", fixed=True)
        for d in DEFAULTS:
            self._add(d)
        for line in text.split("\n"):
            self._add(line[:-1] if line.endswith("\r") else line)

    def _add(self, line: str, fixed: bool = False) -> None:
        n = len(line)
        while n > 0 and line[n - 1] == " " and (n < 2 or line[n - 2] != "\\"):
            n -= 1
        line = line[:n]
        if not line or line[0] == "#":
            return
        negate = False
        if line[0] == "!":
            negate, line = True, line[1:]
        elif line[0] == "\\" and len(line) > 1 and line[1] in "#!":
            line = line[1:]
        dir_only = line.endswith("/")
        if dir_only:
            line = line[:-1]
        if not line:
            return
        anchored = "/" in line
        if line.startswith("/"):
            line = line[1:]
        if not line:
            return
        if line.startswith("**/") and "/" not in line[3:]:
            line, anchored = line[3:], False
        self.rules.append((line, negate, dir_only, anchored, fixed))

    def packed(self, path: str, is_dir: bool, venv: bool = False) -> bool:
        """Whether `path` (relative, '/'-separated, a folder's without its
        trailing '/') is packed by the rules alone."""
        result = not (is_dir and venv)
        base = path.rsplit("/", 1)[-1]
        for glob, negate, dir_only, anchored, fixed in self.rules:
            if dir_only and not is_dir:
                continue
            if not glob_match(glob, path if anchored else base):
                continue
            if fixed:
                return False
            result = negate
        return result


class PackError(ValueError):
    """A working directory that cannot be packed; the message names the path."""


def _link_inside(rel: str, target: str) -> bool:
    if not target or target.startswith("/"):
        return False
    depth = rel.count("/")
    for part in target.split("/"):
        if part == "..":
            depth -= 1
            if depth < 0:
                return False
        elif part not in ("", "."):
            depth += 1
    return True


def _entries(top: str, ignore: Ignore):
    """(relative path, lstat) of what is packed, sorted as the C client
    sorts (byte order of each folder's names), folders before their files."""
    count = 0

    def walk(rel: str):
        nonlocal count
        full = os.path.join(top, rel) if rel else top
        for name in sorted(os.listdir(full), key=os.fsencode):
            child = f"{rel}/{name}" if rel else name
            path = os.path.join(top, child)
            st = os.lstat(path)
            is_dir = stat.S_ISDIR(st.st_mode)
            venv = is_dir and os.path.exists(os.path.join(path, "pyvenv.cfg"))
            if not ignore.packed(child, is_dir, venv):
                continue
            count += 1
            if count > MAX_ENTRIES:
                raise PackError(f"{top} holds more than {MAX_ENTRIES} files and folders: "
                                "leave some out in .rungignore")
            yield child, st
            if is_dir:
                yield from walk(child)

    yield from walk("")


def pack(top: Optional[str], out, extra: Optional[dict] = None) -> dict:
    """Writes the tar of folder `top` to the binary file `out`; returns
    {"sha256", "size", "files", "bytes"}. `extra` ({name: bytes}) adds files
    at the top of the tree after the folder's (a name the folder has too is
    refused); with `top` None the tar holds only them."""
    if top is not None and not os.path.isdir(top):
        raise PackError(f"{top}: not a folder")
    text = ""
    try:
        if top is not None:
            with open(os.path.join(top, ".rungignore"), encoding="utf-8",
                      errors="replace") as f:
                text = f.read(1 << 20)
    except FileNotFoundError:
        pass
    ignore = Ignore(text)
    extra = dict(extra or {})
    sha = hashlib.sha256()
    stats = {"files": 0, "bytes": 0, "size": 0}

    class Hashing(io.RawIOBase):
        def writable(self):
            return True

        def tell(self):
            return stats["size"]

        def write(self, b):
            out.write(b)
            sha.update(b)
            stats["size"] += len(b)
            return len(b)

    sink = Hashing()
    with tarfile.open(fileobj=sink, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for rel, st in (_entries(top, ignore) if top is not None else ()):
            if rel in extra:
                raise PackError(f"{rel}: the working directory has a file of this name, which "
                                "Rung adds itself; rename it")
            info = tarfile.TarInfo(rel)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = 0
            path = os.path.join(top, rel)
            if stat.S_ISDIR(st.st_mode):
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tf.addfile(info)
            elif stat.S_ISREG(st.st_mode):
                info.mode = 0o755 if st.st_mode & 0o111 else 0o644
                info.size = st.st_size
                with open(path, "rb") as f:
                    tf.addfile(info, f)
                stats["files"] += 1
                stats["bytes"] += st.st_size
            elif stat.S_ISLNK(st.st_mode):
                target = os.readlink(path)
                if not _link_inside(rel, target):
                    raise PackError(f"{rel} is a symbolic link to {target}, outside the working "
                                    "directory: a worker could not follow it; copy the file in, "
                                    "or leave the link out in .rungignore")
                info.type, info.mode, info.linkname = tarfile.SYMTYPE, 0o777, target
                tf.addfile(info)
                stats["files"] += 1
            else:
                raise PackError(f"{rel} is not a file, folder or link (a FIFO, socket or "
                                "device): leave it out in .rungignore")
        for name in sorted(extra):
            info = tarfile.TarInfo(name)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime, info.mode, info.size = 0, 0o644, len(extra[name])
            tf.addfile(info, io.BytesIO(extra[name]))
            stats["files"] += 1
            stats["bytes"] += len(extra[name])
    stats["sha256"] = sha.hexdigest()
    return stats


def upload(client, top: Optional[str], say=None, extra: Optional[dict] = None) -> str:
    """Packs `top` (and `extra`, as pack), uploads it unless rungd holds it,
    and returns the spec's value for trainable.working_dir ("sha256:<hex>").
    `say(line)` gets the same line `rung submit --working-dir` prints."""
    with tempfile.TemporaryFile() as f:
        info = pack(top, f, extra)
        sent = False
        if not client.blob_held(info["sha256"]):
            f.seek(0)
            client.put_blob(info["sha256"], f, info["size"])
            sent = True
    if say is not None:
        say("working_dir: %d files, %d bytes, sha256:%s… %s"
            % (info["files"], info["bytes"], info["sha256"][:12],
               "uploaded" if sent else "already on rungd"))
    return "sha256:" + info["sha256"]




def download_artifacts(client, trial_id: int, dest: str) -> str:
    """GET a trial's artifacts, check them against the hash of its trial
    object, and unpack them into dest: plain files and folders with
    relative names only (no '..', links or devices)."""
    want = (client.get_trial(trial_id).get("artifacts") or {}).get("sha256")
    data = client.get_artifacts(trial_id)
    got = hashlib.sha256(data).hexdigest()
    if want is None or got != want:
        raise PackError(f"trial {trial_id}: the artifacts received hash to {got}, not "
                        f"{want or '(none given)'}: nothing unpacked")
    with tarfile.open(fileobj=io.BytesIO(data)) as tf:
        members = tf.getmembers()
        for m in members:
            parts = m.name.split("/")
            if m.name.startswith("/") or ".." in parts or not (m.isfile() or m.isdir()):
                raise PackError(f"trial {trial_id}: the artifacts hold {m.name}, which is not "
                                "a plain file or folder inside: nothing unpacked")
        os.makedirs(dest, exist_ok=True)
        for m in members:
            path = os.path.join(dest, *m.name.split("/"))
            if m.isdir():
                os.makedirs(path, exist_ok=True)
                continue
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with tf.extractfile(m) as src, open(path, "wb") as out:
                out.write(src.read())
            os.chmod(path, 0o755 if m.mode & 0o111 else 0o644)
    return dest
