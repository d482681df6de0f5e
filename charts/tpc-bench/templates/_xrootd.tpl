{{/* The XRootD DaemonSet: (list $ "") the one on every labelled node outside sites, as it has
always been; (list $ "<site>") a site's data servers (sites.enabled): the nodes labelled
sites.label=<site>, each a data server of its site's redirector (xrootd + cmsd, HTTPS on the
xroot port, as a redirect names it). */}}
{{- define "tpc-bench.xrootdDaemonSet" -}}
{{- $root := index . 0 }}
{{- $site := index . 1 }}
{{- $memory := include "tpc-bench.serverMemory" $root }}
{{- $baseline := include "tpc-bench.setting" (list $root "baseline") | fromYaml }}
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {{ include "tpc-bench.component" (list $root (ternary (printf "xrootd-%s" $site) "xrootd" (ne $site ""))) }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "tpc-bench.labels" (list $root "xrootd") | nindent 4 }}
    {{- if $site }}{{ include "tpc-bench.siteLabel" $site | nindent 4 }}{{ end }}
spec:
  selector:
    matchLabels:
      {{- include "tpc-bench.selectorLabels" (list $root "xrootd") | nindent 6 }}
      {{- if $site }}{{ include "tpc-bench.siteLabel" $site | nindent 6 }}{{ end }}
  updateStrategy:
    {{- include "tpc-bench.setting" (list $root "servers.updateStrategy") | nindent 4 }}
  template:
    metadata:
      labels:
        {{- include "tpc-bench.labels" (list $root "xrootd") | nindent 8 }}
        {{- if $site }}{{ include "tpc-bench.siteLabel" $site | nindent 8 }}{{ end }}
      annotations:
        {{- include "tpc-bench.serverAnnotations" $root | nindent 8 }}
        {{- if $site }}
        # discovery: the node's site; its data server serves HTTPS on the xroot port
        tpc-bench/site: {{ $site }}
        {{- end }}
    spec:
      {{- if $site }}
      {{- include "tpc-bench.sitePodSpec" (list $root $site) | nindent 6 }}
      {{- else }}
      {{- include "tpc-bench.serverPodSpec" $root | nindent 6 }}
      {{- if (dig "sites" "enabled" false $root.Values.AsMap) }}
      {{- include "tpc-bench.notInSites" $root | nindent 6 }}
      {{- end }}
      {{- end }}
      initContainers:
        {{- include "tpc-bench.hostCertificate" (list $root false) | nindent 8 }}
        {{- if include "tpc-bench.tokens" $root }}
        {{- include "tpc-bench.tokenTrustInit" $root | nindent 8 }}
        {{- end }}
      containers:
        - name: xrootd
          image: {{ include "tpc-bench.image" (list $root "xrootd") }}
          imagePullPolicy: {{ $root.Values.images.pullPolicy }}
          args:
            {{- include "tpc-bench.xrootdArgs" (list $root $site) | nindent 12 }}
          env:
            {{- include "tpc-bench.nodeEnv" $root | nindent 12 }}
          ports:
            {{- if not $site }}
            - name: https
              containerPort: {{ $root.Values.servers.httpsPort }}
            {{- end }}
            - name: root
              containerPort: {{ $root.Values.servers.rootPort }}
          {{- $ports := list (printf "--port=%v" $root.Values.servers.httpsPort) (printf "--port=%v" $root.Values.servers.rootPort) }}
          {{- if $site }}{{ $ports = list (printf "--port=%v" $root.Values.servers.rootPort) }}{{ end }}
          readinessProbe:
            # both services a campaign uses: HTTPS-TPC and root:// TPC
            exec:
              command: {{ toJson (concat (list "python3" "-m" "orchestrator.servers" "check") $ports) }}
            {{- include "tpc-bench.setting" (list $root "servers.probes.xrootd.readiness") | nindent 12 }}
          livenessProbe:
            # Fails once the certificate was renewed after xrootd started and xrootd has been
            # idle for the quiet period: a restart between measurements loads it.
            exec:
              command:
                {{- include "tpc-bench.renewalCheck" (list $root $ports) | nindent 16 }}
            {{- include "tpc-bench.setting" (list $root "servers.probes.xrootd.liveness") | nindent 12 }}
          resources:
            {{- include "tpc-bench.resources" (dict "cpu" $root.Values.servers.cpu "memory" $memory) | nindent 12 }}
          securityContext:
            {{- toYaml $root.Values.containerSecurityContext | nindent 12 }}
          volumeMounts:
            {{- include "tpc-bench.serverVolumeMounts" $root | nindent 12 }}
            # who may do what (docs/install.md, Security): the signer's xrootd-gridmap maps the
            # orchestrator's DN and every host DN of our CA; a whole directory, so the
            # signer's later updates arrive (xrootd rereads the map every 10 minutes)
            - name: grid-mapfile
              mountPath: /etc/grid-security/gridmap
              readOnly: true
            - name: macaroons
              mountPath: /etc/tpc-bench/macaroons
              readOnly: true
            {{- if include "tpc-bench.tokens" $root }}
            # our CA in the bundle the SciTokens plugin trusts (the token-trust init container)
            - name: token-trust
              mountPath: {{ $root.Values.tokens.trustBundle }}
              subPath: {{ base $root.Values.tokens.trustBundle }}
              readOnly: true
            {{- end }}
        {{- if $site }}
        {{- include "tpc-bench.cmsdContainer" (list $root (include "tpc-bench.xrootdArgs" (list $root $site) | fromYamlArray)) | nindent 8 }}
        {{- end }}
        - name: rtt-probe
          image: {{ include "tpc-bench.image" (list $root "xrootd") }}
          imagePullPolicy: {{ $root.Values.images.pullPolicy }}
          command: [/usr/bin/tini, --, python3, -m, orchestrator.latency, serve]
          args:
            - --bind=$(HOST_IP)
            - --port={{ $root.Values.servers.probePort }}
          env:
            {{- include "tpc-bench.nodeEnv" $root | nindent 12 }}
          ports:
            - name: probe
              containerPort: {{ $root.Values.servers.probePort }}
          readinessProbe:
            httpGet: {path: /healthz, port: probe}
            {{- include "tpc-bench.setting" (list $root "servers.probes.rttProbe.readiness") | nindent 12 }}
          resources:
            {{- include "tpc-bench.resources" (dict "cpu" "100m" "memory" "64Mi") | nindent 12 }}
          securityContext:
            {{- toYaml $root.Values.containerSecurityContext | nindent 12 }}
        {{- if $baseline.enabled }}
        # The link baseline's server: the orchestrator runs iperf3's client in this container
        # of the source node's pod, against this server on the destination (docs/prelim.md).
        - name: iperf3
          image: {{ include "tpc-bench.image" (list $root "xrootd") }}
          imagePullPolicy: {{ $root.Values.images.pullPolicy }}
          command: [/usr/bin/tini, --, iperf3]
          args:
            - --server
            - --bind=$(HOST_IP)
            - --port={{ $baseline.port }}
          env:
            {{- include "tpc-bench.nodeEnv" $root | nindent 12 }}
          ports:
            - name: iperf3
              containerPort: {{ $baseline.port }}
          readinessProbe:
            tcpSocket: {port: iperf3}
            {{- include "tpc-bench.setting" (list $root "baseline.probes.readiness") | nindent 12 }}
          resources:
            {{- include "tpc-bench.resources" $baseline.resources | nindent 12 }}
          securityContext:
            {{- toYaml $root.Values.containerSecurityContext | nindent 12 }}
          volumeMounts:
            # iperf3 keeps each stream's buffer in a file under /tmp (the root is read-only)
            - name: iperf3-tmp
              mountPath: /tmp
        {{- end }}
        {{- include "tpc-bench.hostCertificate" (list $root true) | nindent 8 }}
      volumes:
        {{- include "tpc-bench.serverVolumes" $root | nindent 8 }}
        - name: grid-mapfile
          configMap:
            name: {{ include "tpc-bench.gridMapfileConfigMap" $root }}
        - name: macaroons
          secret:
            secretName: {{ include "tpc-bench.macaroonSecret" $root }}
            defaultMode: 0440
        {{- if include "tpc-bench.tokens" $root }}
        - name: token-trust
          emptyDir:
            sizeLimit: 4Mi
        {{- end }}
        {{- if $baseline.enabled }}
        - name: iperf3-tmp
          emptyDir:
            sizeLimit: 64Mi
        {{- end }}
{{- end }}

