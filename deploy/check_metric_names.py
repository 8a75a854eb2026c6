#!/usr/bin/env python3
"""Keeps deploy/ and docs/metrics.md from drifting away from the code.

    deploy/check_metric_names.py [ROOT]    # exit 0: clean; 1: problems (one line each)

ctest deploy_metric_names (label unit) runs it on the source tree. It reads:

  - the metric families the code registers: the string literals named
    shelfmark_master_*, shelfmark_node_*, shelfmark_store_* or process_* in
    the production sources of master/, node/, service/, python/native/
    (mooncake.store's client HTTP server), storeservice/ (the store
    service) and embedded/ (their SSD tier's; not *_test.cc); those passed to
    AddHistogram are histograms, whose series add _bucket, _sum and _count;
  - the recording rules (`record:`) of deploy/prometheus/shelfmark.rules.yml;
  - every `expr:` of the rules and of their tests, every `series:` of the
    tests (deploy/prometheus/shelfmark.rules.test.yml), and every query of
    the Grafana dashboard (deploy/grafana/shelfmark.json: panel targets and
    template variables);
  - docs/metrics.md up to its "## Renamed" section.

and reports:

  - a metric name (shelfmark_*, process_*) in an expression, a test series or
    a dashboard query that the code does not register;
  - a recording rule name (level:metric:operation) used but not recorded;
  - a registered family that docs/metrics.md does not name, and a metric name
    there that the code does not register;
  - a dashboard that is not valid JSON or has no query.

The YAML files are read without a YAML library (the test machines need none):
each `expr:` is one line or a `|`/`>` block indented below it.
"""

import json
import os
import re
import sys

SOURCE_FOLDERS = ("master", "node", "service", "python/native", "storeservice", "embedded")
SOURCE_EXTENSIONS = (".cc", ".h")
RULES = os.path.join("deploy", "prometheus", "shelfmark.rules.yml")
RULES_TEST = os.path.join("deploy", "prometheus", "shelfmark.rules.test.yml")
DASHBOARD = os.path.join("deploy", "grafana", "shelfmark.json")
DOCS = os.path.join("docs", "metrics.md")

OUR_NAME = re.compile(r"^(shelfmark_master_|shelfmark_node_|shelfmark_store_|process_)[a-z0-9_]+$")
LITERAL = re.compile(r'"([A-Za-z0-9_:]+)"')
HISTOGRAM = re.compile(r'AddHistogram\(\s*"([A-Za-z0-9_:]+)"')
# A PromQL identifier: metric, recording rule, function, keyword or label name.
IDENTIFIER = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
KEY_LINE = re.compile(r"^(\s*(?:-\s+)?)(expr|series|record):\s*(.*?)\s*$")


def registered_families(root):
    """({family}, {histogram family}) registered by the production code."""
    families, histograms = set(), set()
    for folder in SOURCE_FOLDERS:
        for dirpath, _, filenames in os.walk(os.path.join(root, folder)):
            for f in sorted(filenames):
                if not f.endswith(SOURCE_EXTENSIONS) or f.endswith(("_test.cc", "_test.h")):
                    continue
                with open(os.path.join(dirpath, f), encoding="utf-8") as fh:
                    text = fh.read()
                families |= {m for m in LITERAL.findall(text) if OUR_NAME.match(m)}
                histograms |= set(HISTOGRAM.findall(text))
    return families, histograms & families


def series_names(families, histograms):
    """Every name a sample of these families may have."""
    names = set(families)
    for h in histograms:
        names |= {h + "_bucket", h + "_sum", h + "_count"}
    return names


