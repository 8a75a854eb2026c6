#!/usr/bin/env python3
"""Self-test of scripts/check_layout.py (ctest layout_check_test, label unit).

    scripts/check_layout_test.py [ROOT]    # ROOT: the source tree (default: ..)

Runs the checker on the clean tree (must pass), then on a temporary copy of
the tree's folders with wrong-way dependencies injected (must fail, naming
each), and checks the table checks on made-up tables. The copy is deleted.
"""

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKER = os.path.join(HERE, "check_layout.py")
ROOT = os.path.abspath(os.path.join(HERE, ".."))

spec = importlib.util.spec_from_file_location("check_layout", CHECKER)
check_layout = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check_layout)
Row = check_layout.Row


def run_checker(root):
    p = subprocess.run([sys.executable, CHECKER, root], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    return p.returncode, p.stdout


class CleanTree(unittest.TestCase):
    def test_clean_tree_passes(self):
        rc, out = run_checker(ROOT)
        self.assertEqual(rc, 0, out)
        self.assertIn("check_layout: OK", out)

    def test_table_is_acyclic(self):
        check_layout.check_table()  # raises on a cycle


class InjectedViolations(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="check_layout_test.")
        self.addCleanup(shutil.rmtree, self.tmp)
        shutil.copy(os.path.join(ROOT, "CMakeLists.txt"), self.tmp)
        for row in check_layout.LAYOUT:
            src = os.path.join(ROOT, row.folder)
            if os.path.isdir(src):
                shutil.copytree(src, os.path.join(self.tmp, row.folder), symlinks=True)

    def edit(self, rel, old, new):
        path = os.path.join(self.tmp, rel)
        with open(path) as f:
            text = f.read()
        self.assertIn(old, text, rel)
        with open(path, "w") as f:
            f.write(text.replace(old, new, 1))
        return text[:text.index(old)].count("\n") + 1  # line of the edit

    def append(self, rel, text):
        path = os.path.join(self.tmp, rel)
        with open(path) as f:
            n = f.read().count("\n")
        with open(path, "a") as f:
            f.write(text)
        return n + 1

    def test_copy_passes(self):
        rc, out = run_checker(self.tmp)
        self.assertEqual(rc, 0, out)

    def test_wrong_way_include_and_cmake_dep(self):
        line = self.append("transport/transport_set.cc",
                           '#include "directory/directory.h"\n')
        cmake_line = self.edit("transport/ucx.cmake", "DEPS shelfmark::common",
                               "DEPS shelfmark::directory shelfmark::common")
        rc, out = run_checker(self.tmp)
        self.assertEqual(rc, 1, out)
        self.assertIn('transport/transport_set.cc:%d: #include "directory/directory.h": '
                      "folder transport may not depend on folder directory" % line, out)
        self.assertIn("transport/ucx.cmake:%d: shelfmark_library(transport ... "
                      "shelfmark::directory): folder transport may not depend on folder "
                      "directory" % cmake_line, out)
        self.assertIn("2 violation(s)", out)

    def test_production_code_may_not_use_testing_or_test_helpers(self):
        a = self.append("ssdstore/file_io.cc", '#include "testing/temp_dir.h"\n')
        b = self.append("node/node.cc", '#include "ssdstore/io_test_util.h"\n')
        # The same includes from tests are fine.
        self.append("ssdstore/file_io_test.cc", '#include "testing/temp_dir.h"\n')
        self.append("node/node_test.cc", '#include "ssdstore/io_test_util.h"\n')
        rc, out = run_checker(self.tmp)
        self.assertEqual(rc, 1, out)
        self.assertIn('ssdstore/file_io.cc:%d: #include "testing/temp_dir.h": folder '
                      "ssdstore may not depend on folder testing" % a, out)
        self.assertIn('node/node.cc:%d: #include "ssdstore/io_test_util.h": production '
                      "code may not include test helpers" % b, out)
        self.assertIn("2 violation(s)", out)

    def test_test_and_main_edges_are_per_kind(self):
        # node's tests may use master; its library code may not.
        a = self.append("node/node.cc", '#include "master/rpc_server.h"\n')
        # node's main may use service; its library may not.
        b = self.append("node/local_disk_service.h", '#include "service/metrics.h"\n')
        # transport's tests have no extra edges.
        c = self.append("transport/transport_set_test.cc", '#include "rpc/master_client.h"\n')
        rc, out = run_checker(self.tmp)
        self.assertEqual(rc, 1, out)
        self.assertIn("node/node.cc:%d: " % a, out)
        self.assertIn("folder node may not depend on folder master", out)
        self.assertIn("node/local_disk_service.h:%d: " % b, out)
        self.assertIn("transport/transport_set_test.cc:%d: " % c, out)
        self.assertIn("folder transport may not depend on folder rpc (in test code)", out)
        self.assertIn("3 violation(s)", out)

    def test_cmake_test_and_link_rdma_deps(self):
        a = self.edit("rpc/CMakeLists.txt", "DEPS shelfmark::rpc shelfmark::testing",
                      "DEPS shelfmark::rpc shelfmark::client shelfmark::testing")
        b = self.append("service/CMakeLists.txt",
                        "target_link_libraries(shelfmark_service PUBLIC shelfmark::unknownlib)\n"
                        "shelfmark_link_rdma(metrics_test)\n")
        rc, out = run_checker(self.tmp)
        self.assertEqual(rc, 1, out)
        self.assertIn("rpc/CMakeLists.txt:%d: shelfmark_test(rpc_convert_test ... "
                      "shelfmark::client): folder rpc may not depend on folder client "
                      "(in test code)" % a, out)
        self.assertIn("service/CMakeLists.txt:%d: target_link_libraries(shelfmark_service ... "
                      "shelfmark::unknownlib): no folder defines library "
                      "shelfmark::unknownlib" % b, out)
        self.assertIn("service/CMakeLists.txt:%d: shelfmark_link_rdma(metrics_test ... "
                      "shelfmark::transport_verbs): folder service may not depend on "
                      "folder transport (in test code)" % (b + 1), out)

    def test_unknown_folder(self):
        os.mkdir(os.path.join(self.tmp, "extra"))
        with open(os.path.join(self.tmp, "extra", "CMakeLists.txt"), "w") as f:
            f.write("shelfmark_library(extra SOURCES x.cc DEPS shelfmark::common)\n")
        rc, out = run_checker(self.tmp)
        self.assertEqual(rc, 1, out)
        self.assertIn("folder extra is not in the layout table", out)

    def test_folder_without_code_needs_no_row(self):
        os.mkdir(os.path.join(self.tmp, "configs"))
        with open(os.path.join(self.tmp, "configs", "CMakeLists.txt"), "w") as f:
            f.write("add_test(NAME configs_check COMMAND python3 check.py)\n")
        with open(os.path.join(self.tmp, "configs", "rules.yml"), "w") as f:
            f.write("groups: []\n")
        rc, out = run_checker(self.tmp)
        self.assertEqual(rc, 0, out)
        with open(os.path.join(self.tmp, "configs", "helper.cc"), "w") as f:
            f.write("int main() { return 0; }\n")
        rc, out = run_checker(self.tmp)
        self.assertEqual(rc, 1, out)
        self.assertIn("folder configs is not in the layout table", out)


class TableChecks(unittest.TestCase):
    def test_cycle_is_refused(self):
        table = [Row("a", "b", "", ""), Row("b", "c", "", ""), Row("c", "a", "", "")]
        with self.assertRaisesRegex(check_layout.TableError, "cycle: a -> b -> c -> a"):
            check_layout.check_table(table)

    def test_main_cycle_is_refused(self):
        table = [Row("a", "b", "", ""), Row("b", "", "a", "")]
        with self.assertRaisesRegex(check_layout.TableError, "main edges form a cycle"):
            check_layout.check_table(table)

    def test_test_edges_may_go_both_ways(self):
        check_layout.check_table([Row("a", "b", "", ""), Row("b", "", "", "a")])

    def test_production_edge_to_testing_is_refused(self):
        table = [Row("testing", "", "", ""), Row("a", "testing", "", "")]
        with self.assertRaisesRegex(check_layout.TableError, "may not use testing/"):
            check_layout.check_table(table)

    def test_unknown_folder_is_refused(self):
        with self.assertRaisesRegex(check_layout.TableError, "unknown folder z"):
            check_layout.check_table([Row("a", "z", "", "")])


if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        ROOT = os.path.abspath(sys.argv.pop(1))
    unittest.main()
