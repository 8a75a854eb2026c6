#!/usr/bin/env python3
"""Checks Shelfmark's Debian packages (ctest label package).

    tests/package/package_test.py PACKAGE_DIR SOURCE_DIR

PACKAGE_DIR holds the .deb files scripts/package.sh made (ctest's fixture
package_build runs it first). The packages are checked as an operator and a
developer would meet them:
  - contents: binaries, systemd units, /etc/default files marked as conffiles,
    maintainer scripts, the client library with its headers and CMake package;
  - dependencies: every shared library an ELF file in a package needs is
    provided by a package its Depends names (dpkg-shlibdeps' work, checked
    independently with objdump, ldconfig and dpkg -S);
  - units: `systemd-analyze verify` says nothing, `systemd-analyze security`
    rates them OK or better, and the hardening the README promises is there;
  - running: the binaries of the extracted packages answer --help, and a
    master and a node started with the flags of the packaged /etc/default
    files serve a put and a get from the packaged shelfmark-cli, and from a
    program outside the tree built with find_package(Shelfmark) against the
    extracted libshelfmark-dev; a store service started with its packaged
    flags (its SSD tier included) serves a Python dummy client of the
    extracted python3-shelfmark, whose embedded store and shelfmark-replay
    work too;
  - installing (as root, where systemd does not run): dpkg -i creates the
    user and state directories, the service user runs the master with the
    packaged defaults, Debian's python3 imports mooncake.store from the
    installed python3-shelfmark, dpkg --purge removes the files and keeps the
    data.
Everything runs in a temporary folder that is removed at the end; processes
started here are stopped.
"""

import glob
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

PACKAGE_DIR = ""
SOURCE_DIR = ""
ROOT = ""  # every package extracted here (dpkg-deb -x)
WORK = ""  # scratch: control files, builds, state of the test cluster

PACKAGES = ["shelfmark-master", "shelfmark-node", "shelfmark-store-service", "shelfmark-tools",
            "libshelfmark-dev", "python3-shelfmark"]
SERVICES = {"shelfmark-master": "/var/lib/shelfmark/snapshots",
            "shelfmark-node": "/var/lib/shelfmark/ssd",
            "shelfmark-store-service": "/var/lib/shelfmark/store-ssd"}
DIST_PACKAGES = "usr/lib/python3/dist-packages"


# mooncake.store from python3-shelfmark: argv master, service socket.
PYTHON_SMOKE = """
import os, sys
import _shelfmark
from mooncake.store import MooncakeDistributedStore
import shelfmark
master, socket = sys.argv[1:3]
embedded = MooncakeDistributedStore()
assert embedded.setup("127.0.0.1", "P2PHANDSHAKE", 16 << 20, 16 << 20, "tcp", "", master) == 0
assert embedded.put("package-test/embedded", b"embedded bytes") == 0
assert embedded.get("package-test/embedded") == b"embedded bytes"
assert embedded.close() == 0
dummy = MooncakeDistributedStore()
assert dummy.setup_dummy(0, 0, socket) == 0
assert dummy.put("package-test/dummy", b"through the service") == 0
assert dummy.get("package-test/dummy") == b"through the service"
dummy.close()
print("python ok", os.path.dirname(_shelfmark.__file__), shelfmark.__name__)
"""


def run(args, **kwargs):
    """Runs a command; returns CompletedProcess with text output."""
    kwargs.setdefault("capture_output", True)
    kwargs.setdefault("text", True)
    kwargs.setdefault("timeout", 300)
    return subprocess.run(args, check=False, **kwargs)


def deb_path(package):
    for name in os.listdir(PACKAGE_DIR):
        if name.startswith(package + "_") and name.endswith(".deb"):
            return os.path.join(PACKAGE_DIR, name)
    raise AssertionError(f"no {package}_*.deb in {PACKAGE_DIR} (run scripts/package.sh)")


def deb_field(package, field):
    result = run(["dpkg-deb", "-f", deb_path(package), field])
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def deb_files(package):
    """The paths a package installs, without the leading '.'."""
    result = run(["dpkg-deb", "-c", deb_path(package)])
    assert result.returncode == 0, result.stderr
    return {line.split()[-1].lstrip(".") for line in result.stdout.splitlines()}


def depends_names(package):
    """Package names in Depends (alternatives and versions dropped)."""
    names = set()
    for item in deb_field(package, "Depends").split(","):
        for alternative in item.split("|"):
            names.add(alternative.strip().split(" ")[0])
    return names


