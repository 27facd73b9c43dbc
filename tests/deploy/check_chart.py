#!/usr/bin/env python3
"""Renders helm/gradsync with the renderer in tests/deploy/render for several values files and
checks the manifests: they parse, every object is labelled, every pod is restricted, the workers
follow the values, every service reads each of its tokens from the Secret the values name or the
chart's generated one (whose tokens an upgrade keeps), the operator objects appear only when the
API exists and they are enabled, the `helm test` pods check every service's health, and bad values
fail with a message that says what to do.

    check_chart.py BUILD_DIR      (the renderer is built into BUILD_DIR)
"""
import base64
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import deploylib as d  # noqa: E402
import manifest_checks  # noqa: E402

RELEASE = "ci"
FULLNAME = f"{RELEASE}-gradsync"


def parse(f, text, what):
    import yaml
    try:
        docs = [doc for doc in yaml.safe_load_all(text) if doc]
    except yaml.YAMLError as e:
        f.expect(False, f"{what}: the output does not parse: {e}")
        return []
    f.expect(docs, f"{what}: nothing rendered")
    return docs


def find(docs, kind, component=None):
    return [x for x in docs if x["kind"] == kind and (
        component is None
        or x["metadata"]["labels"].get("app.kubernetes.io/component") == component)]


def one(f, docs, kind, component, what):
    found = find(docs, kind, component)
    f.expect(len(found) == 1, f"{what}: {len(found)} {kind} for {component}, want 1")
    return found[0] if found else None


def container(workload):
    return manifest_checks.pod_spec(workload)["containers"][0]


def per_node(values):
    """Whether the workers run in the perNode layout: one pod per node, a worker per GPU."""
    w = values["workers"]
    return bool(w["gpus"]) and w["layout"] == "perNode"


def workers_per_pod(values):
    return values["workers"]["gpusPerNode"] if per_node(values) else 1


def worker_ports(values):
    """{port name: number} of a worker pod: worker K's metrics and health ports are the base ports
    plus K, named metrics-K and health-K (plain metrics and health for K = 0)."""
    ports = {}
    for k in range(workers_per_pod(values)):
        for name, base in values["workers"]["ports"].items():
            ports[name if k == 0 else f"{name}-{k}"] = base + k
    return ports


