#!/usr/bin/env python3
"""values.schema.json accepts the chart's values and the examples, and refuses every file in
values/bad/ (each merged over values.yaml as `helm install -f` would) for the reason its first
line gives: `# expect: TEXT`, the start of one of the schema's messages."""
import glob
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
import deploylib as d  # noqa: E402


KEY = re.compile(r"^( *)([A-Za-z][\w.-]*):(.*)$")


def undocumented_keys(path):
    """Keys of values.yaml that neither have a comment just above them nor are a mapping whose
    keys all have one. A commented key documents everything beneath it."""
    with open(path) as f:
        lines = f.read().split("\n")
    missing, covered_below = [], None
    for i, line in enumerate(lines):
        m = KEY.match(line)
        if not m:
            continue
        indent, key, rest = len(m.group(1)), m.group(2), m.group(3).strip()
        if covered_below is not None and indent > covered_below:
            continue
        covered_below = None
        if lines[i - 1].lstrip().startswith("#"):
            covered_below = indent
            continue
        nxt = next((ln for ln in lines[i + 1:] if ln.strip() and not ln.lstrip().startswith("#")), "")
        parent = rest == "" and KEY.match(nxt) and len(nxt) - len(nxt.lstrip()) > indent
        if not parent:
            missing.append(f"line {i + 1}: {key}")
    return missing


def main():
    d.need_modules()
    import json
    import jsonschema
    with open(os.path.join(d.CHART, "values.schema.json")) as f:
        jsonschema.Draft7Validator.check_schema(json.load(f))

    failures = d.Failures()
    missing = undocumented_keys(os.path.join(d.CHART, "values.yaml"))
    failures.expect(not missing, f"values.yaml keys without a comment: {missing}")
    good = [[]] + [[f] for f in sorted(glob.glob(os.path.join(d.VALUES, "*.yaml")))]
    good.append([os.path.join(d.CHART, "examples", "gpu-cluster.yaml")])
    for files in good:
        errors = d.schema_errors(d.chart_values(*files))
        name = os.path.relpath(files[0], d.REPO) if files else "values.yaml"
        failures.expect(not errors, f"{name} is refused: {errors}")

    bad = sorted(glob.glob(os.path.join(d.VALUES, "bad", "*.yaml")))
    failures.expect(len(bad) >= 8, f"only {len(bad)} bad values files")
    for path in bad:
        name = os.path.relpath(path, d.REPO)
        with open(path) as f:
            first = f.readline()
        if not failures.expect(first.startswith("# expect: "), f"{name}: no '# expect:' line"):
            continue
        expected = first[len("# expect: "):].strip()
        errors = d.schema_errors(d.chart_values(path))
        if failures.expect(any(e.startswith(expected) for e in errors),
                           f"{name}: want a message starting {expected!r}, got {errors}"):
            print(f"refused {name}: {errors[0]}")
    failures.finish("values")


if __name__ == "__main__":
    main()
