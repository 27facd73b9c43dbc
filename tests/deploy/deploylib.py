"""What the deployment checks share: paths, skipping, failure reporting, values and rendering."""
import copy
import os
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHART = os.path.join(REPO, "helm", "gradsync")
VALUES = os.path.join(REPO, "tests", "deploy", "values")
SKIP = 77  # CTest SKIP_RETURN_CODE: a tool the check needs is not installed.
OPERATOR = "monitoring.coreos.com/v1"  # the Prometheus Operator's API, for ServiceMonitor and PrometheusRule
GO_PATH = "/usr/share/gocode"  # where Debian's golang-*-dev packages put Go sources


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(SKIP)


def need_modules():
    """Imports yaml and jsonschema, or skips naming the Debian packages that provide them."""
    try:
        import jsonschema  # noqa: F401
        import yaml  # noqa: F401
    except ImportError as e:
        skip(f"{e.name} is missing: apt-get install python3-yaml python3-jsonschema "
             "(scripts/install-deps.sh installs them)")


class Failures:
    """Collects failed expectations so that one run reports all of them, then exits non-zero."""

    def __init__(self):
        self.messages = []
        self.checked = 0

    def expect(self, ok, message):
        self.checked += 1
        if not ok:
            self.messages.append(message)
        return ok

    def finish(self, what):
        for m in self.messages:
            print(f"FAIL: {m}")
        print(f"{what}: {self.checked - len(self.messages)} passed, {len(self.messages)} failed")
        sys.exit(1 if self.messages else 0)


def load_yaml(path):
    import yaml
    with open(path) as f:
        return yaml.safe_load(f)


def coalesce(base, override):
    """Merges values files as Helm does: maps key by key, other values replace, null deletes."""
    out = copy.deepcopy(base)
    for key, value in (override or {}).items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = coalesce(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def chart_values(*files):
    values = load_yaml(os.path.join(CHART, "values.yaml"))
    for f in files:
        values = coalesce(values, load_yaml(f))
    return values


def schema_errors(values):
    """The messages values.schema.json gives for values, as `helm install` would refuse them."""
    import json
    import jsonschema
    with open(os.path.join(CHART, "values.schema.json")) as f:
        schema = json.load(f)
    validator = jsonschema.Draft7Validator(schema)
    return [f"{'.'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}"
            for e in validator.iter_errors(values)]


def values_files():
    """[(name, files)] for every values file the checks render: the chart's defaults, each
    example and each file of tests/deploy/values (values/bad holds values the schema refuses)."""
    cases = [("defaults", [])]
    for folder in (os.path.join(CHART, "examples"), VALUES):
        for name in sorted(os.listdir(folder)):
            if name.endswith(".yaml"):
                cases.append((name[:-len(".yaml")], [os.path.join(folder, name)]))
    return cases


def render_cases():
    """[(name, files, api_versions)]: every values file rendered for a cluster without and with the
    Prometheus Operator's API, so that the ServiceMonitor and PrometheusRule render too."""
    return [(name + ("+operator" if with_api else ""), files, [OPERATOR] if with_api else [])
            for name, files in values_files() for with_api in (False, True)]


def build_renderer(out_dir):
    """Builds tests/deploy/render (Go, sprig and yaml.v2 from Debian packages, no network) into
    out_dir and returns its path, or skips when Go or those packages are missing."""
    go = shutil.which("go")
    if go is None:
        skip("go is missing: apt-get install golang-go (scripts/install-deps.sh installs it)")
    for pkg, deb in (("github.com/Masterminds/sprig", "golang-github-masterminds-sprig-dev"),
                     ("gopkg.in/yaml.v2", "golang-gopkg-yaml.v2-dev")):
        if not os.path.isdir(os.path.join(GO_PATH, "src", pkg)):
            skip(f"{pkg} is missing: apt-get install {deb}")
    os.makedirs(out_dir, exist_ok=True)
    env = dict(os.environ, GO111MODULE="off", GOFLAGS="", GOPATH=GO_PATH,
               GOCACHE=os.path.join(out_dir, "gocache"), GOTOOLCHAIN="local", GOPROXY="off")
    binary = os.path.join(out_dir, "render")
    # Build beside the target and rename: parallel checks may build at the same time.
    fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=".render-")
    os.close(fd)
    src = os.path.join(REPO, "tests", "deploy", "render")
    result = subprocess.run([go, "build", "-o", tmp, "."], cwd=src, env=env,
                            capture_output=True, text=True)
    if result.returncode != 0:
        os.unlink(tmp)
        print(result.stdout + result.stderr)
        sys.exit("FAIL: the chart renderer does not build")
    os.replace(tmp, binary)
    return binary


def render(renderer, files=(), api_versions=(), notes=False, objects=()):
    """Runs the renderer in strict mode; returns (exit code, stdout, stderr). objects are files of
    objects the cluster already holds, which lookup finds (an upgrade)."""
    cmd = [renderer, "-chart", CHART, "-strict", "-name", "ci", "-namespace", "training"]
    for f in files:
        cmd += ["-f", f]
    for v in api_versions:
        cmd += ["-api-versions", v]
    for o in objects:
        cmd += ["-object", o]
    if notes:
        cmd.append("-notes")
    result = subprocess.run(cmd, capture_output=True, text=True)
    return result.returncode, result.stdout, result.stderr