{{/* The pod label of a site's pods (nothing outside sites): a site name. */}}
{{- define "tpc-bench.siteLabel" -}}
{{- if . }}tpc-bench/site: {{ . }}{{ end }}
{{- end }}

{{/* The xrootd entrypoint's arguments, the same for its xrootd and cmsd containers (one
configuration; cmsd writes no source file): (list $ "") a standalone server; (list $ "<site>") a data server of the
site's redirector, found through the redirector's Service (its pod may move to another node of
the site; the Service follows it). */}}
{{- define "tpc-bench.xrootdArgs" -}}
{{- $root := index . 0 }}
{{- $site := index . 1 }}
{{- $https := ternary $root.Values.servers.rootPort $root.Values.servers.httpsPort (ne $site "") -}}
- xrootd
- --exec
- --name=$(NODE_NAME)
- --https-port={{ $https }}
- --root-port={{ $root.Values.servers.rootPort }}
- --source-size={{ include "tpc-bench.bytes" $root.Values.campaign.fileSize }}
{{- if $site }}
- --cluster-role=server
- --manager={{ include "tpc-bench.redirectorService" (list $root $site) }}.{{ $root.Release.Namespace }}.svc:{{ $root.Values.sites.redirector.cmsPort }}
{{- end }}
{{- if include "tpc-bench.tokens" $root }}
# the token area accepts the issuer's tokens minted for this server's own URL
- --token-issuer={{ include "tpc-bench.tokenIssuerUrl" $root }}
- --token-audience=https://$(HOST_IP):{{ $https }}
{{- end }}
{{- end }}

