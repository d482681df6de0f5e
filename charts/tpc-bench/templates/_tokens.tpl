{{/* Tokens on the cluster (campaign.auth has token): the names of the token issuer's parts,
and what an XRootD pod needs to trust it. See token-issuer.yaml and docs/install.md, Tokens. */}}

{{/* "true" when campaigns authorize with tokens, else "". */}}
{{- define "tpc-bench.tokens" -}}
{{- if has "token" (.Values.campaign.auth | default list) }}true{{ end }}
{{- end }}

{{- define "tpc-bench.tokenIssuerService" -}}{{ include "tpc-bench.component" (list . "token-issuer") }}{{- end }}
{{- define "tpc-bench.tokenIssuerServiceAccount" -}}{{ include "tpc-bench.component" (list . "token-issuer") }}{{- end }}
{{- define "tpc-bench.tokenDocumentsConfigMap" -}}{{ include "tpc-bench.component" (list . "token-issuer") }}{{- end }}
{{- define "tpc-bench.tokenKeySecret" -}}{{ include "tpc-bench.component" (list . "token-key") }}{{- end }}
{{- define "tpc-bench.issuerSigner" -}}
{{- printf "tpc-bench.io/%s.%s-issuer" .Release.Namespace (include "tpc-bench.fullname" .) }}
{{- end }}

{{/* The issuer's host name: its Service's, which host-network pods resolve too (their
dnsPolicy is ClusterFirstWithHostNet). It is the certificate's CN, so 64 characters at most. */}}
{{- define "tpc-bench.tokenIssuerHost" -}}
{{- $host := printf "%s.%s.svc" (include "tpc-bench.tokenIssuerService" .) .Release.Namespace }}
{{- if gt (len $host) 64 }}
{{- fail (printf "the token issuer's name %s is longer than 64 characters: use a shorter fullnameOverride or namespace" $host) }}
{{- end }}
{{- $host }}
{{- end }}

{{/* The issuer's URL: the `iss` of every token, and what the servers trust. */}}
{{- define "tpc-bench.tokenIssuerUrl" -}}https://{{ include "tpc-bench.tokenIssuerHost" . }}{{- end }}

{{/* An XRootD pod's init container: the image's CA bundle with our CA appended, for the
SciTokens plugin, which trusts only that file (scitokens-cpp 0.7) when it fetches the
issuer's keys. The xrootd container mounts the result over the image's bundle. */}}
{{- define "tpc-bench.tokenTrustInit" -}}
- name: token-trust
  image: {{ include "tpc-bench.image" (list . "xrootd") }}
  imagePullPolicy: {{ .Values.images.pullPolicy }}
  command: [python3, -m, orchestrator.servers.trust_bundle]
  args:
    - --ca=/etc/grid-security/certificates/ca.crt
    - --system-bundle={{ .Values.tokens.trustBundle }}
    - --out=/run/token-trust/{{ base .Values.tokens.trustBundle }}
    # the signer publishes ca.crt; a ConfigMap volume may fill after the pod started
    - --wait=300
  resources:
    {{- include "tpc-bench.resources" (dict "cpu" "50m" "memory" "64Mi") | nindent 4 }}
  securityContext:
    {{- toYaml .Values.containerSecurityContext | nindent 4 }}
  volumeMounts:
    - name: token-trust
      mountPath: /run/token-trust
    - name: certificates
      mountPath: /etc/grid-security/certificates
      readOnly: true
{{- end }}