def control_dir(package):
    """The package's control files, unpacked once (dpkg-deb -e)."""
    path = os.path.join(WORK, "control", package)
    if not os.path.isdir(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        result = run(["dpkg-deb", "-e", deb_path(package), path])
        assert result.returncode == 0, result.stderr
    return path


def environment_file(path):
    """NAME=VALUE lines of a systemd EnvironmentFile (quotes removed)."""
    values = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, sep, value = line.partition("=")
            assert sep, f"{path}: not NAME=VALUE: {line!r}"
            values[name] = shlex.split(value)[0] if value else ""
    return values


def with_flags(flags, **overrides):
    """flags (a list of --name=value) with the named flags replaced or added."""
    out = [f for f in flags if f.split("=", 1)[0].lstrip("-") not in overrides]
    return out + [f"--{name}={value}" for name, value in overrides.items()]


def wait_for(predicate, what, timeout=60):
    """Polls predicate() until it returns a true value, or fails the test."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def elf_files(root):
    for directory, _, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as f:
                    if f.read(4) == b"\x7fELF":
                        yield path


def providing_package(soname):
    """The installed Debian package that holds the library `soname`."""
    cache = run(["ldconfig", "-p"]).stdout
    match = re.search(rf"^\s*{re.escape(soname)} \(libc6,x86-64[^)]*\) => (\S+)", cache, re.M)
    assert match, f"ldconfig does not know {soname}"
    path = os.path.realpath(match.group(1))
    for candidate in (match.group(1), path, path.replace("/usr/lib/", "/lib/", 1)):
        result = run(["dpkg", "-S", candidate])
        if result.returncode == 0:
            return result.stdout.split(":")[0].strip()
    raise AssertionError(f"no package holds {soname} ({path})")


class Contents(unittest.TestCase):
    def test_every_package_is_built(self):
        for package in PACKAGES:
            self.assertEqual(deb_field(package, "Package"), package)
            self.assertEqual(deb_field(package, "Architecture"), "amd64")

    def test_services_carry_binary_unit_defaults_and_scripts(self):
        for package in SERVICES:
            files = deb_files(package)
            for path in (f"/usr/bin/{package}", f"/lib/systemd/system/{package}.service",
                         f"/etc/default/{package}"):
                self.assertIn(path, files, package)
            with open(os.path.join(control_dir(package), "conffiles")) as f:
                self.assertEqual(f.read().split(), [f"/etc/default/{package}"])
            for script in ("postinst", "prerm", "postrm"):
                path = os.path.join(control_dir(package), script)
                self.assertTrue(os.access(path, os.X_OK), f"{package} {script}")
                self.assertEqual(run(["sh", "-n", path]).returncode, 0, f"{package} {script}")
            with open(os.path.join(control_dir(package), "postinst")) as f:
                postinst = f.read()
            # The dedicated user and the state directory the unit writes to.
            self.assertIn("adduser --system", postinst)
            self.assertIn(SERVICES[package], postinst)
            self.assertIn(f"deb-systemd-helper enable {package}.service", postinst)

    def test_the_store_service_has_a_package_of_its_own(self):
        self.assertNotIn("/usr/bin/shelfmark-store-service", deb_files("shelfmark-node"))
        # The packaged defaults turn its SSD tier on, in the package's state directory.
        defaults = environment_file(os.path.join(ROOT, "etc/default/shelfmark-store-service"))
        self.assertIn("--enable_offload",
                      shlex.split(defaults["SHELFMARK_STORE_SERVICE_FLAGS"]))
        self.assertEqual(defaults["MOONCAKE_OFFLOAD_FILE_STORAGE_PATH"],
                         SERVICES["shelfmark-store-service"])

    def test_python_package_cleans_its_byte_code_on_removal(self):
        path = os.path.join(control_dir("python3-shelfmark"), "prerm")
        self.assertTrue(os.access(path, os.X_OK))
        self.assertEqual(run(["sh", "-n", path]).returncode, 0)

    def test_python_package_carries_both_import_names(self):
        files = deb_files("python3-shelfmark")
        for path in ("mooncake/__init__.py", "mooncake/store.py", "shelfmark/__init__.py"):
            self.assertIn(f"/{DIST_PACKAGES}/{path}", files)
        self.assertTrue([p for p in files if re.fullmatch(
            rf"/{DIST_PACKAGES}/_shelfmark\.cpython-3\d+-x86_64-linux-gnu\.so", p)], files)
        self.assertIn("/usr/bin/shelfmark-replay", files)
        self.assertIn("python3", depends_names("python3-shelfmark"))
        self.assertRegex(deb_field("python3-shelfmark", "Depends"), r"python3 \(>= 3\.1[1-9]\)")
        self.assertEqual(deb_field("python3-shelfmark", "Recommends"), "python3-numpy")
        self.assertEqual(deb_field("python3-shelfmark", "Suggests"), "python3-torch")

    def test_tools_and_dev_contents(self):
        self.assertLessEqual({"/usr/bin/shelfmark-cli", "/usr/bin/shelfmark-perf"},
                             deb_files("shelfmark-tools"))
        dev = deb_files("libshelfmark-dev")
        for path in ("/usr/lib/x86_64-linux-gnu/libshelfmark_client.a",
                     "/usr/include/shelfmark/client/client.h",
                     "/usr/include/shelfmark/schemas/master.capnp.h",
                     "/usr/lib/x86_64-linux-gnu/cmake/Shelfmark/ShelfmarkConfig.cmake",
                     "/usr/lib/x86_64-linux-gnu/cmake/Shelfmark/ShelfmarkTargets.cmake"):
            self.assertIn(path, dev)
        self.assertFalse([p for p in dev if "CMakeFiles" in p or p.endswith("_test_util.h")])
        self.assertLessEqual({"libcapnp-dev", "libucx-dev", "pkg-config"},
                             depends_names("libshelfmark-dev"))


class Dependencies(unittest.TestCase):
    def test_depends_cover_every_needed_library(self):
        for package in ("shelfmark-master", "shelfmark-node", "shelfmark-store-service",
                        "shelfmark-tools", "python3-shelfmark"):
            tree = os.path.join(WORK, "deps", package)
            os.makedirs(tree)
            self.assertEqual(run(["dpkg-deb", "-x", deb_path(package), tree]).returncode, 0)
            depends = depends_names(package)
            elves = list(elf_files(tree))
            self.assertTrue(elves, package)
            for elf in elves:
                dump = run(["objdump", "-p", elf])
                self.assertEqual(dump.returncode, 0, dump.stderr)
                needed = re.findall(r"^\s*NEEDED\s+(\S+)", dump.stdout, re.M)
                self.assertTrue(needed, elf)
                for soname in needed:
                    self.assertIn(providing_package(soname), depends,
                                  f"{package}: {os.path.basename(elf)} needs {soname}")

    def test_services_depend_on_their_script_tools(self):
        for package in SERVICES:
            self.assertLessEqual({"adduser", "init-system-helpers"}, depends_names(package))


class Units(unittest.TestCase):
    def unit(self, package):
        """The packaged unit, its ExecStart pointed at the extracted binary."""
        with open(os.path.join(ROOT, f"lib/systemd/system/{package}.service")) as f:
            text = f.read()
        os.makedirs(os.path.join(WORK, "units"), exist_ok=True)
        path = os.path.join(WORK, "units", f"{package}.service")
        with open(path, "w") as f:
            f.write(text.replace(f"/usr/bin/{package}", os.path.join(ROOT, "usr/bin", package)))
        return text, path

    def test_systemd_analyze_verify_is_silent(self):
        for package in SERVICES:
            _, path = self.unit(package)
            result = run(["systemd-analyze", "verify", path])
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(result.stdout + result.stderr, "", package)

    def test_verify_would_catch_a_broken_unit(self):
        # The check above is worth something only if verify speaks up.
        path = os.path.join(WORK, "broken.service")
        with open(path, "w") as f:
            f.write("[Service]\nExecStart=/bin/true\nProtectSystm=strict\n")
        result = run(["systemd-analyze", "verify", path])
        self.assertIn("ProtectSystm", result.stdout + result.stderr)

    def test_hardening(self):
        for package, state in SERVICES.items():
            text, path = self.unit(package)
            for line in ("User=shelfmark", "Group=shelfmark", "ProtectSystem=strict",
                         "ProtectHome=yes", "NoNewPrivileges=yes", "PrivateTmp=yes",
                         "LimitMEMLOCK=infinity", "LimitNOFILE=1048576",
                         f"EnvironmentFile=-/etc/default/{package}",
                         f"StateDirectory=shelfmark shelfmark/{os.path.basename(state)}",
                         "Restart=on-failure"):
                self.assertIn(f"\n{line}\n", text, package)
            result = run(["systemd-analyze", "security", "--offline=true", path])
            rating = re.search(r"Overall exposure level for \S+: ([0-9.]+) (\w+)", result.stdout)
            self.assertTrue(rating, result.stdout + result.stderr)
            self.assertIn(rating.group(2), ("SAFE", "OK"), f"{package}: {rating.group(0)}")


class Cluster(unittest.TestCase):
    """A master and a node from the extracted packages, with their packaged
    /etc/default flags (ports, paths and sizes overridden for a test)."""

    procs = []

    @classmethod
    def start(cls, name, args, env_file, overrides_env):
        env = dict(os.environ)
        env.update({k: v for k, v in environment_file(env_file).items()
                    if not k.endswith("_FLAGS")})
        env.update(overrides_env)
        log = open(os.path.join(WORK, f"{name}.log"), "w+")
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
        cls.procs.append((proc, log))
        return proc, log

    @classmethod
    def log_match(cls, log, pattern):
        with open(log.name) as f:
            return re.search(pattern, f.read())

    @classmethod
    def setUpClass(cls):
        etc = os.path.join(ROOT, "etc/default")
        master_flags = shlex.split(
            environment_file(os.path.join(etc, "shelfmark-master"))["SHELFMARK_MASTER_FLAGS"])
        snapshots = os.path.join(WORK, "snapshots")
        os.makedirs(snapshots)
        cls.master, master_log = cls.start(
            "master",
            [os.path.join(ROOT, "usr/bin/shelfmark-master")] +
            with_flags(master_flags, rpc_address="127.0.0.1", rpc_port=0, metrics_port=0,
                       snapshot_interval_seconds=1),
            os.path.join(etc, "shelfmark-master"), {"MOONCAKE_SNAPSHOT_LOCAL_PATH": snapshots})
        ports = wait_for(lambda: cls.master.poll() is None and cls.log_match(
            master_log, r"rpc port (\d+), metrics port (\d+)"), "the master's ports")
        cls.master_address = f"127.0.0.1:{ports.group(1)}"

        node_flags = shlex.split(
            environment_file(os.path.join(etc, "shelfmark-node"))["SHELFMARK_NODE_FLAGS"])
        cls.node, node_log = cls.start(
            "node",
            [os.path.join(ROOT, "usr/bin/shelfmark-node")] +
            with_flags(node_flags, master=cls.master_address, segment_size=64 << 20,
                       metrics_port=0, protocol="ucx"),
            os.path.join(etc, "shelfmark-node"), {})
        wait_for(lambda: cls.node.poll() is None and cls.log_match(node_log, r"segment \d+"),
                 "the node's mount")

        # The store service with its packaged flags (--enable_offload: its SSD
        # tier, here in a directory of the test's).
        service_flags = shlex.split(environment_file(os.path.join(
            etc, "shelfmark-store-service"))["SHELFMARK_STORE_SERVICE_FLAGS"])
        service_ssd = os.path.join(WORK, "store-ssd")
        os.makedirs(service_ssd)
        cls.service_socket = os.path.join(WORK, "store.sock")
        cls.service, service_log = cls.start(
            "store-service",
            [os.path.join(ROOT, "usr/bin/shelfmark-store-service")] +
            with_flags(service_flags, master_server_address=cls.master_address,
                       global_segment_size=64 << 20, socket_path=cls.service_socket,
                       http_port=0),
            os.path.join(etc, "shelfmark-store-service"),
            {"MOONCAKE_OFFLOAD_FILE_STORAGE_PATH": service_ssd})
        wait_for(lambda: cls.service.poll() is None and cls.log_match(service_log, r"socket \S+"),
                 "the store service serving")
        assert cls.log_match(service_log, r"ssd tier backend=\S+ path=" + re.escape(service_ssd))

    @classmethod
    def tearDownClass(cls):
        for proc, log in cls.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            log.close()

    def cli(self, *args):
        return run([os.path.join(ROOT, "usr/bin/shelfmark-cli"), f"--master={self.master_address}",
                    *args])

    def python(self, *args):
        """Debian's python3 with the extracted python3-shelfmark (and nothing
        of the source tree) on its path."""
        env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, DIST_PACKAGES),
                   PYTHONDONTWRITEBYTECODE="1")
        return run(["/usr/bin/python3", *args], env=env, cwd=WORK)

    def test_binaries_answer_help(self):
        for binary in ("shelfmark-master", "shelfmark-node", "shelfmark-store-service",
                       "shelfmark-cli"):
            result = run([os.path.join(ROOT, "usr/bin", binary), "--help"])
            self.assertEqual(result.returncode, 0, binary + result.stderr)
            self.assertIn(f"usage: {binary}", result.stdout + result.stderr)

    def test_cli_put_and_get(self):
        source = os.path.join(WORK, "object.bin")
        data = os.urandom(3 << 20)
        with open(source, "wb") as f:
            f.write(data)
        put = self.cli("put", "package-test/object", source)
        self.assertEqual(put.returncode, 0, put.stdout + put.stderr)
        target = os.path.join(WORK, "object.out")
        got = self.cli("get", "package-test/object", target)
        self.assertEqual(got.returncode, 0, got.stdout + got.stderr)
        with open(target, "rb") as f:
            self.assertEqual(f.read(), data)

    def test_find_package_consumer(self):
        # A program outside the tree, built against the extracted
        # libshelfmark-dev only (CMAKE_PREFIX_PATH points into it).
        build = os.path.join(WORK, "consumer")
        configure = run(["cmake", "-S", os.path.join(SOURCE_DIR, "tests/package/consumer"),
                         "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                         f"-DCMAKE_PREFIX_PATH={os.path.join(ROOT, 'usr')}"])
        self.assertEqual(configure.returncode, 0, configure.stdout + configure.stderr)
        self.assertIn(os.path.join(ROOT, "usr/lib/x86_64-linux-gnu/cmake/Shelfmark"),
                      run(["cmake", "-L", "-N", build]).stdout)
        compile_ = run(["cmake", "--build", build, "-j", str(os.cpu_count() or 1)], timeout=600)
        self.assertEqual(compile_.returncode, 0, compile_.stdout + compile_.stderr)
        consumer = run([os.path.join(build, "shelfmark-consumer"), self.master_address,
                        "package-test/consumer"])
        self.assertEqual(consumer.returncode, 0, consumer.stdout + consumer.stderr)
        self.assertIn("consumer: ok 1048576 bytes", consumer.stdout)
        # The object is in the cluster for others too.
        stat = self.cli("stat", "package-test/consumer")
        self.assertEqual(stat.returncode, 0, stat.stdout + stat.stderr)

    def test_python_package_serves_both_shapes(self):
        # An embedded store (its own segment) and a dummy client of the
        # packaged store service, from the packaged module.
        smoke = self.python("-c", PYTHON_SMOKE, self.master_address, self.service_socket)
        self.assertEqual(smoke.returncode, 0, smoke.stdout + smoke.stderr)
        self.assertIn("python ok " + os.path.join(ROOT, DIST_PACKAGES), smoke.stdout)
        replay = self.python(os.path.join(ROOT, "usr/bin/shelfmark-replay"), "--help")
        self.assertEqual(replay.returncode, 0, replay.stdout + replay.stderr)
        self.assertIn("usage: shelfmark-replay", replay.stdout)

    def test_master_snapshots_into_its_packaged_path(self):
        # The packaged flags enable snapshots; the master accepted them and
        # the directory it was given is where they go (the interval is 1 s here).
        self.assertIsNone(self.master.poll())
        snapshots = os.path.join(WORK, "snapshots")
        wait_for(lambda: os.listdir(snapshots), "a snapshot in MOONCAKE_SNAPSHOT_LOCAL_PATH",
                 timeout=120)


@unittest.skipUnless(os.geteuid() == 0, "installing packages needs root")
@unittest.skipIf(os.path.isdir("/run/systemd/system"),
                 "systemd runs here: installing would start the services for real")
class Install(unittest.TestCase):
    """dpkg -i and --purge on this machine: the maintainer scripts create the
    user and the state directories, the service user can run the master with
    the packaged defaults, and removal leaves the data. Whatever the test
    created (packages, user, directories) is removed again."""

    def setUp(self):
        installed = [p for p in PACKAGES if run(["dpkg", "-s", p]).returncode == 0]
        if installed:
            self.skipTest(f"already installed here: {installed}")
        self.had_user = run(["getent", "passwd", "shelfmark"]).returncode == 0
        self.had_state = os.path.exists("/var/lib/shelfmark")
        self.addCleanup(self.clean_up)

    def clean_up(self):
        run(["dpkg", "--purge"] + PACKAGES)
        if not self.had_user and run(["getent", "passwd", "shelfmark"]).returncode == 0:
            run(["deluser", "--quiet", "--system", "shelfmark"])
            run(["delgroup", "--quiet", "--system", "shelfmark"])
        if not self.had_state:
            shutil.rmtree("/var/lib/shelfmark", ignore_errors=True)

    def test_install_run_as_service_user_and_purge(self):
        result = run(["dpkg", "-i"] + [deb_path(p) for p in PACKAGES])
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        for package in PACKAGES:
            status = run(["dpkg-query", "-W", "-f=${Status}", package]).stdout
            self.assertEqual(status, "install ok installed", package)
        self.assertEqual(run(["getent", "passwd", "shelfmark"]).returncode, 0)
        for directory in SERVICES.values():
            info = os.stat(directory)
            self.assertEqual(oct(info.st_mode & 0o777), "0o750", directory)
            self.assertEqual(run(["stat", "-c", "%U:%G", directory]).stdout.strip(),
                             "shelfmark:shelfmark", directory)

        # What the unit does: the packaged flags and variables, as shelfmark.
        defaults = environment_file("/etc/default/shelfmark-master")
        flags = with_flags(shlex.split(defaults["SHELFMARK_MASTER_FLAGS"]),
                           rpc_address="127.0.0.1", rpc_port=0, metrics_port=0,
                           snapshot_interval_seconds=1)
        log = open(os.path.join(WORK, "installed-master.log"), "w+")
        env = dict(os.environ, MOONCAKE_SNAPSHOT_LOCAL_PATH=defaults["MOONCAKE_SNAPSHOT_LOCAL_PATH"])
        master = subprocess.Popen(["runuser", "-u", "shelfmark", "--", "/usr/bin/shelfmark-master",
                                   *flags], stdout=log, stderr=subprocess.STDOUT, env=env,
                                  start_new_session=True)
        try:
            # A published snapshot (latest.txt), not the start-up write probe's
            # transient directory, which a directory listing could catch.
            latest = "/var/lib/shelfmark/snapshots/mooncake_master_snapshot/*/latest.txt"
            wait_for(lambda: glob.glob(latest) or master.poll() is not None,
                     "the installed master's first snapshot")
            log.seek(0)
            self.assertIsNone(master.poll(), log.read())
        finally:
            os.killpg(master.pid, signal.SIGTERM)
            master.wait(timeout=60)
            log.close()

        # Debian's python3 imports both names from the installed package.
        imported = run(["/usr/bin/python3", "-c",
                        "from mooncake.store import MooncakeDistributedStore; import shelfmark, "
                        "mooncake.store; print(mooncake.store.__file__)"],
                       cwd=WORK, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
        self.assertEqual(imported.returncode, 0, imported.stdout + imported.stderr)
        self.assertEqual(imported.stdout.strip(), f"/{DIST_PACKAGES}/mooncake/store.py")
        replay = run(["/usr/bin/shelfmark-replay", "--help"], cwd=WORK)
        self.assertEqual(replay.returncode, 0, replay.stdout + replay.stderr)

        result = run(["dpkg", "--purge"] + PACKAGES)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        for path in ("/usr/bin/shelfmark-master", "/etc/default/shelfmark-master",
                     "/lib/systemd/system/shelfmark-node.service",
                     "/usr/bin/shelfmark-store-service", f"/{DIST_PACKAGES}/mooncake/store.py"):
            self.assertFalse(os.path.exists(path), path)
        # Byte code Python wrote when importing as root went too (prerm).
        for name in ("mooncake", "shelfmark"):
            self.assertFalse(os.path.exists(f"/{DIST_PACKAGES}/{name}"), name)
        # The operator's data stays.
        self.assertTrue(os.listdir("/var/lib/shelfmark/snapshots"))


def main():
    global PACKAGE_DIR, SOURCE_DIR, ROOT, WORK
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    PACKAGE_DIR, SOURCE_DIR = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    WORK = tempfile.mkdtemp(prefix="shelfmark_package_test_")
    try:
        ROOT = os.path.join(WORK, "root")
        for package in PACKAGES:
            result = run(["dpkg-deb", "-x", deb_path(package), ROOT])
            if result.returncode != 0:
                print(result.stderr, file=sys.stderr)
                return 1
        program = unittest.main(argv=[sys.argv[0], "-v"] + sys.argv[3:], exit=False)
        return 0 if program.result.wasSuccessful() else 1
    finally:
        shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