def check_workers(f, docs, values, what):
    w = values["workers"]
    sts = one(f, docs, "StatefulSet", "worker", what)
    if sts is None:
        return
    spec, pod, c = sts["spec"], manifest_checks.pod_spec(sts), container(sts)
    f.expect(spec["replicas"] == w["replicas"], f"{what}: worker replicas {spec['replicas']}")
    f.expect(spec.get("podManagementPolicy") == "Parallel", f"{what}: workers not Parallel")
    gpus = (c.get("resources", {}).get("limits") or {}).get("nvidia.com/gpu")
    want_gpus = w["gpusPerNode"] if per_node(values) else (w["gpus"] or None)
    f.expect(gpus == want_gpus, f"{what}: nvidia.com/gpu limit {gpus}, want {want_gpus} ({w['layout']})")
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    f.expect(ports == worker_ports(values), f"{what}: worker ports {ports}, want {worker_ports(values)}")
    for probe in ("startupProbe", "livenessProbe"):
        port = c.get(probe, {}).get("grpc", {}).get("port")
        f.expect(port == w["ports"]["health"], f"{what}: worker {probe} not gRPC on the health port")
    args = c["args"]
    f.expect(f"--health-listen=0.0.0.0:{w['ports']['health']}" in args, f"{what}: --health-listen")
    f.expect(f"--metrics-listen=0.0.0.0:{w['ports']['metrics']}" in args, f"{what}: --metrics-listen")
    # perNode: the node agent (--gpus all) gives each worker its GPU; otherwise one --device.
    devices = [a for a in args if a.startswith("--device=")]
    if per_node(values):
        f.expect("--gpus=all" in args and not devices, f"{what}: perNode workers are not --gpus=all: {args}")
    else:
        want = w["device"] or ("cuda" if w["gpus"] else "cpu")
        f.expect(devices == [f"--device={want}"] and not any(a.startswith("--gpus") for a in args),
                 f"{what}: worker --device {devices}, want {want}")
    service_ports = {p["name"]: (p["port"], p["targetPort"]) for s in find(docs, "Service")
                     if s["metadata"]["name"] == spec["serviceName"] for p in s["spec"]["ports"]}
    f.expect(service_ports == {name: (port, name) for name, port in worker_ports(values).items()},
             f"{what}: the headless Service's ports {service_ports} are not every worker's")
    env = {e["name"]: e for e in c["env"]}
    comm = env.get("GRADSYNC_COMM_HOST", {}).get("valueFrom", {}).get("fieldRef", {})
    f.expect(comm.get("fieldPath") == "status.podIP", f"{what}: GRADSYNC_COMM_HOST is not the pod IP")
    f.expect(env.get("NCCL_SOCKET_IFNAME", {}).get("value") == w["nccl"]["socketIfname"],
             f"{what}: NCCL_SOCKET_IFNAME")
    f.expect(env.get("NCCL_DEBUG", {}).get("value") == w["nccl"]["debug"], f"{what}: NCCL_DEBUG")
    volumes = {v["name"]: v for v in pod["volumes"]}
    shm = [m["name"] for m in c["volumeMounts"] if m["mountPath"] == "/dev/shm"]
    shm_dir = volumes.get(shm[0], {}).get("emptyDir", {}) if shm else {}
    f.expect(shm_dir.get("medium") == "Memory" and shm_dir.get("sizeLimit") == w["shmSize"],
             f"{what}: /dev/shm is not a memory emptyDir of {w['shmSize']}")
    f.expect(pod.get("tolerations", []) == w["tolerations"], f"{what}: worker tolerations")
    f.expect(pod.get("nodeSelector", {}) == w["nodeSelector"], f"{what}: worker nodeSelector")
    f.expect(pod.get("affinity", {}) == w["affinity"], f"{what}: worker affinity")
    headless = [s for s in find(docs, "Service") if s["metadata"]["name"] == spec["serviceName"]]
    f.expect(headless and headless[0]["spec"].get("clusterIP") == "None",
             f"{what}: serviceName {spec['serviceName']} is not a headless Service")


def checkpoint_claim(workload, mount_path):
    pod, c = manifest_checks.pod_spec(workload), container(workload)
    names = [m["name"] for m in c["volumeMounts"] if m["mountPath"] == mount_path]
    claims = [v.get("persistentVolumeClaim", {}).get("claimName")
              for v in pod["volumes"] if names and v["name"] == names[0]]
    return claims[0] if claims else None


def check_coordinator_probes(f, coord, sts, values, what):
    """Without TLS, Kubernetes' gRPC probes on the gRPC port. With TLS (which those probes do not
    speak) `gradsync healthcheck` of the gRPC port in the container, verifying the certificate with
    tls.existingSecret's CA against the name the workers dial: never a bare TCP check."""
    c, grpc_port = container(coord), values["coordinator"]["ports"]["grpc"]
    dialled = [a.split("=", 1)[1] for a in container(sts)["args"] if a.startswith("--coordinator=")]
    service = dialled[0].rsplit(":", 1)[0] if dialled else None
    for name in ("readinessProbe", "livenessProbe"):
        probe = c.get(name, {})
        if not values["tls"]["enabled"]:
            f.expect(probe.get("grpc", {}).get("port") == grpc_port, f"{what}: coordinator {name} not gRPC: {probe}")
            continue
        command = probe.get("exec", {}).get("command", [])
        flags = dict(a[2:].split("=", 1) for a in command[3:] if a.startswith("--") and "=" in a)
        f.expect(command[:3] == ["gradsync", "healthcheck", f"127.0.0.1:{grpc_port}"],
                 f"{what}: coordinator {name} is not gradsync healthcheck of the gRPC port: {probe}")
        f.expect(mounted_secret(coord, flags.get("tls-ca", "")) == (values["tls"]["existingSecret"], values["tls"]["caKey"]),
                 f"{what}: coordinator {name} --tls-ca is not the CA of tls.existingSecret")
        f.expect(flags.get("tls-server-name") == service,
                 f"{what}: coordinator {name} verifies {flags.get('tls-server-name')}, the workers dial {service}")
        timeout = int(flags.get("timeout", "0"))
        f.expect(0 < timeout < probe.get("timeoutSeconds", 1),
                 f"{what}: coordinator {name} --timeout {timeout} does not end before timeoutSeconds")


