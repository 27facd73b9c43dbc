#!/usr/bin/env python3
"""docker/compose.yaml parses and is wired up: its builds name existing Dockerfiles and targets,
every file it mounts exists, Prometheus gets the project's scrape config and alert rules and can
reach every target by service name, Grafana gets the provisioned datasource and dashboard where the
provider looks, images are pinned, ports are published on loopback only, and every gradsync
service gets its tokens (made by docker/make-tokens.sh, kept out of git and of the images) with
none started --insecure."""
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
    for name in ("coordinator", "metrics", "worker-0", "worker-1", "worker-2", "prometheus", "grafana"):
        f.expect(name in services, f"no service {name}")
    declared = set(compose.get("volumes") or {})
    for name, s in services.items():
        image = s.get("image", "")
        f.expect(re.search(r":[^/]+$", image) and not image.endswith(":latest"),
                 f"{name}: image {image!r} is not tagged")
        for port in s.get("ports") or []:
            f.expect(str(port).startswith("127.0.0.1:"), f"{name}: port {port} is published beyond loopback")
        for v in s.get("volumes") or []:
            # "${VAR:-default}:target[:mode]": the source as it is when VAR is unset.
            m = re.match(r"\$\{(\w+):-([^}]*)\}(:.*)$", v)
            source = m.group(2) if m else v.split(":")[0]
            if source.startswith((".", "/")):
                f.expect(os.path.exists(os.path.normpath(os.path.join(COMPOSE_DIR, source))),
                         f"{name}: mounts {source}, which does not exist")
            else:
                f.expect(source in declared, f"{name}: volume {source} is not declared")
        if name == "coordinator" or name.startswith("worker-"):
            # Job data: one directory, read-only, at the data root on the coordinator and every worker.
            f.expect(any(str(v).endswith(":/var/lib/gradsync/data:ro") for v in s.get("volumes") or []),
                     f"{name}: no read-only data directory at /var/lib/gradsync/data")
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
    for name in ("worker-0", "worker-1", "worker-2"):
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


# The token files each gradsync service reads, by environment variable, and the secret behind each.
TOKEN_ENV = {"GRADSYNC_AUTH_TOKEN_FILE": "auth_token", "GRADSYNC_CLUSTER_TOKEN_FILE": "cluster_token",
             "GRADSYNC_METRICS_TOKEN_FILE": "metrics_token"}
TOKENS_OF = {"coordinator": TOKEN_ENV, "metrics": ["GRADSYNC_CLUSTER_TOKEN_FILE", "GRADSYNC_METRICS_TOKEN_FILE"],
             "worker-0": ["GRADSYNC_CLUSTER_TOKEN_FILE", "GRADSYNC_METRICS_TOKEN_FILE"],
             "worker-1": ["GRADSYNC_CLUSTER_TOKEN_FILE", "GRADSYNC_METRICS_TOKEN_FILE"],
             "worker-2": ["GRADSYNC_CLUSTER_TOKEN_FILE", "GRADSYNC_METRICS_TOKEN_FILE"]}


def secret_targets(service):
    """{secret: path in the container} of a service's secrets."""
    out = {}
    for s in service.get("secrets") or []:
        source = s if isinstance(s, str) else s["source"]
        target = f"/run/secrets/{source}" if isinstance(s, str) else s.get("target", f"/run/secrets/{source}")
        out[source] = target if target.startswith("/") else f"/run/secrets/{target}"
    return out


def check_tokens(f, compose, services):
    secrets = compose.get("secrets") or {}
    script = os.path.join(COMPOSE_DIR, "make-tokens.sh")
    if not f.expect(os.path.isfile(script), "docker/make-tokens.sh is missing"):
        return
    with open(script) as fh:
        made = fh.read()
    f.expect("for name in auth cluster metrics" in made, "make-tokens.sh does not make the three tokens")
    for name in TOKEN_ENV.values():
        source = (secrets.get(name) or {}).get("file", "")
        f.expect(source == f"./secrets/{name.split('_')[0]}.token", f"secret {name}: file {source!r}")
    with open(os.path.join(COMPOSE_DIR, "secrets", ".gitignore")) as fh:
        f.expect("*" in fh.read().split(), "docker/secrets/.gitignore does not keep the tokens out of git")
    with open(os.path.join(d.REPO, ".dockerignore")) as fh:
        f.expect("docker/secrets" in fh.read().split(), ".dockerignore does not keep the tokens out of the images")
    for name, wanted in TOKENS_OF.items():
        s = services.get(name) or {}
        env, targets = s.get("environment") or {}, secret_targets(s)
        for var in wanted:
            f.expect(env.get(var) == targets.get(TOKEN_ENV[var], "missing"),
                     f"{name}: {var} is {env.get(var)!r}, not its secret {TOKEN_ENV[var]}")
    for name, s in services.items():
        words = [str(w) for w in (s.get("command") or []) + (s.get("entrypoint") or [])]
        words += [f"{k}={v}" for k, v in (s.get("environment") or {}).items()]
        f.expect(not any("insecure" in w.lower() for w in words), f"{name}: started insecure")
    prom = d.load_yaml(os.path.join(MONITORING, "prometheus.yml"))
    token = secret_targets(services.get("prometheus") or {}).get("metrics_token", "")
    for job in prom.get("scrape_configs") or []:
        credentials = ((job.get("authorization") or {}).get("credentials_file") or "")
        f.expect(os.path.join("/etc/prometheus", credentials) == token,
                 f"prometheus: job {job.get('job_name')} reads its token from {credentials!r}, not the metrics token")


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
    check_tokens(f, compose, services)
    check_grafana(f, services)
    f.finish("compose")


if __name__ == "__main__":
    main()
