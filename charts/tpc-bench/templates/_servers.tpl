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

{{- define "tpc-bench.certificateInit" -}}
# The host certificate, from the signer through the CSR API with this pod's own token; the
# key is made here and never leaves the pod.
- name: host-certificate
  image: {{ include "tpc-bench.image" (list . "orchestrator") }}
  imagePullPolicy: {{ .Values.images.pullPolicy }}
  args:
    - ca
    - request
    - --kind=host
    - --name=$(NODE_NAME)
    - --ip=$(HOST_IP)
    - --out-dir=/etc/grid-security/tpc-bench
    - --signer={{ include "tpc-bench.hostSigner" . }}
    - --days={{ .Values.certificates.days }}
  env:
    {{- include "tpc-bench.nodeEnv" . | nindent 4 }}
  resources:
    {{- include "tpc-bench.resources" (dict "cpu" "100m" "memory" "128Mi") | nindent 4 }}
  securityContext:
    {{- toYaml .Values.containerSecurityContext | nindent 4 }}
  volumeMounts:
    - name: host-credentials
      mountPath: /etc/grid-security/tpc-bench
{{- end }}

{{- define "tpc-bench.certificateRenewal" -}}
# Renews the host certificate when a third of its life is left; the server's liveness check
# then restarts the server container, which loads the new one, between measurements.
- name: certificate-renewal
  image: {{ include "tpc-bench.image" (list . "orchestrator") }}
  imagePullPolicy: {{ .Values.images.pullPolicy }}
  args:
    - ca
    - request
    - --keep-renewed
    - --kind=host
    - --name=$(NODE_NAME)
    - --ip=$(HOST_IP)
    - --out-dir=/etc/grid-security/tpc-bench
    - --signer={{ include "tpc-bench.hostSigner" . }}
    - --days={{ .Values.certificates.days }}
  env:
    {{- include "tpc-bench.nodeEnv" . | nindent 4 }}
  resources:
    {{- include "tpc-bench.resources" (dict "cpu" "50m" "memory" "128Mi") | nindent 4 }}
  securityContext:
    {{- toYaml .Values.containerSecurityContext | nindent 4 }}
  volumeMounts:
    - name: host-credentials
      mountPath: /etc/grid-security/tpc-bench
{{- end }}

{{/* The liveness check's arguments for the host certificate: it fails for a renewed one
only once the server has had no connection for servers.renewalQuietPeriod (between
measurements), or a sixth of the certificate's life after the renewal (a connection open that
long is stuck; the old certificate still has a sixth of its life). orchestrator/servers/liveness.py */}}
{{- define "tpc-bench.renewalCheckArgs" -}}
--credentials=/etc/grid-security/tpc-bench/hostcert.pem,
--quiet-period={{ include "tpc-bench.seconds" .Values.servers.renewalQuietPeriod }},
--max-wait={{ mul .Values.certificates.days 14400 }}
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