def check_coordinator(f, docs, values, what):
    coord = one(f, docs, "Deployment", "coordinator", what)
    sts = one(f, docs, "StatefulSet", "worker", what)
    if coord is None or sts is None:
        return
    f.expect(coord["spec"]["replicas"] == 1, f"{what}: coordinator replicas")
    f.expect(coord["spec"]["strategy"] == {"type": "Recreate"}, f"{what}: coordinator not Recreate")
    args = container(coord)["args"]
    f.expect("--state-dir=/var/lib/gradsync/state" in args, f"{what}: --state-dir")
    for flag in ("--auth-token-file=", "--cluster-token-file="):
        f.expect(any(a.startswith(flag) for a in args), f"{what}: coordinator lacks {flag}")
    tls = values["tls"]["enabled"]
    check_coordinator_probes(f, coord, sts, values, what)
    f.expect(any(a.startswith("--tls-cert-file=") for a in args) == tls, f"{what}: coordinator TLS flags")
    f.expect(any(a.startswith("--tls-ca-file=") for a in container(sts)["args"]) == tls,
             f"{what}: worker --tls-ca-file against tls.enabled")
    state = checkpoint_claim(coord, "/var/lib/gradsync/state")
    f.expect(bool(state) == values["coordinator"]["persistence"]["enabled"],
             f"{what}: coordinator state claim {state!r} against persistence.enabled")
    mount = values["checkpoints"]["mountPath"]
    claims = {checkpoint_claim(coord, mount), checkpoint_claim(sts, mount)}
    f.expect(len(claims) == 1 and None not in claims,
             f"{what}: coordinator and workers do not share the checkpoint claim at {mount}: {claims}")
    want = values["checkpoints"]["existingClaim"] or f"{RELEASE}-gradsync-checkpoints"
    f.expect(claims == {want}, f"{what}: checkpoint claim {claims}, want {want}")
    created = [p for p in find(docs, "PersistentVolumeClaim") if p["metadata"]["name"] == want]
    f.expect(bool(created) != bool(values["checkpoints"]["existingClaim"]),
             f"{what}: checkpoint claim created or not against checkpoints.existingClaim")
    if created:
        f.expect(created[0]["spec"]["accessModes"] == ["ReadWriteMany"], f"{what}: checkpoints not RWX")
    check_paths(f, coord, sts, values, what)
    check_metrics_state(f, docs, values, what)


def check_metrics_state(f, docs, values, what):
    """The metrics service keeps the curves under --state-dir: on its claim when persistence is on
    (one pod at a time: Recreate), in an emptyDir otherwise."""
    m = one(f, docs, "Deployment", "metrics", what)
    if m is None:
        return
    f.expect(m["spec"].get("strategy") == {"type": "Recreate"}, f"{what}: metrics service not Recreate")
    f.expect("--state-dir=/var/lib/gradsync/metrics" in container(m)["args"], f"{what}: metrics --state-dir")
    persistence = values["metrics"]["persistence"]
    claim = checkpoint_claim(m, "/var/lib/gradsync/metrics")
    want = (persistence["existingClaim"] or f"{RELEASE}-gradsync-metrics-state") if persistence["enabled"] else None
    f.expect(claim == want, f"{what}: metrics state claim {claim!r}, want {want!r}")
    created = [p for p in find(docs, "PersistentVolumeClaim") if p["metadata"]["name"] == f"{RELEASE}-gradsync-metrics-state"]
    f.expect(bool(created) == (persistence["enabled"] and not persistence["existingClaim"]),
             f"{what}: metrics state claim created or not against metrics.persistence")