def yaml_values(path):
    """[(key, value, line)] of the expr/series/record keys of a YAML file; a
    `|` or `>` block's lines are joined with newlines."""
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().split("\n")
    out = []
    i = 0
    while i < len(lines):
        m = KEY_LINE.match(lines[i])
        i += 1
        if not m:
            continue
        key, value, line = m.group(2), m.group(3), i
        if value in ("|", "|-", ">", ">-"):
            indent = len(m.group(1))
            block = []
            while i < len(lines) and (not lines[i].strip() or
                                      len(lines[i]) - len(lines[i].lstrip()) > indent):
                block.append(lines[i].strip())
                i += 1
            value = "\n".join(block).strip()
        elif len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        out.append((key, value, line))
    return out


def names_in(expr):
    """Identifiers of a PromQL expression outside quoted strings."""
    return IDENTIFIER.findall(QUOTED.sub(" ", expr))


def check_expression(where, expr, known, records, problems):
    """Appends a problem for each unknown metric or recording rule in expr;
    returns how many of ours it names."""
    found = 0
    for name in names_in(expr):
        if ":" in name:
            found += 1
            if name not in records:
                problems.append("%s: %s is not a recording rule of %s" % (where, name, RULES))
        elif name.startswith(("shelfmark_", "process_")):
            found += 1
            if name not in known:
                problems.append("%s: %s is not a metric the code registers" % (where, name))
    return found


def dashboard_queries(dashboard):
    """[(title, query)] of every panel target (rows included) and template variable."""
    out = []

    def walk(panels):
        for p in panels or []:
            for t in p.get("targets") or []:
                if t.get("expr"):
                    out.append((p.get("title", "?"), t["expr"]))
            walk(p.get("panels"))

    walk(dashboard.get("panels"))
    for v in (dashboard.get("templating") or {}).get("list") or []:
        q = v.get("query")
        if isinstance(q, dict):
            q = q.get("query")
        if v.get("type") == "query" and q:
            out.append(("variable " + v.get("name", "?"), q))
    return out


def documented_names(path):
    """Metric names in backquotes in docs/metrics.md before "## Renamed"."""
    names = set()
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("## Renamed"):
                break
            for code in re.findall(r"`([^`]+)`", line):
                names |= {n for n in IDENTIFIER.findall(code) if OUR_NAME.match(n)}
    return names


def check(root):
    problems = []
    families, histograms = registered_families(root)
    if not families:
        return ["no metric registered under %s: the source scan is broken"
                % ", ".join(SOURCE_FOLDERS)]
    known = series_names(families, histograms)

    rules = yaml_values(os.path.join(root, RULES))
    records = {v for k, v, _ in rules if k == "record"}
    rules_test = yaml_values(os.path.join(root, RULES_TEST))
    for path, entries in ((RULES, rules), (RULES_TEST, rules_test)):
        found = 0
        for key, value, line in entries:
            where = "%s:%d" % (path, line)
            if key == "expr":
                found += check_expression(where, value, known, records, problems)
            elif key == "series":
                found += check_expression(where, value.split("{")[0], known, records, problems)
        if found == 0:
            problems.append("%s: no metric found in its expressions" % path)

    try:
        with open(os.path.join(root, DASHBOARD), encoding="utf-8") as fh:
            dashboard = json.load(fh)
    except ValueError as e:
        problems.append("%s: not valid JSON: %s" % (DASHBOARD, e))
        dashboard = {}
    queries = dashboard_queries(dashboard)
    if not queries:
        problems.append("%s: no query found" % DASHBOARD)
    for title, query in queries:
        check_expression("%s: %s" % (DASHBOARD, title), query, known, records, problems)

    documented = documented_names(os.path.join(root, DOCS))
    for name in sorted(families - documented):
        problems.append("%s: registered family %s is not documented" % (DOCS, name))
    for name in sorted(documented - known):
        problems.append("%s: %s is not a metric the code registers" % (DOCS, name))
    return problems


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                      "..")
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print("check_metric_names: %d problem(s); the names the code registers are in "
              "docs/metrics.md" % len(problems))
        return 1
    families, _ = registered_families(root)
    print("check_metric_names: OK (%d families)" % len(families))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
