{{/* Containers more than one pod runs, each built once here as data (dict + toYaml). */}}

{{/* `tpcbench ca request`: a certificate from the release's signer through the CSR API, asked
for with the pod's own ServiceAccount token; the key is made in the pod and never leaves it.
As an init container it asks once; with keepRenewed it is the sidecar that renews the
certificate when a third of its life is left. Keys of the dict:
  root, kind (host, client or issuer), subject (--name), signer, credentials (the volume
  mounted at the output directory); optional: name (the init container's; a renewal sidecar
  is certificate-renewal), keepRenewed, onNode (a host certificate for the pod's node: its
  address and the downward API's variables), days (else certificates.days), extraArgs,
  resources (else 100m/128Mi, 50m/128Mi renewing), extraMounts. */}}
{{- define "tpc-bench.certificateRequest" -}}
{{- $root := .root }}
{{- $renewing := .keepRenewed | default false }}
{{- $args := list "ca" "request" }}
{{- if $renewing }}{{ $args = append $args "--keep-renewed" }}{{ end }}
{{- $args = concat $args (list (printf "--kind=%s" .kind) (printf "--name=%s" .subject)) }}
{{- if .onNode }}{{ $args = append $args "--ip=$(HOST_IP)" }}{{ end }}
{{- $args = concat $args (list "--out-dir=/etc/grid-security/tpc-bench" (printf "--signer=%s" .signer) (printf "--days=%v" (.days | default $root.Values.certificates.days))) (.extraArgs | default list) }}
{{- $container := dict "name" (ternary "certificate-renewal" .name $renewing) }}
{{- $_ := set $container "image" (include "tpc-bench.image" (list $root "orchestrator")) }}
{{- $_ := set $container "imagePullPolicy" $root.Values.images.pullPolicy }}
{{- $_ := set $container "args" $args }}
{{- if .onNode }}{{ $_ := set $container "env" (include "tpc-bench.nodeEnv" $root | fromYamlArray) }}{{ end }}
{{- $resources := .resources | default (dict "cpu" (ternary "50m" "100m" $renewing) "memory" "128Mi") }}
{{- $_ := set $container "resources" (include "tpc-bench.resources" $resources | fromYaml) }}
{{- $_ := set $container "securityContext" $root.Values.containerSecurityContext }}
{{- $mounts := list (dict "name" .credentials "mountPath" "/etc/grid-security/tpc-bench") }}
{{- $_ := set $container "volumeMounts" (concat $mounts (.extraMounts | default list)) }}
{{- toYaml (list $container) }}
{{- end }}

{{/* One server of the prelim Job's pair, a native sidecar that serves while the run lasts:
(dict "root" $ "name" "xrootd-a" "image" "xrootd" "args" (list ...) "port" <the port its
startup probe waits for> "resources" <requests and limits>). Every server of the pair sees
the whole data volume and the node's host certificate. */}}
{{- define "tpc-bench.prelimServer" -}}
{{- $root := .root }}
{{- $container := dict "name" .name "restartPolicy" "Always" "args" .args "resources" .resources }}
{{- $_ := set $container "image" (include "tpc-bench.image" (list $root .image)) }}
{{- $_ := set $container "imagePullPolicy" $root.Values.images.pullPolicy }}
{{- $_ := set $container "env" (include "tpc-bench.nodeEnv" $root | fromYamlArray) }}
{{- $_ := set $container "startupProbe" (merge (dict "tcpSocket" (dict "port" .port)) (include "tpc-bench.setting" (list $root "prelim.probes.startup") | fromYaml)) }}
{{- $_ := set $container "securityContext" $root.Values.containerSecurityContext }}
{{- $mounts := list (dict "name" "data" "mountPath" "/data") (dict "name" "run" "mountPath" "/run/tpc-bench") (dict "name" "tmp" "mountPath" "/tmp") }}
{{- $credentials := list (dict "name" "host-credentials" "mountPath" "/etc/grid-security/tpc-bench" "readOnly" true) (dict "name" "certificates" "mountPath" "/etc/grid-security/certificates" "readOnly" true) }}
{{- $_ := set $container "volumeMounts" (concat $mounts $credentials) }}
{{- toYaml (list $container) }}
{{- end }}
