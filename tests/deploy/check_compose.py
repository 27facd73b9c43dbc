#!/usr/bin/env python3
"""docker/compose.yaml parses and is wired up: its builds name existing Dockerfiles and targets,
every file it mounts exists, Prometheus gets the project's scrape config and alert rules and can
reach every target by service name, Grafana gets the provisioned datasource and dashboard where the
provider looks, images are pinned, and ports are published on loopback only."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
import deploylib as d  # noqa: E402
from dockerfile import Dockerfile  # noqa: E402

COMPOSE_DIR = os.path.join(d.REPO, "docker")
MONITORING = os.path.join(d.REPO, "services", "metrics", "monitoring")


def mounts(service):
    """{container path: host path} of the bind mounts, host paths made absolute."""
    out = {}
    for v in service.get("volumes") or []:
        source, target = v.split(":")[:2]
        if source.startswith((".", "/")):
            out[target] = os.path.normpath(os.path.join(COMPOSE_DIR, source))
    return out


def check_services(f, compose):
    services = compose.get("services") or {}
    for name in ("coordinator", "metrics", "worker-0", "worker-1", "prometheus", "grafana"):
        f.expect(name in services, f"no service {name}")
    declared = set(compose.get("volumes") or {})
    for name, s in services.items():
        image = s.get("image", "")
        f.expect(re.search(r":[^/]+$", image) and not image.endswith(":latest"),
                 f"{name}: image {image!r} is not tagged")
        for port in s.get("ports") or []:
            f.expect(str(port).startswith("127.0.0.1:"), f"{name}: port {port} is published beyond loopback")
        for v in s.get("volumes") or []:
            source = v.split(":")[0]
            if source.startswith((".", "/")):
                f.expect(os.path.exists(os.path.normpath(os.path.join(COMPOSE_DIR, source))),
                         f"{name}: mounts {source}, which does not exist")
            else:
                f.expect(source in declared, f"{name}: volume {source} is not declared")
        build = s.get("build")
        if build:
            context = os.path.normpath(os.path.join(COMPOSE_DIR, build.get("context", ".")))
            dockerfile = os.path.join(context, build.get("dockerfile", "Dockerfile"))
            if f.expect(os.path.isfile(dockerfile), f"{name}: Dockerfile {dockerfile} does not exist"):
                targets = [st.name for st in Dockerfile(dockerfile).final_stages()]
                f.expect(build.get("target") in targets,
                         f"{name}: target {build.get('target')} not in {targets}")
    return services


def check_workers(f, services):
    for name in ("worker-0", "worker-1"):
        env = (services.get(name) or {}).get("environment") or {}
        f.expect(env.get("GRADSYNC_COMM_HOST") == name, f"{name}: GRADSYNC_COMM_HOST is not its service name")
        f.expect(env.get("GRADSYNC_COORDINATOR") == "coordinator:7070", f"{name}: GRADSYNC_COORDINATOR")
        f.expect(env.get("GRADSYNC_METRICS") == "metrics:7071", f"{name}: GRADSYNC_METRICS")
        f.expect("checkpoints" in [v.split(":")[0] for v in services[name].get("volumes") or []],
                 f"{name}: does not share the checkpoints volume")


def check_prometheus(f, services):
    m = mounts(services.get("prometheus") or {})
    config = m.get("/etc/prometheus/prometheus.yml")
    if not f.expect(config == os.path.join(MONITORING, "prometheus.yml"),
                    "prometheus: services/metrics/monitoring/prometheus.yml is not its config"):
        return
    prom = d.load_yaml(config)
    for rule in prom.get("rule_files") or []:
        f.expect(m.get(os.path.join("/etc/prometheus", rule)) == os.path.join(MONITORING, rule),
                 f"prometheus: rule file {rule} is not mounted beside the config")
    for job in prom.get("scrape_configs") or []:
        for sc in job.get("static_configs") or []:
            for target in sc.get("targets") or []:
                f.expect(target.split(":")[0] in services,
                         f"prometheus: target {target} is no compose service")


def check_grafana(f, services):
    m = mounts(services.get("grafana") or {})
    provisioning = os.path.join(MONITORING, "grafana", "provisioning")
    for kind in ("datasources", "dashboards"):
        f.expect(m.get(f"/etc/grafana/provisioning/{kind}") == os.path.join(provisioning, kind),
                 f"grafana: provisioning/{kind} is not mounted")
    provider = d.load_yaml(os.path.join(provisioning, "dashboards", "gradsync.yml"))
    path = provider["providers"][0]["options"]["path"]
    f.expect(m.get(path) == os.path.join(MONITORING, "grafana", "dashboards"),
             f"grafana: the dashboards are not mounted at the provider's path {path}")
    source = d.load_yaml(os.path.join(provisioning, "datasources", "gradsync.yml"))
    url = source["datasources"][0]["url"]
    f.expect(re.match(r"https?://([^:/]+)", url).group(1) in services,
             f"grafana: datasource {url} is no compose service")


def main():
    d.need_modules()
    f = d.Failures()
    compose = d.load_yaml(os.path.join(COMPOSE_DIR, "compose.yaml"))
    services = check_services(f, compose)
    check_workers(f, services)
    check_prometheus(f, services)
    check_grafana(f, services)
    f.finish("compose")


if __name__ == "__main__":
    main()
