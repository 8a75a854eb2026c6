#!/usr/bin/env python3
"""Self-test of deploy/check_metric_names.py (ctest deploy_metric_names_test).

    deploy/check_metric_names_test.py [ROOT]    # ROOT: the source tree (default: ..)

Runs the checker on a temporary copy of what it reads (its SOURCE_FOLDERS,
deploy/, docs/metrics.md): the copy passes; then each kind of drift
injected into the copy is reported. The copy is deleted.
"""

import importlib.util
import json
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, ".."))

spec = importlib.util.spec_from_file_location("check_metric_names",
                                              os.path.join(HERE, "check_metric_names.py"))
checker = importlib.util.module_from_spec(spec)
spec.loader.exec_module(checker)


class Drift(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="check_metric_names_test.")
        for folder in checker.SOURCE_FOLDERS + ("deploy",):
            shutil.copytree(os.path.join(ROOT, folder), os.path.join(self.tmp, folder))
        os.mkdir(os.path.join(self.tmp, "docs"))
        shutil.copy(os.path.join(ROOT, checker.DOCS), os.path.join(self.tmp, checker.DOCS))

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def edit(self, rel, old, new):
        path = os.path.join(self.tmp, rel)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        self.assertIn(old, text, rel)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text.replace(old, new, 1))

    def problems(self):
        return "\n".join(checker.check(self.tmp))

    def test_copy_passes(self):
        self.assertEqual(self.problems(), "")

    def test_old_name_in_the_dashboard(self):
        self.edit(checker.DASHBOARD, "shelfmark_master_keys{", "shelfmark_master_key_count{")
        self.assertIn("deploy/grafana/shelfmark.json: Keys: shelfmark_master_key_count is not "
                      "a metric the code registers", self.problems())

    def test_histogram_series_need_a_histogram(self):
        self.edit(checker.DASHBOARD, "shelfmark_master_keys{", "shelfmark_master_keys_bucket{")
        self.assertIn("shelfmark_master_keys_bucket is not a metric", self.problems())

    def test_unknown_name_in_a_rule(self):
        self.edit(checker.RULES, "shelfmark_node_disk_used_bytes / (",
                  "shelfmark_node_disk_use_bytes / (")
        self.assertIn("shelfmark_node_disk_use_bytes is not a metric the code registers",
                      self.problems())

    def test_unknown_recording_rule(self):
        self.edit(checker.RULES_TEST, "expr: job:shelfmark_master_rpc_requests:rate5m",
                  "expr: job:shelfmark_master_rpc_calls:rate5m")
        self.assertIn("job:shelfmark_master_rpc_calls:rate5m is not a recording rule",
                      self.problems())

    def test_unknown_series_in_a_rule_test(self):
        self.edit(checker.RULES_TEST, "- series: 'shelfmark_node_ping_failures_total{",
                  "- series: 'shelfmark_node_ping_failures{")
        self.assertIn("shelfmark_node_ping_failures is not a metric the code registers",
                      self.problems())

    def test_undocumented_family_and_documented_unknown_name(self):
        self.edit(os.path.join("node", "node_main.cc"), '"shelfmark_node_remounts_total"',
                  '"shelfmark_node_remount_answers_total"')
        out = self.problems()
        self.assertIn("docs/metrics.md: registered family shelfmark_node_remount_answers_total "
                      "is not documented", out)
        self.assertIn("docs/metrics.md: shelfmark_node_remounts_total is not a metric the code "
                      "registers", out)

    def test_renamed_section_is_not_checked(self):
        with open(os.path.join(self.tmp, checker.DOCS), encoding="utf-8") as f:
            self.assertIn("`shelfmark_master_key_count`", f.read())
        self.assertEqual(self.problems(), "")

    def test_broken_dashboard(self):
        with open(os.path.join(self.tmp, checker.DASHBOARD), "w", encoding="utf-8") as f:
            f.write('{"panels": [')
        self.assertIn("deploy/grafana/shelfmark.json: not valid JSON", self.problems())
        with open(os.path.join(self.tmp, checker.DASHBOARD), "w", encoding="utf-8") as f:
            json.dump({"panels": []}, f)
        self.assertIn("deploy/grafana/shelfmark.json: no query found", self.problems())

    def test_block_expressions_are_read(self):
        values = checker.yaml_values(os.path.join(ROOT, checker.RULES))
        storm = [v for k, v, _ in values if k == "expr" and "evicted_bytes_total[10m]" in v]
        self.assertEqual(len(storm), 1)
        self.assertIn("shelfmark_master_total_capacity_bytes", storm[0])


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
