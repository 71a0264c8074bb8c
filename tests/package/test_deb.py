"""The Debian packages rungd, rung-worker and rung (cmake/package.cmake,
packaging/README.md), made and checked the way an administrator would meet
them, without installing them on this machine.

It runs cpack itself into a temporary folder, then for each .deb:

- the name rungd_<version>_<arch>.deb and the fields Package, Version (the
  version the programs print), Architecture (dpkg's);
- Depends: for every library each program links (objdump's NEEDED) that a
  Debian package holds (dpkg -S), the package dpkg-shlibdeps must name,
  read from that package's symbols or shlibs file as dpkg-shlibdeps reads
  it, so the expectation follows the real linkage; rung-worker Recommends
  dataset-fashion-mnist;
- the files (dpkg -x): every program, unit, conf file, sysusers file,
  copyright, the dashboard with every file its page loads (uPlot's
  included), the schema, the docs, the examples and the Python client; no
  bench or test program; nothing outside /usr, /etc and /lib; no file in
  two packages; the conf files are conffiles; the maintainer scripts parse;
- the unpacked programs print "<name> <version>"; the unpacked Python
  client imports; the CUDA module, where it was built, sits where the
  unpacked rung-train looks for it and loads;
- the unpacked rungd serves the unpacked dashboard: its page and the uPlot
  files the page loads answer 200 with the unpacked files' bytes (marked to
  tell them from the source tree's), so the installed dashboard needs no
  `npm ci`;
- `systemd-analyze verify` accepts both units, their programs pointed at
  the unpacked ones; any warning fails;
- systemd-sysusers makes the users from the unpacked sysusers files, in a
  temporary root.

Run by ctest (label `package`) with the paths CMake knows; only the Python
standard library is used.
"""

import argparse
import ctypes
import glob
import http.client
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

ARGS = None  # the command line (main)

PROGRAMS = {"rungd": ["rungd"], "rung-worker": ["rung-worker", "rung-train"], "rung": ["rung"]}
UNITS = {"rungd": "rungd.service", "rung-worker": "rung-worker.service"}
# Every ELF file a package may hold: the programs and the CUDA module.
ALLOWED_ELF = {"rungd", "rung-worker", "rung-train", "rung", "librung-train-cuda.so"}
MARKER = "rung-package-test-marker"