def check_paths(f, coord, sts, values, what):
    """The coordinator confines jobs to the roots of the values; the data claim, when named, is
    mounted read-only at the data root on the coordinator and on every worker."""
    paths = values["paths"]
    root = paths["artifactRoot"] or values["checkpoints"]["mountPath"]
    args = container(coord)["args"]
    f.expect(f"--artifact-root={root}" in args, f"{what}: coordinator --artifact-root is not {root}")
    f.expect(f"--data-root={paths['dataRoot']}" in args, f"{what}: coordinator --data-root")
    for workload in (coord, sts):
        mounts = [m for m in container(workload)["volumeMounts"] if m["mountPath"] == paths["dataRoot"]]
        claim = checkpoint_claim(workload, paths["dataRoot"]) if mounts else None
        f.expect(claim == (paths["dataClaim"] or None), f"{what}: data claim {claim}, want {paths['dataClaim']}")
        f.expect(all(m.get("readOnly") for m in mounts), f"{what}: the data is mounted writable")


# The token flags, the values that name each token's Secret and key, and who needs which token.
TOKEN_FLAGS = {"api": "--auth-token-file", "cluster": "--cluster-token-file", "metrics": "--metrics-token-file"}
TOKEN_VALUES = {"api": ("existingSecret", "tokenKey"), "cluster": ("clusterTokenSecret", "clusterTokenKey"),
                "metrics": ("metricsTokenSecret", "metricsTokenKey")}
TOKENS_OF = {("Deployment", "coordinator"): ("api", "cluster", "metrics"),
             ("Deployment", "metrics"): ("cluster", "metrics"),
             ("StatefulSet", "worker"): ("cluster", "metrics")}
GENERATED = f"{RELEASE}-gradsync-tokens"


def token_source(values, token):
    """(Secret, key) a token must come from: the Secret the values name, or the chart's own."""
    name_key, key_key = TOKEN_VALUES[token]
    name = values["auth"][name_key]
    return (name, values["auth"][key_key]) if name else (GENERATED, f"{token}-token")


def mounted_secret(workload, path, c=None):
    """(Secret, key) of the secret volume item mounted as the file `path` in container c (the
    first by default), or None."""
    pod, c = manifest_checks.pod_spec(workload), c or container(workload)
    for m in c["volumeMounts"]:
        if m["mountPath"].rstrip("/") != os.path.dirname(path):
            continue
        secret = next((v.get("secret") for v in pod["volumes"] if v["name"] == m["name"]), None)
        items = [i for i in (secret or {}).get("items", []) if i["path"] == os.path.basename(path)]
        return (secret["secretName"], items[0]["key"]) if items else None
    return None


def check_tokens(f, docs, values, what):
    """Every service gets each token it needs from the right Secret; the chart makes its own
    Secret exactly when a name is left empty, and the ServiceMonitor presents the metrics token."""
    for (kind, component), tokens in TOKENS_OF.items():
        workload = one(f, docs, kind, component, what)
        if workload is None:
            continue
        args = container(workload)["args"]
        for token in tokens:
            flag = TOKEN_FLAGS[token]
            paths = [a.split("=", 1)[1] for a in args if a.startswith(flag + "=")]
            if f.expect(len(paths) == 1, f"{what}: {component} lacks {flag}"):
                got, want = mounted_secret(workload, paths[0]), token_source(values, token)
                f.expect(got == want, f"{what}: {component} {flag} reads {got}, want {want}")
    generated = [s for s in find(docs, "Secret") if s["metadata"]["name"] == GENERATED]
    wanted = any(not values["auth"][name] for name, _ in TOKEN_VALUES.values())
    f.expect(len(generated) == int(wanted), f"{what}: {len(generated)} generated token Secrets, want {int(wanted)}")
    for key, value in (generated[0]["data"] if generated else {}).items():
        f.expect(len(base64.b64decode(value)) >= 32, f"{what}: generated {key} is shorter than 32 characters")
    for monitor in find(docs, "ServiceMonitor"):
        for e in monitor["spec"]["endpoints"]:
            auth = e.get("authorization") or {}
            cred = auth.get("credentials") or {}
            f.expect(auth.get("type") == "Bearer" and (cred.get("name"), cred.get("key")) == token_source(values, "metrics"),
                     f"{what}: the ServiceMonitor does not present the metrics token: {auth}")


