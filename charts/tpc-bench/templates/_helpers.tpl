{{/* Names: the chart's, the release's (63 characters at most, as DNS labels allow). */}}
{{- define "tpc-bench.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "tpc-bench.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The name of one part of the release: (list $ "signer") -> <fullname>-signer */}}
{{- define "tpc-bench.component" -}}
{{- $root := index . 0 }}
{{- printf "%s-%s" (include "tpc-bench.fullname" $root | trunc (int (sub 62 (len (index . 1))))) (index . 1) | trimSuffix "-" }}
{{- end }}

{{- define "tpc-bench.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Standard labels; (list $ "xrootd") adds the component. */}}
{{- define "tpc-bench.labels" -}}
{{- $root := index . 0 -}}
helm.sh/chart: {{ include "tpc-bench.chart" $root }}
{{ include "tpc-bench.selectorLabels" . }}
app.kubernetes.io/version: {{ $root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ $root.Release.Service }}
app.kubernetes.io/part-of: tpc-bench
{{- end }}

{{/* The labels selectors use. Discovery finds the servers by name + component, so the name
label is the chart's own whatever nameOverride says (one release per namespace). */}}
{{- define "tpc-bench.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ $root.Chart.Name }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{/* An image reference: (list $ "xrootd") */}}
{{- define "tpc-bench.image" -}}
{{- $root := index . 0 }}
{{- $repository := index $root.Values.images (index . 1) }}
{{- $tag := default $root.Chart.AppVersion $root.Values.images.tag }}
{{- if $root.Values.images.registry }}
{{- printf "%s/%s:%s" (trimSuffix "/" $root.Values.images.registry) $repository $tag }}
{{- else }}
{{- printf "%s:%s" $repository $tag }}
{{- end }}
{{- end }}

{{- define "tpc-bench.imagePullSecrets" -}}
{{- with .Values.images.pullSecrets }}
imagePullSecrets:
{{- range . }}
  - name: {{ . }}
{{- end }}
{{- end }}
{{- end }}

{{/* ServiceAccounts: one per part, each with only what that part needs. */}}
{{- define "tpc-bench.serversServiceAccount" -}}{{ include "tpc-bench.component" (list . "servers") }}{{- end }}
{{- define "tpc-bench.orchestratorServiceAccount" -}}{{ include "tpc-bench.component" (list . "orchestrator") }}{{- end }}
{{- define "tpc-bench.signerServiceAccount" -}}{{ include "tpc-bench.component" (list . "signer") }}{{- end }}
{{- define "tpc-bench.webappServiceAccount" -}}{{ include "tpc-bench.component" (list . "webapp") }}{{- end }}

{{/* Signer names are per release, so two releases in one cluster never sign for each other. */}}
{{- define "tpc-bench.hostSigner" -}}
{{- printf "tpc-bench.io/%s.%s-host" .Release.Namespace (include "tpc-bench.fullname" .) }}
{{- end }}
{{- define "tpc-bench.clientSigner" -}}
{{- printf "tpc-bench.io/%s.%s-client" .Release.Namespace (include "tpc-bench.fullname" .) }}
{{- end }}

{{/* Where the CA lives: the site's own Secret, cert-manager's, or the one the signer fills. */}}
{{- define "tpc-bench.caSecret" -}}
{{- default (include "tpc-bench.component" (list . "ca")) .Values.certificates.ca.existingSecret }}
{{- end }}
{{- define "tpc-bench.gridSecurityConfigMap" -}}{{ include "tpc-bench.component" (list . "grid-security") }}{{- end }}
{{- define "tpc-bench.gridMapfileConfigMap" -}}{{ include "tpc-bench.component" (list . "grid-mapfile") }}{{- end }}
{{- define "tpc-bench.macaroonSecret" -}}{{ include "tpc-bench.component" (list . "macaroons") }}{{- end }}
{{- define "tpc-bench.webappSecret" -}}{{ include "tpc-bench.component" (list . "webapp") }}{{- end }}
{{- define "tpc-bench.databaseSecret" -}}{{ include "tpc-bench.component" (list . "database") }}{{- end }}
{{- define "tpc-bench.webappService" -}}{{ include "tpc-bench.component" (list . "webapp") }}{{- end }}

{{/* The host DN the servers' certificates carry, with {node} for the node name. */}}
{{- define "tpc-bench.hostDnTemplate" -}}
{{- $base := regexReplaceAll "/CN=[^/]*$" .Values.certificates.ca.subject "" }}
{{- printf "%s/OU=Services/CN={node}" $base }}
{{- end }}

{{/* Bytes in a size like 1Gi, 512Mi, 1GiB or 1073741824. */}}
{{- define "tpc-bench.bytes" -}}
{{- $text := toString . }}
{{- $number := regexFind "^[0-9]+" $text }}
{{- $unit := trimSuffix "B" (trimPrefix $number $text) }}
{{- $factors := dict "" 1 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 "K" 1024 "M" 1048576 "G" 1073741824 "T" 1099511627776 }}
{{- if not (hasKey $factors $unit) }}
{{- fail (printf "%q is not a size: write e.g. 1Gi, 512Mi or 1073741824" $text) }}
{{- end }}
{{- mul (int64 $number) (index $factors $unit) }}
{{- end }}

{{/* Seconds in a duration like 90, 90s, 10m, 2h or 1d. */}}
{{- define "tpc-bench.seconds" -}}
{{- $text := toString . }}
{{- $number := regexFind "^[0-9]+" $text }}
{{- $factors := dict "" 1 "s" 1 "m" 60 "h" 3600 "d" 86400 }}
{{- $unit := trimPrefix $number $text }}
{{- if or (not $number) (not (hasKey $factors $unit)) }}
{{- fail (printf "%q is not a duration: write e.g. 90s, 10m or 2h" $text) }}
{{- end }}
{{- mul (int64 $number) (index $factors $unit) }}
{{- end }}

{{/* The data volume: the source file plus K incoming files, plus headroom (bytes). */}}
{{- define "tpc-bench.dataBytes" -}}
{{- $file := include "tpc-bench.bytes" .Values.campaign.fileSize | int64 }}
{{- $headroom := include "tpc-bench.bytes" .Values.servers.dataHeadroom | int64 }}
{{- add (mul $file (add 1 (int64 .Values.campaign.transfers))) $headroom }}
{{- end }}

{{/* A server container's memory: given, else the data volume plus the servers' own. */}}
{{- define "tpc-bench.serverMemory" -}}
{{- if .Values.servers.memory }}
{{- .Values.servers.memory }}
{{- else }}
{{- add (include "tpc-bench.dataBytes" . | int64) (include "tpc-bench.bytes" .Values.servers.serverMemoryOverhead | int64) }}
{{- end }}
{{- end }}

{{/* requests = limits: the same resources on every node (the paper's fair comparison). */}}
{{- define "tpc-bench.resources" -}}
{{- $amounts := dict "cpu" (toString .cpu) "memory" (toString .memory) }}
{{- toYaml (dict "requests" $amounts "limits" $amounts) }}
{{- end }}

{{/* Node name and address from the downward API, for args like $(NODE_NAME). */}}
{{- define "tpc-bench.nodeEnv" -}}
- name: NODE_NAME
  valueFrom:
    fieldRef:
      fieldPath: spec.nodeName
- name: HOST_IP
  valueFrom:
    fieldRef:
      fieldPath: status.hostIP
{{- end }}

{{/* Kept or generated once: an existing Secret's key, else a new random string. */}}
{{- define "tpc-bench.keptRandom" -}}
{{- $root := index . 0 }}
{{- $secret := lookup "v1" "Secret" $root.Release.Namespace (index . 1) }}
{{- if and $secret $secret.data (hasKey $secret.data (index . 2)) }}
{{- index $secret.data (index . 2) | b64dec }}
{{- else }}
{{- randAlphaNum (int (index . 3)) }}
{{- end }}
{{- end }}

{{/* The database URL the webapp uses (bundled or external). */}}
{{- define "tpc-bench.bundledDatabaseHost" -}}{{ include "tpc-bench.component" (list . "postgresql") }}{{- end }}

{{/* "true" when the signer makes the CA (no existing Secret, no cert-manager), else "". */}}
{{- define "tpc-bench.signerMakesCa" -}}
{{- if not (or .Values.certificates.ca.existingSecret .Values.certificates.ca.certManager.enabled) }}true{{ end }}
{{- end }}

{{/* A Globus-form DN (/DC=org/CN=x) in RFC 4514 order (CN=x,DC=org), for cert-manager. */}}
{{- define "tpc-bench.rfc4514" -}}
{{- $parts := splitList "/" (trimPrefix "/" .) }}
{{- $reversed := list }}
{{- range $parts }}{{ $reversed = prepend $reversed (replace "," "\\," .) }}{{ end }}
{{- join "," $reversed }}
{{- end }}

{{/* The prelim run's container memory: its data volume plus 2 GiB for the tools. */}}
{{- define "tpc-bench.prelimMemory" -}}
{{- add (include "tpc-bench.bytes" .Values.prelim.memory | int64) 2147483648 }}
{{- end }}

{{/* A setting newer than some releases' values: (list $ "servers.probes.xrootd.liveness") is
its value as YAML, nothing when it is empty. `helm upgrade --reuse-values` keeps the values
of the chart a release was installed with, so a release from before the setting has none;
then it is the default below. */}}
{{- define "tpc-bench.setting" -}}
{{- $value := (index . 0).Values }}
{{- $default := include "tpc-bench.newerDefaults" . | fromYaml }}
{{- range $key := splitList "." (index . 1) }}
{{- $value = get (ternary $value dict (kindIs "map" $value)) $key }}
{{- $default = get (ternary $default dict (kindIs "map" $default)) $key }}
{{- end }}
{{- with (ternary $value $default (kindIs "map" $value)) }}{{ toYaml . }}{{ end }}
{{- end }}

{{/* values.yaml's defaults of the settings tpc-bench.setting reads (tests/chart/
test_chart_values.py renders without them to check that they are the same). */}}
{{- define "tpc-bench.newerDefaults" -}}
servers:
  updateStrategy: {type: RollingUpdate}
  probes:
    xrootd:
      readiness: {periodSeconds: 10, timeoutSeconds: 10}
      liveness: {periodSeconds: 30, timeoutSeconds: 10, failureThreshold: 3}
    gridftp:
      readiness: {periodSeconds: 10}
      liveness: {periodSeconds: 30, timeoutSeconds: 10, failureThreshold: 3}
    rttProbe:
      readiness: {periodSeconds: 10}
certificates:
  signer:
    probes:
      readiness: {periodSeconds: 10}
      liveness: {periodSeconds: 30, failureThreshold: 10}
tokens:
  probes:
    readiness: {periodSeconds: 10}
    liveness: {periodSeconds: 30, failureThreshold: 5}
orchestrator:
  probes:
    readiness: {periodSeconds: 10}
    liveness: {periodSeconds: 30, failureThreshold: 5}
webapp:
  probes:
    readiness: {periodSeconds: 10, timeoutSeconds: 5}
    liveness: {periodSeconds: 30}
  alerts: {medianFraction: 0.7, medianDays: 20, inARow: 2, minHistory: 3, webhookUrl: "",
           webhookSecret: "", webhookSecretKey: url, mailTo: [], mailFrom: tpc-bench@localhost,
           smtpHost: localhost, smtpPort: 25, publicUrl: ""}
database:
  probes:
    readiness: {periodSeconds: 10}
    liveness: {periodSeconds: 30, failureThreshold: 6}
prelim:
  probes:
    startup: {periodSeconds: 2, failureThreshold: 60}
baseline:
  enabled: false
  everyCampaign: true
  seconds: 10
  omit: 2
  port: 5201
  resources: {cpu: "1", memory: 1Gi}
  probes:
    readiness: {periodSeconds: 30}
{{- end }}