def run(cmd, **kw):
    """Runs cmd; its stdout, or a failure that shows the command's output."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if p.returncode != 0:
        raise AssertionError("%s exited %d\nstdout:\n%s\nstderr:\n%s"
                             % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return p.stdout


def read(path):
    with open(path) as f:
        return f.read()


def elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def needed(path):
    """The sonames an ELF file names as NEEDED (objdump -p)."""
    return re.findall(r"^\s*NEEDED\s+(\S+)", run(["objdump", "-p", path]), re.M)


def resolved(path):
    """soname -> the file the dynamic loader picks for it (ldd)."""
    out = subprocess.run(["ldd", path], stdout=subprocess.PIPE, text=True).stdout
    return dict(re.findall(r"^\s*(\S+) => (/\S+)", out, re.M))


def owner(path):
    """The Debian package that holds a library file, or None. dpkg knows a
    file by the path it was unpacked at: with Debian 12's merged /usr that
    may be /lib/... where the loader says /usr/lib/..., or the other way
    round, and alternatives (libopenblas) are links to the real file."""
    candidates = []
    for p in (path, os.path.realpath(path)):
        candidates.append(p)
        if p.startswith("/usr/lib/"):
            candidates.append(p[len("/usr"):])
        elif p.startswith("/lib"):
            candidates.append("/usr" + p)
    for p in candidates:
        r = subprocess.run(["dpkg-query", "-S", p], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
        if r.returncode == 0:
            return r.stdout.split(":")[0].split(",")[0].strip()
    return None


def shlibs_dependency(pkg, soname):
    """The package name dpkg-shlibdeps puts in Depends for soname of pkg: from
    pkg's symbols file, else its shlibs file, else pkg itself."""
    def control(name):
        r = subprocess.run(["dpkg-query", "--control-path", pkg, name], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
        path = r.stdout.strip().splitlines()[0] if r.returncode == 0 and r.stdout.strip() else ""
        return read(path) if path else ""

    m = re.search(r"^%s\s+(\S+)" % re.escape(soname), control("symbols"), re.M)
    if m:
        return m.group(1)
    m = re.match(r"^(.*)\.so\.(.*)$", soname) or re.match(r"^(.*)-([0-9.]+)\.so$", soname)
    if m:
        line = re.search(r"^%s\s+%s\s+(\S+)" % (re.escape(m.group(1)), re.escape(m.group(2))),
                         control("shlibs"), re.M)
        if line:
            return line.group(1)
    return pkg


def depends_names(field):
    """Every package name in a Depends field, alternatives included."""
    names = set()
    for item in field.split(","):
        for alt in item.split("|"):
            if alt.strip():
                names.add(re.split(r"[\s(:]", alt.strip())[0])
    return names


def files_under(root):
    """Every file (not folder) under root, as paths relative to it."""
    out = set()
    for d, _, names in os.walk(root):
        for n in names:
            out.add(os.path.relpath(os.path.join(d, n), root))
    return out


def page_references(index_html):
    """The paths the dashboard's page loads: href/src and the import map."""
    refs = set(re.findall(r'(?:href|src)="(/[^"]+)"', index_html))
    m = re.search(r'<script type="importmap">(.*?)</script>', index_html, re.S)
    if m:
        refs.update(json.loads(m.group(1))["imports"].values())
    return refs


class Packages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="rung-package-")
        out = os.path.join(cls.tmp, "out")
        run([ARGS.cpack, "-G", "DEB", "--config", ARGS.config, "-B", out])
        cls.version = run([ARGS.rungd, "--version"]).split()[1]
        cls.arch = run(["dpkg", "--print-architecture"]).strip()
        cls.deb, cls.root, cls.files = {}, {}, {}
        for pkg in PROGRAMS:
            cls.deb[pkg] = os.path.join(out, "%s_%s_%s.deb" % (pkg, cls.version, cls.arch))
            if not os.path.exists(cls.deb[pkg]):
                raise AssertionError("cpack made no %s; %s holds %s" % (
                    os.path.basename(cls.deb[pkg]), out, sorted(os.listdir(out))))
            cls.root[pkg] = os.path.join(cls.tmp, "root-" + pkg)
            run(["dpkg-deb", "-x", cls.deb[pkg], cls.root[pkg]])
            cls.files[pkg] = files_under(cls.root[pkg])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def field(self, pkg, name):
        return run(["dpkg-deb", "-f", self.deb[pkg], name]).strip()

    def test_fields(self):
        for pkg in PROGRAMS:
            with self.subTest(pkg=pkg):
                self.assertEqual(self.field(pkg, "Package"), pkg)
                self.assertEqual(self.field(pkg, "Version"), self.version)
                self.assertEqual(self.field(pkg, "Architecture"), self.arch)
        self.assertIn("dataset-fashion-mnist", depends_names(self.field("rung-worker", "Recommends")))

    def test_depends_follow_the_linked_libraries(self):
        for pkg in PROGRAMS:
            depends = depends_names(self.field(pkg, "Depends"))
            for rel in sorted(self.files[pkg]):
                path = os.path.join(self.root[pkg], rel)
                if os.path.islink(path) or not elf(path):
                    continue
                where = resolved(path)
                for soname in needed(path):
                    if soname not in where:
                        continue  # the loader itself, or not on this machine
                    holder = owner(where[soname])
                    if holder is None:
                        continue  # no Debian package holds it (a CUDA toolkit)
                    want = shlibs_dependency(holder, soname)
                    with self.subTest(pkg=pkg, file=rel, soname=soname):
                        self.assertIn(want, depends, "%s links %s (%s, package %s): Depends is %s"
                                      % (rel, soname, where[soname], holder, sorted(depends)))

    def test_rungd_depends_on_its_core_libraries(self):
        # The same check, spelled out for the libraries rungd cannot run
        # without (the general check above would pass on an empty NEEDED).
        depends = depends_names(self.field("rungd", "Depends"))
        for lib in ("libmicrohttpd", "libsqlite3", "libjansson"):
            self.assertTrue(any(d.startswith(lib) for d in depends), (lib, depends))

    def expected_files(self):
        src = ARGS.source
        want = {
            "rungd": {"usr/bin/rungd", "lib/systemd/system/rungd.service", "etc/rung/rungd.conf",
                      "usr/lib/sysusers.d/rungd.conf", "usr/share/doc/rungd/copyright"},
            "rung-worker": {"usr/bin/rung-worker", "usr/bin/rung-train",
                            "lib/systemd/system/rung-worker.service",
                            "etc/rung/rung-worker.conf", "usr/lib/sysusers.d/rung-worker.conf",
                            "usr/share/doc/rung-worker/copyright"},
            "rung": {"usr/bin/rung", "usr/share/doc/rung/copyright", "usr/share/doc/rung/README.md"},
        }
        web = "usr/share/rung/web"
        refs = page_references(read(os.path.join(src, "web", "index.html")))
        self.assertIn("/node_modules/uplot/dist/uPlot.esm.js", refs)  # what the check relies on
        want["rungd"].update(web + r for r in refs)
        want["rungd"].update({web + "/index.html", web + "/style.css"})
        want["rungd"].update(web + "/" + os.path.relpath(p, os.path.join(src, "web"))
                             for p in glob.glob(os.path.join(src, "web", "js", "**", "*.js"),
                                                recursive=True))
        want["rungd"].update("usr/share/rung/schema/" + os.path.basename(p)
                             for p in glob.glob(os.path.join(src, "schema", "*.sql")))
        want["rung"].update("usr/share/doc/rung/docs/" + os.path.basename(p)
                            for p in glob.glob(os.path.join(src, "docs", "*.md")))
        want["rung"].update("usr/share/doc/rung/examples/" + rel
                            for rel in files_under(os.path.join(src, "examples"))
                            if "__pycache__" not in rel)
        # The package and its subpackages (rung._cli, the command line client).
        want["rung"].update("usr/lib/python3/dist-packages/rung/" + rel
                            for rel in files_under(os.path.join(src, "python", "rung"))
                            if rel.endswith(".py") and "__pycache__" not in rel)
        # The worker's own copy, put on trials' PYTHONPATH (worker/envs.h).
        want["rung-worker"].update("usr/share/rung-worker/python/rung/" + rel
                                   for rel in files_under(os.path.join(src, "python", "rung"))
                                   if rel.endswith(".py") and "__pycache__" not in rel)
        if ARGS.cuda_module:
            want["rung-worker"].add("usr/%s/rung/librung-train-cuda.so" % ARGS.libdir)
        return want

    def test_files(self):
        for pkg, want in self.expected_files().items():
            with self.subTest(pkg=pkg):
                self.assertEqual(sorted(want - self.files[pkg]), [], "missing from " + pkg)
                for rel in self.files[pkg]:
                    self.assertRegex(rel, r"^(usr|etc|lib)/", "outside /usr, /etc, /lib")
                    self.assertNotRegex(rel, r"(^|/)(bench|tests?)/|(^|/)test_|_bench$|fuzz_",
                                        "a bench or test file")
                    path = os.path.join(self.root[pkg], rel)
                    if not os.path.islink(path) and elf(path):
                        self.assertIn(os.path.basename(rel), ALLOWED_ELF, "a program not to ship")
        pkgs = list(PROGRAMS)
        for i, a in enumerate(pkgs):
            for b in pkgs[i + 1:]:
                self.assertEqual(self.files[a] & self.files[b], set(), "in both %s and %s" % (a, b))

    def test_control_files(self):
        for pkg in PROGRAMS:
            control = os.path.join(self.tmp, "control-" + pkg)
            run(["dpkg-deb", "-e", self.deb[pkg], control])
            conffiles = set()
            if os.path.exists(os.path.join(control, "conffiles")):
                conffiles = set(read(os.path.join(control, "conffiles")).split())
            with self.subTest(pkg=pkg):
                self.assertEqual(conffiles, {"/" + f for f in self.files[pkg] if f.startswith("etc/")})
                scripts = ["postinst", "prerm", "postrm"] if pkg in UNITS else ["prerm"]
                for s in scripts:
                    path = os.path.join(control, s)
                    self.assertTrue(os.access(path, os.X_OK), s + " missing or not executable")
                    run(["sh", "-n", path])

    def test_programs_print_their_version(self):
        for pkg, programs in PROGRAMS.items():
            for prog in programs:
                with self.subTest(program=prog):
                    out = run([os.path.join(self.root[pkg], "usr/bin", prog), "--version"])
                    self.assertEqual(out.strip(), "%s %s" % (prog, self.version))

    def test_python_client_imports(self):
        site = os.path.join(self.root["rung"], "usr/lib/python3/dist-packages")
        out = run([sys.executable, "-B", "-c", "import rung, sys; print(rung.__file__)"],
                  env=dict(os.environ, PYTHONPATH=site))
        self.assertTrue(out.strip().startswith(site), out)
        # `python3 -m rung`, whose commands live in the subpackage rung._cli.
        out = run([sys.executable, "-B", "-m", "rung", "--help"],
                  env=dict(os.environ, PYTHONPATH=site))
        self.assertIn("usage: python3 -m rung", out)

    def test_copyright_names_the_license(self):
        # Debian policy 12.5: the terms, here Apache-2.0 as in the repository's LICENSE.
        for pkg in PROGRAMS:
            with self.subTest(pkg=pkg):
                text = read(os.path.join(self.root[pkg], "usr/share/doc", pkg, "copyright"))
                self.assertIn("License: Apache-2.0", text)
                self.assertIn("/usr/share/common-licenses/Apache-2.0", text)

    def test_cuda_module_where_rung_train_looks(self):
        if not ARGS.cuda_module:
            self.skipTest("no CUDA module in this build (no nvcc)")
        root = self.root["rung-worker"]
        module = os.path.join(root, "usr", ARGS.libdir, "rung", "librung-train-cuda.so")
        # rung-train looks in this folder relative to its own (train_gpu.c).
        rel = os.path.relpath(os.path.dirname(module), os.path.join(root, "usr/bin")) + "/"
        with open(os.path.join(root, "usr/bin/rung-train"), "rb") as f:
            self.assertIn(rel.encode(), f.read(), "rung-train does not look in " + rel)
        # Stripped, it still loads and has its entry point (its CUDA
        # libraries are this machine's; no GPU is needed to load them).
        lib = ctypes.CDLL(module)
        self.assertTrue(hasattr(lib, "rung_train_cuda_backend"))

    def test_rungd_serves_the_installed_dashboard(self):
        root = self.root["rungd"]
        web = os.path.join(root, "usr/share/rung/web")
        uplot = "/node_modules/uplot/dist/uPlot.esm.js"
        # Marks the unpacked copies, so that an answer from the source tree's
        # web/ (the build's default) cannot pass for them.
        for rel, mark in (("/index.html", "<!-- %s -->\n" % MARKER), (uplot, "// %s\n" % MARKER)):
            self.assertTrue(os.path.exists(web + rel), "the package has no " + web + rel)
            with open(web + rel, "a") as f:
                f.write(mark)
        db = os.path.join(self.tmp, "rung.db")
        proc = subprocess.Popen([os.path.join(root, "usr/bin/rungd"), "--db", db, "--bind",
                                 "127.0.0.1", "--port", "0"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            port = self.wait_for_port(proc)
            refs = page_references(read(web + "/index.html"))
            for path in ["/"] + sorted(refs):
                with self.subTest(path=path):
                    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                    conn.request("GET", path)
                    r = conn.getresponse()
                    body = r.read()
                    conn.close()
                    self.assertEqual(r.status, 200, path)
                    if path in ("/", uplot):
                        self.assertIn(MARKER.encode(), body, path + " is not the unpacked file")
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            proc.stdout.close()
            proc.stderr.close()

    def wait_for_port(self, proc):
        """The port from rungd's line `listening on http://HOST:PORT`."""
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], 0.5)
            if ready:
                line = proc.stdout.readline()
                m = re.search(r"listening on http://\S+:(\d+)", line)
                if m:
                    return int(m.group(1))
                if not line:
                    break
        proc.kill()
        raise AssertionError("the unpacked rungd did not start: " + proc.stderr.read())

    def test_units_verify(self):
        for pkg, unit in UNITS.items():
            root = self.root[pkg]
            text = read(os.path.join(root, "lib/systemd/system", unit))
            # verify wants each program at its path: point the units at the
            # unpacked ones (/usr/bin/X -> <root>/usr/bin/X).
            programs = re.findall(r"(?<![\w/])/usr/bin/[\w.-]+", text)
            self.assertTrue(programs, unit + " starts no program of /usr/bin")
            for p in set(programs):
                self.assertTrue(os.path.exists(root + p), "%s runs %s, not in %s" % (unit, p, pkg))
                text = re.sub(r"(?<![\w/])%s(?![\w.-])" % re.escape(p), root + p, text)
            folder = os.path.join(self.tmp, "units-" + pkg)
            os.makedirs(folder)
            path = os.path.join(folder, unit)
            with open(path, "w") as f:
                f.write(text)
            p = subprocess.run(["systemd-analyze", "verify", path], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
            with self.subTest(unit=unit):
                # verify exits 0 on unknown keys and bad values, with a
                # warning: any output fails the test.
                self.assertEqual((p.returncode, p.stdout.strip()), (0, ""))

    def test_sysusers_make_the_users(self):
        root = os.path.join(self.tmp, "sysusers-root")
        os.makedirs(os.path.join(root, "etc"))
        for pkg in UNITS:
            folder = os.path.join(self.root[pkg], "usr/lib/sysusers.d")
            for name in os.listdir(folder):
                # systemd-sysusers reads a file given by absolute path as is.
                run(["systemd-sysusers", "--root=" + root, os.path.join(folder, name)])
        passwd = {l.split(":")[0]: l.split(":") for l in read(root + "/etc/passwd").splitlines()}
        group = {l.split(":")[0]: l.split(":") for l in read(root + "/etc/group").splitlines()}
        self.assertEqual(passwd["_rung"][5], "/var/lib/rung")
        self.assertEqual(passwd["_rung-worker"][5], "/var/lib/rung-worker")
        for g in ("video", "render"):
            self.assertIn("_rung-worker", group[g][3].split(","), g)
        # The units run as these users.
        for pkg, user in (("rungd", "_rung"), ("rung-worker", "_rung-worker")):
            unit = read(os.path.join(self.root[pkg], "lib/systemd/system", UNITS[pkg]))
            self.assertIn("\nUser=%s\n" % user, unit)


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cpack", required=True, help="the cpack program")
    ap.add_argument("--config", required=True, help="the build's CPackConfig.cmake")
    ap.add_argument("--source", required=True, help="the source tree")
    ap.add_argument("--rungd", required=True, help="the build's rungd (its --version)")
    ap.add_argument("--libdir", required=True, help="CMAKE_INSTALL_LIBDIR")
    ap.add_argument("--cuda-module", default="", help="the built CUDA module, if any")
    ARGS, rest = ap.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
