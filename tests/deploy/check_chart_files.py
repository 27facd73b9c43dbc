#!/usr/bin/env python3
"""The chart's copies of the monitoring files are identical to their sources (Helm reads only
files inside the chart), and its appVersion is the project's version."""
import filecmp
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
import deploylib as d  # noqa: E402

MONITORING = os.path.join(d.REPO, "services", "metrics", "monitoring")
COPIES = {
    "files/gradsync-training.json": "grafana/dashboards/gradsync-training.json",
    "files/alerts.yml": "alerts.yml",
}


def main():
    d.need_modules()
    f = d.Failures()
    for copy, source in COPIES.items():
        a, b = os.path.join(d.CHART, copy), os.path.join(MONITORING, source)
        f.expect(os.path.isfile(a) and filecmp.cmp(a, b, shallow=False),
                 f"helm/gradsync/{copy} differs from services/metrics/monitoring/{source}: "
                 f"cp services/metrics/monitoring/{source} helm/gradsync/{copy}")
    with open(os.path.join(d.REPO, "CMakeLists.txt")) as fh:
        version = re.search(r"project\(gradsync VERSION ([0-9.]+)", fh.read()).group(1)
    chart = d.load_yaml(os.path.join(d.CHART, "Chart.yaml"))
    f.expect(chart.get("apiVersion") == "v2", "Chart.yaml: apiVersion is not v2")
    f.expect(chart.get("appVersion") == version,
             f"Chart.yaml: appVersion {chart.get('appVersion')} is not the project version {version}")
    f.finish("chart files")


if __name__ == "__main__":
    main()