def check_tokens_kept_on_upgrade(f, renderer):
    """A fresh install makes new tokens; an upgrade, whose lookup finds the Secret the install
    made, keeps them (or every worker and client would lose its credentials)."""
    def generated(objects=()):
        rc, out, err = d.render(renderer, objects=objects)
        if not f.expect(rc == 0, f"upgrade: render failed: {err.strip()}"):
            return None
        secrets = [s for s in parse(f, out, "upgrade") if s["kind"] == "Secret"]
        return secrets[0] if f.expect(len(secrets) == 1, "upgrade: no generated token Secret") else None

    first, other = generated(), generated()
    if first is None or other is None:
        return
    f.expect(first["data"] != other["data"], "upgrade: two installs got the same tokens")
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as tmp:
        json.dump(dict(first, metadata=dict(first["metadata"], namespace="training")), tmp)
    try:
        upgraded = generated([tmp.name])
    finally:
        os.unlink(tmp.name)
    f.expect(upgraded is not None and upgraded["data"] == first["data"], "upgrade: the tokens changed")


def check_monitoring(f, docs, values, with_api, what):
    mon = values["monitoring"]
    for kind, key in (("ServiceMonitor", "serviceMonitor"), ("PrometheusRule", "prometheusRule")):
        want = 1 if with_api and mon[key]["enabled"] else 0
        got = len(find(docs, kind))
        f.expect(got == want, f"{what}: {got} {kind}, want {want}")
    for monitor in find(docs, "ServiceMonitor"):
        scraped = [e["port"] for e in monitor["spec"]["endpoints"]]
        want = [name for name in worker_ports(values) if name.startswith("metrics")]
        f.expect(scraped == want, f"{what}: the ServiceMonitor scrapes ports {scraped}, want {want}")
    rules = find(docs, "PrometheusRule")
    if rules:
        alerts = d.load_yaml(os.path.join(d.REPO, "services/metrics/monitoring/alerts.yml"))
        f.expect(rules[0]["spec"]["groups"] == alerts["groups"],
                 f"{what}: PrometheusRule groups differ from alerts.yml")
    svc = one(f, docs, "Service", "metrics", what)
    if svc is not None:
        ann = svc["metadata"].get("annotations", {})
        f.expect(ann.get("prometheus.io/scrape") == "true" and
                 ann.get("prometheus.io/port") == str(values["metrics"]["ports"]["http"]),
                 f"{what}: metrics Service not annotated for scraping")
    maps = [m for m in find(docs, "ConfigMap") if m["metadata"]["labels"].get("grafana_dashboard") == "1"]
    f.expect(len(maps) == (1 if mon["dashboard"]["enabled"] else 0), f"{what}: dashboard ConfigMaps")
    for m in maps:
        text = m["data"]["gradsync-training.json"]
        dashboard = json.loads(text)
        f.expect(dashboard.get("uid") == "gradsync-training", f"{what}: dashboard uid")
        uid = mon["dashboard"]["datasourceUid"] or "gradsync-prometheus"
        replaced = uid == "gradsync-prometheus" or "gradsync-prometheus" not in text
        f.expect(f'"uid": "{uid}"' in text and replaced, f"{what}: dashboard datasource uid is not {uid}")


def test_targets(values):
    """{address: whether over TLS} that `helm test` must check: the coordinator, the metrics
    service and each worker at its name in the headless Service."""
    w = values["workers"]
    want = {f"{FULLNAME}-coordinator:{values['coordinator']['ports']['grpc']}": values["tls"]["enabled"],
            f"{FULLNAME}-metrics:{values['metrics']['ports']['grpc']}": False}
    for i in range(w["replicas"]):
        for k in range(workers_per_pod(values)):
            want[f"{FULLNAME}-worker-{i}.{FULLNAME}-workers:{w['ports']['health'] + k}"] = False
    return want


