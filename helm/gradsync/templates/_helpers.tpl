{{/*
Names. Resource names are "<fullname>-<component>"; fullname stops at 40 characters so that the
longest, the worker StatefulSet, keeps its pods' controller-revision-hash label within 63.
*/}}
{{- define "gradsync.name" -}}
{{- .Values.nameOverride | default .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "gradsync.fullname" -}}
{{- $name := include "gradsync.name" . -}}
{{- $full := .Values.fullnameOverride -}}
{{- if not $full -}}
{{- $full = ternary .Release.Name (printf "%s-%s" .Release.Name $name) (contains $name .Release.Name) -}}
{{- end -}}
{{- $full | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{/* "<fullname>-<component>"; call with (dict "ctx" $ "component" "worker"). */}}
{{- define "gradsync.componentName" -}}
{{- printf "%s-%s" (include "gradsync.fullname" .ctx) .component -}}
{{- end -}}

{{- define "gradsync.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Labels. gradsync.labels goes on every object, gradsync.selectorLabels on selectors (it must not
change between upgrades). Both take (dict "ctx" $ "component" NAME).
*/}}
{{- define "gradsync.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gradsync.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "gradsync.labels" -}}
helm.sh/chart: {{ include "gradsync.chart" .ctx }}
{{ include "gradsync.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/part-of: gradsync
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
{{- end -}}

{{/* Every pod of this release, whatever its component: the peers NetworkPolicies trust. */}}
{{- define "gradsync.releasePeer" -}}
podSelector:
  matchLabels:
    app.kubernetes.io/name: {{ include "gradsync.name" . }}
    app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Image reference; call with (dict "ctx" $ "image" .Values.coordinator.image). */}}
{{- define "gradsync.image" -}}
{{- $repository := .image.repository -}}
{{- with .ctx.Values.image.registry -}}
{{- $repository = printf "%s/%s" (trimSuffix "/" .) $repository -}}
{{- end -}}
{{- printf "%s:%s" $repository (.ctx.Values.image.tag | default .ctx.Chart.AppVersion) -}}
{{- end -}}

{{- define "gradsync.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "gradsync.fullname" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{/*
Pod and container security: the "restricted" Pod Security Standard. Only the IDs come from
values; the rest is not negotiable.
*/}}
{{- define "gradsync.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ .Values.securityContext.runAsUser }}
runAsGroup: {{ .Values.securityContext.runAsGroup }}
fsGroup: {{ .Values.securityContext.fsGroup }}
fsGroupChangePolicy: OnRootMismatch
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "gradsync.containerSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ .Values.securityContext.runAsUser }}
runAsGroup: {{ .Values.securityContext.runAsGroup }}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* The pod-level fields every component shares: identity, security, pull secrets. */}}
{{- define "gradsync.podCommon" -}}
serviceAccountName: {{ include "gradsync.serviceAccountName" . }}
automountServiceAccountToken: false
enableServiceLinks: false
securityContext:
  {{- include "gradsync.podSecurityContext" . | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Node placement from a component's values: nodeSelector, tolerations, affinity. */}}
{{- define "gradsync.placement" -}}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
The three tokens: the API token (job APIs), the cluster token (workers to the coordinator and to
the metrics service) and the metrics token (every /metrics and the metrics JSON API). Each comes
from the existing Secret its auth.* value names or, when that is empty, from the Secret the chart
makes, <fullname>-tokens (secret-tokens.yaml). "gradsync.tokenSecret" and "gradsync.tokenKey"
give the Secret and the key of one; call them with (dict "ctx" $ "token" "api"|"cluster"|"metrics").
*/}}
{{- define "gradsync.generatedTokensSecret" -}}
{{- include "gradsync.componentName" (dict "ctx" . "component" "tokens") -}}
{{- end -}}

{{- define "gradsync.tokenSecret" -}}
{{- $auth := .ctx.Values.auth -}}
{{- $named := get (dict "api" $auth.existingSecret "cluster" $auth.clusterTokenSecret "metrics" $auth.metricsTokenSecret) .token -}}
{{- $named | default (include "gradsync.generatedTokensSecret" .ctx) -}}
{{- end -}}

{{- define "gradsync.tokenKey" -}}
{{- $auth := .ctx.Values.auth -}}
{{- $named := get (dict "api" $auth.existingSecret "cluster" $auth.clusterTokenSecret "metrics" $auth.metricsTokenSecret) .token -}}
{{- $key := get (dict "api" $auth.tokenKey "cluster" $auth.clusterTokenKey "metrics" $auth.metricsTokenKey) .token -}}
{{- ternary $key (printf "%s-token" .token) (ne $named "") -}}
{{- end -}}

{{/* Whether some token comes from the chart's own Secret. */}}
{{- define "gradsync.generatesTokens" -}}
{{- $auth := .Values.auth -}}
{{- if or (not $auth.existingSecret) (not $auth.clusterTokenSecret) (not $auth.metricsTokenSecret) }}true{{ end -}}
{{- end -}}

{{/* A volume of one token, mounted as <name>/token; call with (dict "ctx" $ "token" NAME). */}}
{{- define "gradsync.tokenVolume" -}}
- name: {{ .token }}-token
  secret:
    secretName: {{ include "gradsync.tokenSecret" . }}
    defaultMode: 0440
    items:
      - key: {{ include "gradsync.tokenKey" . }}
        path: token
{{- end -}}

{{/* The CA that signed the coordinator's certificate, mounted as <secretsDir>/tls/ca.crt by the
pods that dial it over TLS (workers, the helm test pod). */}}
{{- define "gradsync.tlsCaVolume" -}}
- name: tls-ca
  secret:
    secretName: {{ include "gradsync.tlsSecret" . }}
    defaultMode: 0440
    items:
      - key: {{ .Values.tls.caKey }}
        path: ca.crt
{{- end -}}

{{- define "gradsync.tlsSecret" -}}
{{- required "tls.existingSecret is required when tls.enabled is true: create a kubernetes.io/tls Secret with the coordinator's certificate, key and the CA (ca.crt) and set tls.existingSecret to its name" .Values.tls.existingSecret -}}
{{- end -}}

{{/* Where the secrets are mounted inside the containers. */}}
{{- define "gradsync.secretsDir" -}}/var/run/secrets/gradsync{{- end -}}

{{/* The shared checkpoint volume, mounted at the same path by the coordinator and the workers. */}}
{{- define "gradsync.checkpointsVolume" -}}
- name: checkpoints
  persistentVolumeClaim:
    claimName: {{ .Values.checkpoints.existingClaim | default (include "gradsync.componentName" (dict "ctx" . "component" "checkpoints")) }}
{{- end -}}

{{/* The coordinator's --artifact-root: paths.artifactRoot, on the checkpoints volume. */}}
{{- define "gradsync.artifactRoot" -}}
{{- $mount := .Values.checkpoints.mountPath | trimSuffix "/" }}
{{- $root := .Values.paths.artifactRoot | default $mount | trimSuffix "/" }}
{{- if not (or (eq $root $mount) (hasPrefix (printf "%s/" $mount) $root)) }}
{{- fail (printf "paths.artifactRoot %s must lie under checkpoints.mountPath %s" $root $mount) }}
{{- end }}
{{- $root -}}
{{- end -}}

{{- define "gradsync.coordinatorAddress" -}}
{{- printf "%s:%d" (include "gradsync.componentName" (dict "ctx" . "component" "coordinator")) (int .Values.coordinator.ports.grpc) -}}
{{- end -}}

{{- define "gradsync.metricsAddress" -}}
{{- printf "%s:%d" (include "gradsync.componentName" (dict "ctx" . "component" "metrics")) (int .Values.metrics.ports.grpc) -}}
{{- end -}}

{{- /*
Worker processes per worker pod: gpusPerNode in the perNode layout of GPU workers (the node agent,
`gradsync-worker --gpus all`, runs one per GPU), 1 otherwise. Worker K of a pod listens on the
metrics and health ports plus K.
*/}}
{{- define "gradsync.workersPerPod" -}}
{{- $w := .Values.workers -}}
{{- if and (gt (int $w.gpus) 0) (eq $w.layout "perNode") -}}
{{- int $w.gpusPerNode -}}
{{- else -}}
1
{{- end -}}
{{- end -}}

{{- /* The name of worker K's port `name` in a pod: "metrics", "metrics-1", ... */}}
{{- define "gradsync.workerPortName" -}}
{{- if eq (int .k) 0 }}{{ .name }}{{ else }}{{ printf "%s-%d" .name (int .k) }}{{ end -}}
{{- end -}}
