#!/usr/bin/env python3
"""yamllint (tests/deploy/yamllint.yaml) over the hand-written YAML of the deployment: the chart's
Chart.yaml, values and examples (templates are not YAML until rendered), the compose file, the
monitoring configuration, the test values and the broken objects of k8s-schemas/bad."""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
import deploylib as d  # noqa: E402

PATHS = [
    "helm/gradsync/Chart.yaml",
    "helm/gradsync/values.yaml",
    "helm/gradsync/examples",
    "helm/gradsync/files/alerts.yml",
    "docker/compose.yaml",
    "services/metrics/monitoring",
    "tests/deploy/values",
    "tests/deploy/k8s-schemas/bad",
    "tests/deploy/yamllint.yaml",
]


def main():
    yamllint = shutil.which("yamllint")
    if yamllint is None:
        d.skip("yamllint is missing: apt-get install yamllint (scripts/install-deps.sh installs it)")
    missing = [p for p in PATHS if not os.path.exists(os.path.join(d.REPO, p))]
    if missing:
        sys.exit(f"FAIL: missing {missing}")
    config = os.path.join(d.REPO, "tests", "deploy", "yamllint.yaml")
    result = subprocess.run([yamllint, "--strict", "-f", "parsable", "-c", config] + PATHS, cwd=d.REPO)
    print(f"yamllint: {'no problems' if result.returncode == 0 else 'problems above'} in {len(PATHS)} paths")
    sys.exit(1 if result.returncode else 0)


if __name__ == "__main__":
    main()