def test_checks(f, pod, values, what):
    """{address: over TLS} of the pod's `gradsync healthcheck` containers; a --tls-ca must be the
    CA of tls.existingSecret."""
    got = {}
    f.expect(pod["spec"].get("restartPolicy") == "Never", f"{what}: test pod {pod['metadata']['name']} restarts")
    for c in pod["spec"]["containers"]:
        args = c.get("args") or []
        if not f.expect(c.get("command") == ["gradsync"] and args[:1] == ["healthcheck"] and len(args) > 1,
                        f"{what}: test container {c['name']} runs {c.get('command')} {args}, not gradsync healthcheck"):
            continue
        cas = [a.split("=", 1)[1] for a in args if a.startswith("--tls-ca=")]
        if cas:
            ca = mounted_secret(pod, cas[0], c)
            f.expect(ca == (values["tls"]["existingSecret"], values["tls"]["caKey"]),
                     f"{what}: test container {c['name']} --tls-ca reads {ca}")
        got[args[1]] = bool(cas)
    return got


def check_test_hook(f, docs, values, what):
    """`helm test` asks every component for grpc.health.v1 SERVING: the coordinator at the address
    the workers dial, with the CA when TLS is on; the metrics service; each worker. Each address is
    a Service of the release and a port it serves, and the test pods are peers the policies admit."""
    pods = find(docs, "Pod")
    hooks = [p for p in pods if (p["metadata"].get("annotations") or {}).get("helm.sh/hook") == "test"]
    f.expect(len(hooks) == len(pods) and hooks, f"{what}: {len(hooks)} test hook pods of {len(pods)} pods")
    got = {}
    for pod in hooks:
        got.update(test_checks(f, pod, values, what))
        peer = {"app.kubernetes.io/name": "gradsync", "app.kubernetes.io/instance": RELEASE}
        f.expect(peer.items() <= pod["metadata"]["labels"].items(), f"{what}: test pods are not release peers")
    want = test_targets(values)
    f.expect(got == want, f"{what}: helm test checks {got}, want {want}")
    sts = find(docs, "StatefulSet", "worker")
    dialled = [a.split("=", 1)[1] for a in (container(sts[0])["args"] if sts else []) if a.startswith("--coordinator=")]
    f.expect(dialled and dialled[0] in got, f"{what}: helm test does not dial the coordinator at {dialled}")
    services = {s["metadata"]["name"]: s for s in find(docs, "Service")}
    for address in got:
        host, port = address.rsplit(":", 1)
        svc = services.get(host.split(".")[-1], {})
        ports = [p["port"] for p in svc.get("spec", {}).get("ports", [])]
        f.expect(int(port) in ports, f"{what}: helm test dials {address}, which no Service serves")


def check_network_policy(f, docs, values, what):
    policies = find(docs, "NetworkPolicy")
    if not values["networkPolicy"]["enabled"]:
        f.expect(not policies, f"{what}: NetworkPolicy rendered while disabled")
        return
    worker = one(f, docs, "NetworkPolicy", "worker", what)
    f.expect(len(policies) == 3, f"{what}: {len(policies)} NetworkPolicies, want 3")
    if worker is None:
        return
    peer = {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "gradsync",
                                            "app.kubernetes.io/instance": RELEASE}}}
    rules = worker["spec"]["ingress"]
    f.expect(worker["spec"]["policyTypes"] == ["Ingress"], f"{what}: worker policy types")
    f.expect(any(r.get("from") == [peer] for r in rules), f"{what}: workers not open to the release")
    metrics_port = values["workers"]["ports"]["metrics"]
    last = metrics_port + workers_per_pod(values) - 1
    for r in rules:
        if r.get("from") != [peer]:
            got = [(p["port"], p.get("endPort", p["port"])) for p in r.get("ports", [])]
            f.expect(got == [(metrics_port, last)],
                     f"{what}: a worker ingress rule beyond the release opens {got}, not /metrics {metrics_port}-{last}")


