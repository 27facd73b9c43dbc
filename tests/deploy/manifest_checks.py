"""Checks on rendered manifests that hold for every values file: labels, restricted pod security,
names, and the wiring between objects (selectors, volumes, the checkpoint mount)."""

LABELS = ("app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version",
          "app.kubernetes.io/component", "app.kubernetes.io/part-of",
          "app.kubernetes.io/managed-by", "helm.sh/chart")
WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet", "Job")
POD_KINDS = WORKLOADS + ("Pod",)  # objects that run containers: workloads and bare pods (hooks)


def ident(doc):
    return f"{doc.get('kind')}/{doc.get('metadata', {}).get('name')}"


def pod_spec(doc):
    return doc["spec"] if doc["kind"] == "Pod" else doc["spec"]["template"]["spec"]


def check_labels(f, doc, release):
    labels = doc.get("metadata", {}).get("labels") or {}
    missing = [k for k in LABELS if k not in labels]
    f.expect(not missing, f"{ident(doc)}: labels {missing} missing")
    f.expect(labels.get("app.kubernetes.io/instance") == release,
             f"{ident(doc)}: app.kubernetes.io/instance is not {release!r}")
    f.expect(labels.get("app.kubernetes.io/managed-by") == "Helm",
             f"{ident(doc)}: app.kubernetes.io/managed-by is not Helm")
    name = doc["metadata"]["name"]
    limit = 52 if doc["kind"] == "StatefulSet" else 63
    f.expect(len(name) <= limit, f"{ident(doc)}: name longer than {limit}")
    if doc["kind"] in WORKLOADS:
        pod_labels = doc["spec"]["template"]["metadata"].get("labels") or {}
        missing = [k for k in LABELS if k not in pod_labels]
        f.expect(not missing, f"{ident(doc)}: pod labels {missing} missing")
        selector = doc["spec"]["selector"]["matchLabels"]
        f.expect(selector.items() <= pod_labels.items(),
                 f"{ident(doc)}: selector {selector} does not match its pods")


def check_pod_security(f, doc):
    """The restricted Pod Security Standard, plus a writable /tmp on a read-only root."""
    spec = pod_spec(doc)
    who = ident(doc)
    psc = spec.get("securityContext") or {}
    f.expect(psc.get("runAsNonRoot") is True, f"{who}: pod runAsNonRoot is not true")
    f.expect(isinstance(psc.get("runAsUser"), int) and psc["runAsUser"] > 0,
             f"{who}: pod runAsUser is not a non-zero number")
    f.expect((psc.get("seccompProfile") or {}).get("type") == "RuntimeDefault",
             f"{who}: pod seccompProfile is not RuntimeDefault")
    f.expect(spec.get("automountServiceAccountToken") is False,
             f"{who}: the service account token is mounted")
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        f.expect(not spec.get(key), f"{who}: {key} is set")
    volumes = {v["name"]: v for v in spec.get("volumes") or []}
    f.expect(not any("hostPath" in v for v in volumes.values()), f"{who}: hostPath volume")
    for c in (spec.get("initContainers") or []) + spec["containers"]:
        cwho = f"{who} container {c['name']}"
        sc = c.get("securityContext") or {}
        f.expect(sc.get("allowPrivilegeEscalation") is False,
                 f"{cwho}: allowPrivilegeEscalation is not false")
        f.expect(sc.get("readOnlyRootFilesystem") is True,
                 f"{cwho}: readOnlyRootFilesystem is not true")
        f.expect((sc.get("capabilities") or {}).get("drop") == ["ALL"],
                 f"{cwho}: capabilities do not drop ALL")
        f.expect(not (sc.get("capabilities") or {}).get("add"), f"{cwho}: adds capabilities")
        f.expect(sc.get("privileged") is not True, f"{cwho}: privileged")
        f.expect(sc.get("runAsNonRoot", psc.get("runAsNonRoot")) is True,
                 f"{cwho}: runAsNonRoot is not true")
        f.expect((sc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
                 == "RuntimeDefault", f"{cwho}: seccompProfile is not RuntimeDefault")
        tmp = [m for m in c.get("volumeMounts") or [] if m["mountPath"] == "/tmp"]
        f.expect(len(tmp) == 1 and "emptyDir" in volumes.get(tmp[0]["name"], {}),
                 f"{cwho}: /tmp is not an emptyDir")
        for m in c.get("volumeMounts") or []:
            f.expect(m["name"] in volumes, f"{cwho}: mounts undefined volume {m['name']}")


def check_services(f, docs):
    pods = [d["spec"]["template"]["metadata"]["labels"] for d in docs if d["kind"] in WORKLOADS]
    for svc in (d for d in docs if d["kind"] == "Service"):
        selector = svc["spec"].get("selector") or {}
        f.expect(selector and any(selector.items() <= p.items() for p in pods),
                 f"{ident(svc)}: selects no pods of the release")


def check_secrets(f, docs, release):
    """The one Secret the chart may make holds its generated tokens, under their three keys."""
    for s in (d for d in docs if d["kind"] == "Secret"):
        f.expect(s["metadata"]["name"] == f"{release}-gradsync-tokens", f"{ident(s)}: a Secret other than the tokens")
        f.expect(set(s.get("data") or {}) == {"api-token", "cluster-token", "metrics-token"},
                 f"{ident(s)}: keys {sorted(s.get('data') or {})}")


def check_all(f, docs, release):
    for doc in docs:
        f.expect(doc.get("apiVersion") and doc.get("kind") and doc.get("metadata", {}).get("name"),
                 f"object without apiVersion, kind or name: {str(doc)[:80]}")
        check_labels(f, doc, release)
        if doc["kind"] in POD_KINDS:
            check_pod_security(f, doc)
    check_services(f, docs)
    check_secrets(f, docs, release)
