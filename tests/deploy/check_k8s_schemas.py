#!/usr/bin/env python3
"""Checks the chart against Kubernetes' own schemas. Renders helm/gradsync for every values file
the checks render (each without and with the Prometheus Operator's API) and runs
k8s-schemas/validate.mjs over every object: the OpenAPI definition of its kind (kubernetes-models)
or the operator's CRD schema (@kubernetes-models/prometheus-operator) must accept it, no field may
be one the schema does not declare, and a kind with no schema fails. The broken objects of
k8s-schemas/bad/ must each be refused, for exactly the reasons its `# expect:` lines give. The
manifests docs/deployment.md applies (`kubectl apply -f - <<'YAML'`) must be accepted too.

    check_k8s_schemas.py BUILD_DIR      (the renderer and the rendered manifests go there)
"""
import glob
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import deploylib as d  # noqa: E402

SCHEMAS = os.path.join(d.REPO, "tests", "deploy", "k8s-schemas")
INSTALL = "npm ci --prefix tests/deploy/k8s-schemas"
EXPECT = "# expect: "


def need_validator():
    """The node binary, once the validator's packages are installed as package.json pins them;
    skips when node or the packages are missing, fails when an install is stale."""
    node = shutil.which("node")
    if node is None:
        d.skip(f"node is missing: install Node.js 18 or later, then {INSTALL}")
    with open(os.path.join(SCHEMAS, "package.json")) as f:
        pins = json.load(f)["dependencies"]
    for package, version in pins.items():
        manifest = os.path.join(SCHEMAS, "node_modules", package, "package.json")
        if not os.path.exists(manifest):
            d.skip(f"{package} is missing: {INSTALL}")
        with open(manifest) as f:
            installed = json.load(f)["version"]
        if installed != version:
            sys.exit(f"FAIL: {package} {installed} is installed, package.json pins {version}: {INSTALL}")
    return node


def render_all(f, renderer, out_dir):
    """{file: (case, number of objects)} for every values file rendered into out_dir."""
    import yaml
    os.makedirs(out_dir, exist_ok=True)
    rendered = {}
    for what, files, api_versions in d.render_cases():
        rc, out, err = d.render(renderer, files, api_versions)
        if not f.expect(rc == 0, f"{what}: render failed: {err.strip()}"):
            continue
        path = os.path.join(out_dir, f"{what}.yaml")
        with open(path, "w") as w:
            w.write(out)
        rendered[path] = (what, len([doc for doc in yaml.safe_load_all(out) if doc]))
    return rendered


def validate(node, files):
    """validate.mjs --json over files: {file: [objects]}; exits on a failure to run it at all."""
    result = subprocess.run([node, os.path.join(SCHEMAS, "validate.mjs"), "--json"] + files,
                            capture_output=True, text=True, cwd=SCHEMAS)
    if result.returncode not in (0, 1):
        print(result.stdout + result.stderr)
        sys.exit(f"FAIL: validate.mjs exited {result.returncode}")
    by_file = {path: [] for path in files}
    for obj in json.loads(result.stdout)["objects"]:
        by_file[obj["file"]].append(obj)
    return by_file


def problems(obj):
    return [f"{e['field']}: {e['message']}" for e in obj["errors"]]


def check_rendered(f, by_file, rendered):
    for path, (what, count) in rendered.items():
        objects = by_file[path]
        f.expect(len(objects) == count, f"{what}: {len(objects)} objects validated of {count} rendered")
        for obj in objects:
            f.expect(not obj["errors"], f"{what}: {obj['kind']}/{obj['name']} [{obj['source']}]: "
                                        + "; ".join(problems(obj)))
        kinds = sorted({o["kind"] for o in objects})
        print(f"{what}: {len(objects)} objects ({', '.join(kinds)})")


def docs_manifests(out_dir):
    """The manifests docs/deployment.md gives to `kubectl apply -f - <<'YAML'`, one file each:
    {file: where in the guide}."""
    os.makedirs(out_dir, exist_ok=True)
    found, lines = {}, open(os.path.join(d.REPO, "docs", "deployment.md")).read().splitlines()
    i = 0
    while i < len(lines):
        if lines[i].rstrip().endswith("<<'YAML'"):
            start, body = i + 1, []
            i += 1
            while i < len(lines) and lines[i] != "YAML":
                body.append(lines[i])
                i += 1
            path = os.path.join(out_dir, f"deployment-md-line-{start}.yaml")
            with open(path, "w") as w:
                w.write("\n".join(body) + "\n")
            found[path] = f"docs/deployment.md line {start}"
        i += 1
    return found


def check_docs(f, by_file, docs):
    f.expect(len(docs) >= 2, f"docs/deployment.md gives {len(docs)} manifests to kubectl apply, expected 2 or more")
    for path, where in docs.items():
        objects = by_file[path]
        f.expect(len(objects) == 1, f"{where}: {len(objects)} objects validated, expected 1")
        for obj in objects:
            f.expect(not obj["errors"], f"{where}: {obj['kind']}/{obj['name']}: " + "; ".join(problems(obj)))
    print(f"docs/deployment.md: {len(docs)} manifests")


def check_refused(f, by_file, bad_files):
    """Each broken object is refused, every expected reason is given and nothing else is."""
    for path in bad_files:
        name = os.path.relpath(path, SCHEMAS)
        with open(path) as r:
            expects = [line[len(EXPECT):].strip() for line in r if line.startswith(EXPECT)]
        objects = by_file[path]
        if not f.expect(expects and len(objects) == 1, f"{name}: want one object and an {EXPECT!r} line"):
            continue
        got = problems(objects[0])
        for e in expects:
            f.expect(any(p.startswith(e) for p in got), f"{name}: not refused with {e!r}; got {got}")
        for p in got:
            f.expect(any(p.startswith(e) for e in expects), f"{name}: refused for an unexpected reason: {p}")


def main():
    d.need_modules()
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    node = need_validator()
    renderer = d.build_renderer(sys.argv[1])
    f = d.Failures()
    rendered = render_all(f, renderer, os.path.join(sys.argv[1], "k8s-schemas"))
    bad_files = sorted(glob.glob(os.path.join(SCHEMAS, "bad", "*.yaml")))
    f.expect(bad_files, "k8s-schemas/bad holds no broken objects")
    docs = docs_manifests(os.path.join(sys.argv[1], "k8s-schemas", "docs"))
    by_file = validate(node, list(rendered) + bad_files + list(docs))
    check_rendered(f, by_file, rendered)
    check_docs(f, by_file, docs)
    check_refused(f, by_file, bad_files)
    f.finish("k8s schemas")


if __name__ == "__main__":
    main()