def check_notes(f, renderer, files, values, what):
    rc, out, err = d.render(renderer, files, notes=True)
    if not f.expect(rc == 0, f"{what}: NOTES.txt fails: {err.strip()}"):
        return
    ranks = values["workers"]["replicas"] * workers_per_pod(values)
    for text in ("gradsync submit", "/v1/jobs", "Authorization: Bearer", "GRADSYNC_TOKEN_FILE",
                 f"secret {token_source(values, 'api')[0]} ", "port-forward", f"helm test {RELEASE} ",
                 f"--set training.worldSize={ranks}\n"):
        f.expect(text in out, f"{what}: NOTES.txt does not mention {text!r}")
    # With TLS every command verifies the coordinator: the CA from the TLS Secret, and the Service's
    # name, which its certificate carries, since the port-forward is dialled at 127.0.0.1.
    service = f"{FULLNAME}-coordinator"
    tls_texts = (f"secret {values['tls']['existingSecret']} ", "GRADSYNC_TLS_CA_FILE=",
                 f"GRADSYNC_TLS_SERVER_NAME={service}\n", f"--tls-ca ca.crt --tls-server-name {service}",
                 f"--cacert ca.crt --connect-to {service}:", f"https://{service}:")
    for text in tls_texts:
        f.expect((text in out) == values["tls"]["enabled"],
                 f"{what}: NOTES.txt mentions {text!r} against tls.enabled={values['tls']['enabled']}")
    plain_rest = f"http://127.0.0.1:{values['coordinator']['ports']['rest']}/"
    f.expect((plain_rest in out) != values["tls"]["enabled"], f"{what}: NOTES.txt's REST scheme against TLS")
    f.expect(("(layout perNode)" in out) == per_node(values), f"{what}: NOTES.txt's worker layout against the values")


def check_refused(f, renderer, values_text, message, what):
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as tmp:
        tmp.write(values_text)
    try:
        rc, out, err = d.render(renderer, [tmp.name] if values_text else [])
    finally:
        os.unlink(tmp.name)
    f.expect(rc != 0 and message in err,
             f"{what}: want a failure saying {message!r}, got rc {rc}: {err.strip()[:200]}")


def main():
    d.need_modules()
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    renderer = d.build_renderer(sys.argv[1])
    f = d.Failures()
    for what, files, api_versions in d.render_cases():
        values = d.chart_values(*files)
        f.expect(not d.schema_errors(values), f"{what}: values do not match the schema")
        rc, out, err = d.render(renderer, files, api_versions)
        if not f.expect(rc == 0, f"{what}: render failed: {err.strip()}"):
            continue
        f.expect(out.startswith("---\n# Source: gradsync/templates/"), f"{what}: no Source header")
        docs = parse(f, out, what)
        manifest_checks.check_all(f, docs, RELEASE)
        check_workers(f, docs, values, what)
        check_coordinator(f, docs, values, what)
        check_tokens(f, docs, values, what)
        check_monitoring(f, docs, values, bool(api_versions), what)
        check_network_policy(f, docs, values, what)
        check_test_hook(f, docs, values, what)
        check_notes(f, renderer, files, values, what)
        print(f"{what}: {len(docs)} objects")

    check_tokens_kept_on_upgrade(f, renderer)
    check_refused(f, renderer, "auth: {existingSecret: a, clusterTokenSecret: b}\ntls: {enabled: true}\n",
                  "tls.existingSecret is required when tls.enabled", "TLS without a secret")
    check_refused(f, renderer, "auth: {existingSecret: a, clusterTokenSecret: b}\npaths: {artifactRoot: /srv/jobs}\n",
                  "paths.artifactRoot /srv/jobs must lie under checkpoints.mountPath", "artifacts off the volume")
    check_refused(f, renderer, "auth: {existingSecret: a, clusterTokenSecret: b}\nworkers: {ports: {metrics: 65530}}\n",
                  "workers.ports.metrics 65530: the worker of GPU 7 would listen on 65537", "ports beyond 65535")
    f.finish("chart")


if __name__ == "__main__":
    main()