{{/* A site's redirector Service: (list $ "<site>") */}}
{{- define "tpc-bench.redirectorService" -}}
{{- include "tpc-bench.component" (list (index . 0) (printf "redirector-%s" (index . 1))) }}
{{- end }}

{{/* The server pod spec on the nodes of one site: (list $ "<site>"). */}}
{{- define "tpc-bench.sitePodSpec" -}}
{{- $root := index . 0 }}
{{- $spec := include "tpc-bench.serverPodSpec" $root | fromYaml }}
{{- $_ := set $spec "nodeSelector" (merge (dict $root.Values.sites.label (index . 1)) $spec.nodeSelector) }}
{{- toYaml $spec }}
{{- end }}

{{/* With sites.enabled: the standalone servers keep off the sites' nodes. */}}
{{- define "tpc-bench.notInSites" -}}
affinity:
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      nodeSelectorTerms:
        - matchExpressions:
            - key: {{ .Values.sites.label }}
              operator: NotIn
              values: {{ toJson .Values.sites.names }}
{{- end }}

{{/* cmsd beside xrootd: (list $ <the xrootd container's args>). The same configuration with
--program cmsd; the two talk through the admin path in the shared run volume, and cmsd keeps
its environment file in /tmp. A data server's cmsd asks the data volume which files it has. */}}
{{- define "tpc-bench.cmsdContainer" -}}
{{- $root := index . 0 }}
- name: cmsd
  image: {{ include "tpc-bench.image" (list $root "xrootd") }}
  imagePullPolicy: {{ $root.Values.images.pullPolicy }}
  args:
    {{- toYaml (append (index . 1) "--program=cmsd") | nindent 4 }}
  env:
    {{- include "tpc-bench.nodeEnv" $root | nindent 4 }}
  resources:
    {{- include "tpc-bench.resources" $root.Values.sites.cmsd.resources | nindent 4 }}
  securityContext:
    {{- toYaml $root.Values.containerSecurityContext | nindent 4 }}
  volumeMounts:
    {{- include "tpc-bench.serverVolumeMounts" $root | nindent 4 }}
{{- end }}
