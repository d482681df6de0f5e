{{/* What both server DaemonSets share: placement, the pod's security, the certificate
init container and its renewal sidecar, and the volumes (see docs/images.md for paths). */}}

{{- define "tpc-bench.serverPodSpec" -}}
serviceAccountName: {{ include "tpc-bench.serversServiceAccount" . }}
# Host network: the servers use the node's own NIC and address, as in the paper.
hostNetwork: true
dnsPolicy: ClusterFirstWithHostNet
nodeSelector:
  {{- toYaml .Values.nodes.selector | nindent 2 }}
{{- with .Values.nodes.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- include "tpc-bench.imagePullSecrets" . }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
terminationGracePeriodSeconds: 30
{{- end }}

{{/* The server pods' host certificate for their node: asked for by an init container, then
kept renewed by a sidecar, whose renewal the server's liveness check acts on. (list $ false)
is the init container, (list $ true) the sidecar. */}}
{{- define "tpc-bench.hostCertificate" -}}
{{- $root := index . 0 }}
{{- include "tpc-bench.certificateRequest" (dict "root" $root "name" "host-certificate" "kind" "host" "subject" "$(NODE_NAME)" "onNode" true "signer" (include "tpc-bench.hostSigner" $root) "credentials" "host-credentials" "keepRenewed" (index . 1)) }}
{{- end }}

{{/* The liveness check's arguments for the host certificate: it fails for a renewed one
only once the server has had no connection for servers.renewalQuietPeriod (between
measurements), or a sixth of the certificate's life after the renewal (a connection open that
long is stuck; the old certificate still has a sixth of its life). orchestrator/servers/liveness.py
(list $ <the --port/--data-ports arguments of the ports the server serves>) */}}
{{- define "tpc-bench.renewalCheck" -}}
{{- $root := index . 0 }}
{{- $check := concat (list "python3" "-m" "orchestrator.servers" "check") (index . 1) }}
{{- $renewal := list "--credentials=/etc/grid-security/tpc-bench/hostcert.pem" (printf "--quiet-period=%s" (include "tpc-bench.seconds" $root.Values.servers.renewalQuietPeriod)) (printf "--max-wait=%v" (mul $root.Values.certificates.days 14400)) }}
{{- toYaml (concat $check $renewal) }}
{{- end }}

{{- define "tpc-bench.serverVolumeMounts" -}}
- name: data
  mountPath: /data
- name: run
  mountPath: /run/tpc-bench
- name: tmp
  mountPath: /tmp
- name: host-credentials
  mountPath: /etc/grid-security/tpc-bench
  readOnly: true
- name: certificates
  mountPath: /etc/grid-security/certificates
  readOnly: true
{{- end }}

{{- define "tpc-bench.serverVolumes" -}}
# Memory-backed, sized for the source file plus K incoming files (campaign.transfers).
- name: data
  emptyDir:
    medium: Memory
    sizeLimit: {{ include "tpc-bench.dataBytes" . | quote }}
- name: run
  emptyDir:
    sizeLimit: 64Mi
- name: tmp
  emptyDir:
    sizeLimit: 64Mi
- name: host-credentials
  emptyDir:
    medium: Memory
    sizeLimit: 1Mi
- name: certificates
  configMap:
    name: {{ include "tpc-bench.gridSecurityConfigMap" . }}
{{- end }}

{{- define "tpc-bench.serverAnnotations" -}}
# Read by the orchestrator's discovery: where the data is, and the host DN GridFTP expects.
tpc-bench/data-root: /data
tpc-bench/host-dn-template: {{ include "tpc-bench.hostDnTemplate" . | quote }}
{{- with .Values.servers.podAnnotations }}
{{ toYaml . }}
{{- end }}
{{- end }}
