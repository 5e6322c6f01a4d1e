{{/*
Chart name, truncated like every chart does.
*/}}
{{- define "vsphere-descheduler.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name of the release's objects. 52 characters at most, not 63: the CronJob controller
appends an 11-character suffix to Job names, and Job names are limited to 63.
*/}}
{{- define "vsphere-descheduler.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "vsphere-descheduler.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels on every object.
*/}}
{{- define "vsphere-descheduler.labels" -}}
helm.sh/chart: {{ include "vsphere-descheduler.chart" . }}
{{ include "vsphere-descheduler.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: descheduler
{{- end }}

{{- define "vsphere-descheduler.selectorLabels" -}}
app.kubernetes.io/name: {{ include "vsphere-descheduler.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "vsphere-descheduler.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "vsphere-descheduler.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "vsphere-descheduler.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository $tag }}
{{- end }}
{{- end }}

{{/*
The lease the runs take so that two never act at once (a manual run next to a scheduled one).
The binary's lock name; not configurable, since the lease Role names it.
*/}}
{{- define "vsphere-descheduler.leaseName" -}}
vsphere-descheduler
{{- end }}

{{/* The eviction history's ConfigMap: the lock's name and "-history" (src/snapshot/model/history.rs). */}}
{{- define "vsphere-descheduler.historyName" -}}
{{ include "vsphere-descheduler.leaseName" . }}-history
{{- end }}

{{/* Where the pod finds its files. */}}
{{- define "vsphere-descheduler.policyDir" -}}/etc/vsphere-descheduler/policy{{- end }}
{{- define "vsphere-descheduler.credentialsDir" -}}/etc/vsphere-descheduler/credentials{{- end }}
{{- define "vsphere-descheduler.caDir" -}}/etc/vsphere-descheduler/ca{{- end }}
{{- define "vsphere-descheduler.metricsCredentialsDir" -}}/etc/vsphere-descheduler/metrics-credentials{{- end }}
{{- define "vsphere-descheduler.metricsCaDir" -}}/etc/vsphere-descheduler/metrics-ca{{- end }}
{{- define "vsphere-descheduler.supervisorCredentialsDir" -}}/etc/vsphere-descheduler/supervisor{{- end }}

{{/*
The topology source's values with their defaults, as JSON: source, supervisorSecret,
supervisorNamespace, nodeLabelKey. A release upgraded with --reuse-values from a chart without
sources has none of these keys (Helm then takes the old chart's values for the defaults), so it
renders as the vcenter release it was.
*/}}
{{- define "vsphere-descheduler.topology" -}}
{{- $vsphere := .Values.vsphere }}
{{- toJson (dict "source" (get $vsphere "source" | default "vcenter") "supervisorSecret" (dig "supervisor" "existingSecret" "" $vsphere) "supervisorNamespace" (dig "supervisor" "namespace" "" $vsphere) "nodeLabelKey" (dig "nodeLabel" "key" "" $vsphere)) }}
{{- end }}

{{/* This Kubernetes cluster's name, from the values or an object policy: the metrics' group. */}}
{{- define "vsphere-descheduler.clusterName" -}}
{{- $policy := include "vsphere-descheduler.policyObject" . | fromJson }}
{{- default (toString (default "" $policy.clusterName)) .Values.clusterName }}
{{- end }}

{{/*
Seconds between runs, for the alerts: metrics.alerts.runIntervalSeconds, or N minutes of an
"every N minutes" schedule; 0 when neither says.
*/}}
{{- define "vsphere-descheduler.runIntervalSeconds" -}}
{{- $every := regexFind "^\\*/[0-9]+ \\* \\* \\* \\*$" .Values.schedule }}
{{- if gt (int .Values.metrics.alerts.runIntervalSeconds) 0 }}
{{- int .Values.metrics.alerts.runIntervalSeconds }}
{{- else if $every }}
{{- mul ($every | trimPrefix "*/" | splitList " " | first | atoi) 60 }}
{{- else }}0{{- end }}
{{- end }}

{{/* The PromQL selector of this release's metrics: the group it pushes to. */}}
{{- define "vsphere-descheduler.metricsSelector" -}}
job="vsphere-descheduler", cluster="{{ include "vsphere-descheduler.clusterName" . }}"
{{- end }}

{{/*
The policy as a dictionary, whichever way it was given (a string is parsed; its text is still
mounted as it is). Fails on a string that is not YAML.
*/}}
{{- define "vsphere-descheduler.policyObject" -}}
{{- $policy := .Values.policy }}
{{- if kindIs "string" $policy }}
{{- $parsed := fromYaml $policy }}
{{- if hasKey $parsed "Error" }}
{{- fail (printf "policy: the string is not a YAML document: %s" $parsed.Error) }}
{{- end }}
{{- toJson $parsed }}
{{- else }}
{{- toJson (default dict $policy) }}
{{- end }}
{{- end }}

{{/* Whether the policy is in our format, the only one with clusterName and vsphere:. */}}
{{- define "vsphere-descheduler.ownFormat" -}}
{{- $policy := include "vsphere-descheduler.policyObject" . | fromJson }}
{{- if eq (toString $policy.apiVersion) "vsphere-descheduler.io/v1alpha1" }}true{{ end }}
{{- end }}

{{/*
The text of policy.yaml. An object policy in our format gets clusterName, vsphere.server and the
topology source's settings from the values, so the mounted file is complete on its own
(`vsphere-descheduler validate` passes on it); a string policy is mounted as it is. The source is
written only when it is not vcenter, the binary's default, so that a vCenter release's policy
stays what it was before sources existed.
*/}}
{{- define "vsphere-descheduler.policyText" -}}
{{- if kindIs "string" .Values.policy }}
{{- .Values.policy | trimSuffix "\n" }}
{{- else }}
{{- $policy := include "vsphere-descheduler.policyObject" . | fromJson }}
{{- /* Helm keeps a null it could not use to delete a default; null means absent here. */}}
{{- range $key, $value := deepCopy $policy }}
{{- if kindIs "invalid" $value }}{{ $_ := unset $policy $key }}{{ end }}
{{- end }}
{{- if include "vsphere-descheduler.ownFormat" . }}
{{- if .Values.clusterName }}
{{- $_ := set $policy "clusterName" .Values.clusterName }}
{{- end }}
{{- $topology := include "vsphere-descheduler.topology" . | fromJson }}
{{- $vsphere := default dict $policy.vsphere }}
{{- if .Values.vsphere.server }}
{{- $_ := set $vsphere "server" .Values.vsphere.server }}
{{- end }}
{{- if ne $topology.source "vcenter" }}
{{- $_ := set $vsphere "source" $topology.source }}
{{- end }}
{{- with $topology.supervisorNamespace }}
{{- $supervisor := kindIs "map" $vsphere.supervisor | ternary $vsphere.supervisor dict }}
{{- $_ := set $supervisor "namespace" . }}
{{- $_ := set $vsphere "supervisor" $supervisor }}
{{- end }}
{{- with $topology.nodeLabelKey }}
{{- $nodeLabel := kindIs "map" $vsphere.nodeLabel | ternary $vsphere.nodeLabel dict }}
{{- $_ := set $nodeLabel "key" . }}
{{- $_ := set $vsphere "nodeLabel" $nodeLabel }}
{{- end }}
{{- if $vsphere }}
{{- $_ := set $policy "vsphere" $vsphere }}
{{- end }}
{{- end }}
{{- /* apiVersion and kind first, as people write them; toYaml sorts the rest. */}}
{{- with $policy.apiVersion }}apiVersion: {{ . }}{{ "\n" }}{{ end }}
{{- with $policy.kind }}kind: {{ . }}{{ "\n" }}{{ end }}
{{- toYaml (omit $policy "apiVersion" "kind") }}
{{- end }}
{{- end }}

{{/*
Checks that need more than one value, so values.schema.json cannot make them. Each failure says
what to change. Included by the CronJob; renders nothing.
*/}}
{{- define "vsphere-descheduler.validate" -}}
{{- $policy := include "vsphere-descheduler.policyObject" . | fromJson }}
{{- $ownFormat := include "vsphere-descheduler.ownFormat" . }}
{{- $policyVsphere := default dict $policy.vsphere }}

{{- /* One cluster name and one server, wherever they are written. */}}
{{- if and .Values.clusterName $policy.clusterName (ne (toString $policy.clusterName) .Values.clusterName) }}
{{- fail (printf "clusterName %q and the policy's clusterName %q differ; set one of them" .Values.clusterName (toString $policy.clusterName)) }}
{{- end }}
{{- if and .Values.vsphere.server $policyVsphere.server (ne (toString $policyVsphere.server) .Values.vsphere.server) }}
{{- fail (printf "vsphere.server %q and the policy's vsphere.server %q differ; set one of them" .Values.vsphere.server (toString $policyVsphere.server)) }}
{{- end }}
{{- $source := (include "vsphere-descheduler.topology" . | fromJson).source }}
{{- if and (eq $source "vcenter") (not (or .Values.vsphere.server $policyVsphere.server)) }}
{{- fail "vsphere.server is required: the vCenter address (host, host:port or https URL)" }}
{{- end }}
{{- if not (or .Values.clusterName $policy.clusterName) }}
{{- fail "clusterName is required: a DNS label naming this Kubernetes cluster; it scopes the DRS rules this cluster owns" }}
{{- end }}

{{- /* Owned DRS rule names must leave room for the workload within vCenter's 80 characters. */}}
{{- $clusterName := default (toString $policy.clusterName) .Values.clusterName }}
{{- $drsRules := $policyVsphere.drsRules | default dict }}
{{- $drsRules = kindIs "map" $drsRules | ternary $drsRules dict }}
{{- $namePrefix := toString (get $drsRules "namePrefix" | default "vsphere-descheduler") }}
{{- $ownedPrefix := printf "%s:%s:" $namePrefix $clusterName }}
{{- if and $ownFormat (ne (toString (get $drsRules "enabled")) "false") (gt (len $ownedPrefix) 60) }}
{{- fail (printf "clusterName: DRS rule names start with %q, %d characters; namePrefix and clusterName together may use at most 60 so that names keep room for the workload" $ownedPrefix (len $ownedPrefix)) }}
{{- end }}

{{- /* Helm merges an object policy with the default one, which is in our format. */}}
{{- if and (not $ownFormat) (kindIs "map" .Values.policy) (not (kindIs "invalid" $policy.vsphere)) }}
{{- fail (printf "policy: apiVersion %s has no vsphere field, but Helm merged it in from the chart's default policy; set policy.vsphere to null, or give the policy as a string" (toString $policy.apiVersion)) }}
{{- end }}
{{- if and (not $ownFormat) (not (kindIs "invalid" $policy.clusterName)) }}
{{- fail (printf "policy: apiVersion %s has no clusterName field; set the clusterName value instead" (toString $policy.apiVersion)) }}
{{- end }}

{{- include "vsphere-descheduler.validateSource" . }}

{{- /* Credentials: from a Secret, never a literal. */}}
{{- $policyText := include "vsphere-descheduler.policyText" . }}
{{- if regexMatch "(?im)^\\s*(-\\s+)?(password|username)\\s*:" $policyText }}
{{- fail "policy: vCenter credentials never go in the policy; create a Secret and set vsphere.credentials.existingSecret" }}
{{- end }}
{{- if regexMatch "(?im)^\\s*(-\\s+)?token\\s*:" $policyText }}
{{- fail "policy: a Supervisor token never goes in the policy; create the Secret docs/vks.md describes and set vsphere.supervisor.existingSecret" }}
{{- end }}
{{- $envNames := list }}
{{- range .Values.extraEnv }}
{{- $envNames = append $envNames .name }}
{{- if and (eq .name "VSPHERE_PASSWORD") (hasKey . "value") }}
{{- fail "extraEnv: VSPHERE_PASSWORD must come from valueFrom.secretKeyRef, not a literal value" }}
{{- end }}
{{- end }}
{{- if and (eq $source "vcenter") (not .Values.vsphere.credentials.enabled) }}
{{- $fromEnv := and (has "VSPHERE_USERNAME" $envNames) (has "VSPHERE_PASSWORD" $envNames) }}
{{- $fromFiles := false }}
{{- range .Values.extraArgs }}
{{- if hasPrefix "--vsphere-credentials-dir" . }}{{ $fromFiles = true }}{{ end }}
{{- end }}
{{- if not (or $fromEnv $fromFiles) }}
{{- fail "vsphere.credentials.enabled is false: provide VSPHERE_USERNAME and VSPHERE_PASSWORD through extraEnv, or --vsphere-credentials-dir through extraArgs and extraVolumes" }}
{{- end }}
{{- end }}

{{- /* TLS: either trust a CA or trust nothing, not both. */}}
{{- $ca := .Values.vsphere.caBundle }}
{{- if and $ca.configMap $ca.secret }}
{{- fail "vsphere.caBundle: set configMap or secret, not both" }}
{{- end }}
{{- if and .Values.vsphere.insecureSkipVerify (or $ca.configMap $ca.secret) }}
{{- fail "vsphere.insecureSkipVerify and vsphere.caBundle exclude each other: with a CA bundle, verification works" }}
{{- end }}

{{- /* Metrics: one CA source; the alerts read what the runs push. */}}
{{- $metrics := .Values.metrics }}
{{- if and $metrics.push.caBundle.configMap $metrics.push.caBundle.secret }}
{{- fail "metrics.push.caBundle: set configMap or secret, not both" }}
{{- end }}
{{- if and $metrics.alerts.enabled (not $metrics.push.url) }}
{{- fail "metrics.alerts.enabled: the alerts read the metrics the runs push; set metrics.push.url" }}
{{- end }}
{{- if and $metrics.alerts.enabled (eq (include "vsphere-descheduler.runIntervalSeconds" .) "0") }}
{{- fail (printf "metrics.alerts.runIntervalSeconds: the schedule %q is not */N * * * *, so say how many seconds lie between runs" .Values.schedule) }}
{{- end }}

{{- if lt (int (include "vsphere-descheduler.runDeadline" .)) 10 }}
{{- fail (printf "activeDeadlineSeconds %d leaves the run less than 10 s once deadlineMarginSeconds %d are kept for its start and end" (int .Values.activeDeadlineSeconds) (int .Values.deadlineMarginSeconds)) }}
{{- end }}

{{- /* A run must end before the next one is due, or Forbid skips that one. */}}
{{- $every := regexFind "^\\*/[0-9]+ \\* \\* \\* \\*$" .Values.schedule }}
{{- if $every }}
{{- $minutes := $every | trimPrefix "*/" | splitList " " | first | atoi }}
{{- if and (gt $minutes 0) (ge (int .Values.activeDeadlineSeconds) (mul $minutes 60)) }}
{{- fail (printf "activeDeadlineSeconds %d must be shorter than the schedule's interval (%d s for %q), or a slow run delays the next" (int .Values.activeDeadlineSeconds) (mul $minutes 60) .Values.schedule) }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Checks of the topology source (vsphere.source): the chart mounts the credentials the source needs,
so the policy the runs read must name the same source, and what only another source uses is
refused rather than ignored: a vCenter address beside the supervisor source would suggest DRS
rules that no run writes. Included by vsphere-descheduler.validate; renders nothing.
*/}}
{{- define "vsphere-descheduler.validateSource" -}}
{{- include "vsphere-descheduler.validateSourceInPolicy" . }}
{{- include "vsphere-descheduler.validateSourceSettings" . }}
{{- end }}

{{/* The policy names the source the values name, and the source's settings once. */}}
{{- define "vsphere-descheduler.validateSourceInPolicy" -}}
{{- $topology := include "vsphere-descheduler.topology" . | fromJson }}
{{- $source := $topology.source }}
{{- $policy := include "vsphere-descheduler.policyObject" . | fromJson }}
{{- $policyVsphere := kindIs "map" $policy.vsphere | ternary $policy.vsphere dict }}

{{- /* The policy names the source; the values must name the same. */}}
{{- if not (include "vsphere-descheduler.ownFormat" .) }}
{{- if ne $source "vcenter" }}
{{- fail (printf "vsphere.source %s needs a policy in the vsphere-descheduler.io/v1alpha1 format: apiVersion %s has no vsphere section to name the source in" $source (toString $policy.apiVersion)) }}
{{- end }}
{{- else if kindIs "string" .Values.policy }}
{{- $written := toString (get $policyVsphere "source" | default "vcenter") }}
{{- if ne $written $source }}
{{- fail (printf "vsphere.source is %s but the string policy's vsphere.source is %s (vcenter when it names none): a string policy is mounted as it is, so write the source in it and set vsphere.source to the same, by which the chart mounts the source's credentials" $source $written) }}
{{- end }}
{{- else if and (get $policyVsphere "source") (ne (toString (get $policyVsphere "source")) $source) }}
{{- fail (printf "vsphere.source %q and the policy's vsphere.source %q differ; set vsphere.source, by which the chart mounts the source's credentials" $source (toString (get $policyVsphere "source"))) }}
{{- end }}

{{- /* One Supervisor namespace and one node label key, wherever they are written. */}}
{{- $supervisor := kindIs "map" $policyVsphere.supervisor | ternary $policyVsphere.supervisor dict }}
{{- $nodeLabel := kindIs "map" $policyVsphere.nodeLabel | ternary $policyVsphere.nodeLabel dict }}
{{- with $topology.supervisorNamespace }}
{{- if and (get $supervisor "namespace") (ne (toString (get $supervisor "namespace")) .) }}
{{- fail (printf "vsphere.supervisor.namespace %q and the policy's vsphere.supervisor.namespace %q differ; set one of them" . (toString (get $supervisor "namespace"))) }}
{{- end }}
{{- end }}
{{- with $topology.nodeLabelKey }}
{{- if and (get $nodeLabel "key") (ne (toString (get $nodeLabel "key")) .) }}
{{- fail (printf "vsphere.nodeLabel.key %q and the policy's vsphere.nodeLabel.key %q differ; set one of them" . (toString (get $nodeLabel "key"))) }}
{{- end }}
{{- end }}
{{- if and (kindIs "string" .Values.policy) (or $topology.supervisorNamespace $topology.nodeLabelKey) }}
{{- fail "vsphere.supervisor.namespace and vsphere.nodeLabel.key are written into an object policy only: a string policy is mounted as it is, so write them in it" }}
{{- end }}
{{- end }}

{{/* What the source needs, what only another source uses, and no override of the source. */}}
{{- define "vsphere-descheduler.validateSourceSettings" -}}
{{- $topology := include "vsphere-descheduler.topology" . | fromJson }}
{{- $source := $topology.source }}
{{- $policy := include "vsphere-descheduler.policyObject" . | fromJson }}
{{- $policyVsphere := kindIs "map" $policy.vsphere | ternary $policy.vsphere dict }}
{{- $supervisor := kindIs "map" $policyVsphere.supervisor | ternary $policyVsphere.supervisor dict }}
{{- $nodeLabel := kindIs "map" $policyVsphere.nodeLabel | ternary $policyVsphere.nodeLabel dict }}

{{- /* What the source needs. */}}
{{- if and (eq $source "supervisor") (not $topology.supervisorSecret) }}
{{- fail "vsphere.supervisor.existingSecret is required with vsphere.source supervisor: the Secret with the keys server, ca.crt, token and namespace that docs/vks.md creates from a token of the Supervisor namespace" }}
{{- end }}

{{- /* What only another source uses. */}}
{{- $unused := list }}
{{- if ne $source "vcenter" }}
{{- $why := "the runs never reach vCenter (DRS rules need vsphere.source vcenter)" }}
{{- if .Values.vsphere.server }}{{ $unused = append $unused (list "vsphere.server" $why) }}{{ end }}
{{- if get $policyVsphere "server" }}{{ $unused = append $unused (list "the policy's vsphere.server" $why) }}{{ end }}
{{- if .Values.vsphere.credentials.existingSecret }}{{ $unused = append $unused (list "vsphere.credentials.existingSecret" $why) }}{{ end }}
{{- if or .Values.vsphere.caBundle.configMap .Values.vsphere.caBundle.secret }}{{ $unused = append $unused (list "vsphere.caBundle" $why) }}{{ end }}
{{- if .Values.vsphere.insecureSkipVerify }}{{ $unused = append $unused (list "vsphere.insecureSkipVerify" $why) }}{{ end }}
{{- end }}
{{- if ne $source "supervisor" }}
{{- $why := "only the supervisor source reads the Supervisor" }}
{{- if $topology.supervisorSecret }}{{ $unused = append $unused (list "vsphere.supervisor.existingSecret" $why) }}{{ end }}
{{- if or $topology.supervisorNamespace (get $supervisor "namespace") }}{{ $unused = append $unused (list "vsphere.supervisor.namespace" $why) }}{{ end }}
{{- end }}
{{- if and (ne $source "node-label") (or $topology.nodeLabelKey (get $nodeLabel "key")) }}
{{- $unused = append $unused (list "vsphere.nodeLabel.key" "only the node-label source reads hosts from a node label") }}
{{- end }}
{{- with $unused }}
{{- $first := first . }}
{{- fail (printf "%s is unused with vsphere.source %s: %s; unset it" (index $first 0) $source (index $first 1)) }}
{{- end }}

{{- /* The source goes in the policy; a flag or variable would override it where the chart's
mounts cannot follow. */}}
{{- range .Values.extraArgs }}
{{- if hasPrefix "--topology-source" . }}
{{- fail (printf "extraArgs: %s; set vsphere.source instead, by which the chart mounts the source's credentials" .) }}
{{- end }}
{{- end }}
{{- range .Values.extraEnv }}
{{- if eq .name "VSPHERE_DESCHEDULER_TOPOLOGY_SOURCE" }}
{{- fail "extraEnv: VSPHERE_DESCHEDULER_TOPOLOGY_SOURCE; set vsphere.source instead, by which the chart mounts the source's credentials" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The run's own deadline in seconds: it reports and releases its lock before the Job's
activeDeadlineSeconds stops the pod.
*/}}
{{- define "vsphere-descheduler.runDeadline" -}}
{{- sub (int .Values.activeDeadlineSeconds) (int .Values.deadlineMarginSeconds) -}}
{{- end }}

{{/*
The node label keys the runs write, as a JSON list, host first: what the policy's
vsphere.labels names (the host key defaults as the binary defaults it; an empty cluster or
datacenter key is not written). A policy in upstream's format has no vsphere section, so the
runs write the default host key only.
*/}}
{{- define "vsphere-descheduler.ownedLabelKeys" -}}
{{- $policy := include "vsphere-descheduler.policyObject" . | fromJson }}
{{- $labels := dict }}
{{- if include "vsphere-descheduler.ownFormat" . }}
{{- $vsphere := kindIs "map" $policy.vsphere | ternary $policy.vsphere dict }}
{{- $labels = kindIs "map" $vsphere.labels | ternary $vsphere.labels dict }}
{{- end }}
{{- $keys := list (toString (get $labels "host" | default "vsphere-descheduler.io/host")) }}
{{- range list "cluster" "datacenter" }}
{{- with get $labels . }}{{ $keys = append $keys (toString .) }}{{ end }}
{{- end }}
{{- /* The site label exists only with vsphere.sites (issue 41), under its default key unless
labels.site names another. */}}
{{- if include "vsphere-descheduler.ownFormat" . }}
{{- $vsphere := kindIs "map" $policy.vsphere | ternary $policy.vsphere dict }}
{{- if kindIs "map" $vsphere.sites }}
{{- $keys = append $keys (toString (get $labels "site" | default "vsphere-descheduler.io/site")) }}
{{- end }}
{{- end }}
{{- toJson $keys }}
{{- end }}

{{/*
The spec of a Pod that runs the binary with the runs' configuration: service account, image,
arguments, environment, volumes, scheduling and security settings. The CronJob's runs take it with
command "run"; the Helm test hook (templates/tests/check.yaml) with "check", so that `helm test`
checks exactly what a run will use. Called with (dict "root" $ "command" "run").
*/}}
{{- define "vsphere-descheduler.podSpec" -}}
{{- $root := .root }}
{{- $fullname := include "vsphere-descheduler.fullname" $root }}
{{- /* vCenter's credentials only for the vcenter source; the others refuse vCenter settings. */}}
{{- $topology := include "vsphere-descheduler.topology" $root | fromJson }}
{{- $vcenterCredentials := and (eq $topology.source "vcenter") $root.Values.vsphere.credentials.enabled }}
{{- $credentials := $root.Values.vsphere.credentials }}
{{- $supervisor := eq $topology.source "supervisor" }}
{{- $ca := $root.Values.vsphere.caBundle }}
{{- $push := $root.Values.metrics.push -}}
serviceAccountName: {{ include "vsphere-descheduler.serviceAccountName" $root }}
automountServiceAccountToken: true
restartPolicy: Never
{{- with $root.Values.priorityClassName }}
priorityClassName: {{ . | quote }}
{{- end }}
{{- with $root.Values.podSecurityContext }}
securityContext:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $root.Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $root.Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $root.Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
containers:
  - name: vsphere-descheduler
    image: {{ include "vsphere-descheduler.image" $root | quote }}
    imagePullPolicy: {{ $root.Values.image.pullPolicy }}
    args:
      - {{ .command }}
      {{- range .extraArgs }}
      - {{ . }}
      {{- end }}
      - --policy={{ include "vsphere-descheduler.policyDir" $root }}/policy.yaml
      - --output={{ $root.Values.output }}
      - --log-format={{ $root.Values.logFormat }}
      - --deadline={{ include "vsphere-descheduler.runDeadline" $root }}s
      {{- if $root.Values.dryRun }}
      - --dry-run
      {{- end }}
      {{- with $root.Values.clusterName }}
      - {{ printf "--cluster-name=%s" . | quote }}
      {{- end }}
      {{- with $root.Values.vsphere.server }}
      - {{ printf "--vsphere-server=%s" . | quote }}
      {{- end }}
      {{- if $vcenterCredentials }}
      - --vsphere-credentials-dir={{ include "vsphere-descheduler.credentialsDir" $root }}
      {{- end }}
      {{- if $supervisor }}
      - --supervisor-credentials-dir={{ include "vsphere-descheduler.supervisorCredentialsDir" $root }}
      {{- end }}
      {{- if or $ca.configMap $ca.secret }}
      - --vsphere-ca-file={{ include "vsphere-descheduler.caDir" $root }}/ca.pem
      {{- end }}
      {{- with $push.url }}
      - {{ printf "--metrics-push-url=%s" . | quote }}
      {{- if $push.credentials.existingSecret }}
      - --metrics-push-credentials-dir={{ include "vsphere-descheduler.metricsCredentialsDir" $root }}
      {{- end }}
      {{- if or $push.caBundle.configMap $push.caBundle.secret }}
      - --metrics-push-ca-file={{ include "vsphere-descheduler.metricsCaDir" $root }}/ca.pem
      {{- end }}
      {{- end }}
      {{- range $root.Values.extraArgs }}
      - {{ . | quote }}
      {{- end }}
    env:
      # The lease lives in the release's namespace (the Role grants it there).
      - name: POD_NAMESPACE
        valueFrom:
          fieldRef:
            fieldPath: metadata.namespace
      # A bare level is the tool's own: its libraries stay quiet, as without RUST_LOG.
      - name: RUST_LOG
        {{- if regexMatch "^(error|warn|info|debug|trace)$" $root.Values.logLevel }}
        value: {{ printf "vsphere_descheduler=%s" $root.Values.logLevel | quote }}
        {{- else }}
        value: {{ $root.Values.logLevel | quote }}
        {{- end }}
      {{- if $root.Values.vsphere.insecureSkipVerify }}
      - name: VSPHERE_INSECURE
        value: "true"
      {{- end }}
      {{- with $root.Values.extraEnv }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
    {{- with $root.Values.resources }}
    resources:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- with $root.Values.securityContext }}
    securityContext:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    volumeMounts:
      - name: policy
        mountPath: {{ include "vsphere-descheduler.policyDir" $root }}
        readOnly: true
      {{- if $vcenterCredentials }}
      - name: credentials
        mountPath: {{ include "vsphere-descheduler.credentialsDir" $root }}
        readOnly: true
      {{- end }}
      {{- if $supervisor }}
      - name: supervisor-credentials
        mountPath: {{ include "vsphere-descheduler.supervisorCredentialsDir" $root }}
        readOnly: true
      {{- end }}
      {{- if or $ca.configMap $ca.secret }}
      - name: ca-bundle
        mountPath: {{ include "vsphere-descheduler.caDir" $root }}
        readOnly: true
      {{- end }}
      {{- if and $push.url $push.credentials.existingSecret }}
      - name: metrics-credentials
        mountPath: {{ include "vsphere-descheduler.metricsCredentialsDir" $root }}
        readOnly: true
      {{- end }}
      {{- if and $push.url (or $push.caBundle.configMap $push.caBundle.secret) }}
      - name: metrics-ca-bundle
        mountPath: {{ include "vsphere-descheduler.metricsCaDir" $root }}
        readOnly: true
      {{- end }}
      {{- with $root.Values.extraVolumeMounts }}
      {{- toYaml . | nindent 6 }}
      {{- end }}
volumes:
  - name: policy
    configMap:
      name: {{ $fullname }}-policy
  {{- if $vcenterCredentials }}
  # The user's Secret, created outside the chart; only its two keys are mounted, under
  # the file names --vsphere-credentials-dir expects.
  - name: credentials
    secret:
      secretName: {{ $credentials.existingSecret | quote }}
      defaultMode: 0440
      items:
        - key: {{ $credentials.usernameKey | quote }}
          path: username
        - key: {{ $credentials.passwordKey | quote }}
          path: password
  {{- end }}
  {{- if $supervisor }}
  # The Secret docs/vks.md creates, whole: its keys (server, ca.crt, token, and namespace when
  # the recipe wrote it) are the file names --supervisor-credentials-dir reads, and listing
  # items would make the optional namespace key a mount failure when it is absent.
  - name: supervisor-credentials
    secret:
      secretName: {{ $topology.supervisorSecret | quote }}
      defaultMode: 0440
  {{- end }}
  {{- if $ca.configMap }}
  - name: ca-bundle
    configMap:
      name: {{ $ca.configMap | quote }}
      items:
        - key: {{ $ca.key | quote }}
          path: ca.pem
  {{- else if $ca.secret }}
  - name: ca-bundle
    secret:
      secretName: {{ $ca.secret | quote }}
      defaultMode: 0440
      items:
        - key: {{ $ca.key | quote }}
          path: ca.pem
  {{- end }}
  {{- if and $push.url $push.credentials.existingSecret }}
  # The Pushgateway's credentials, from the user's Secret: only the keys of the chosen
  # kind, under the file names --metrics-push-credentials-dir expects.
  - name: metrics-credentials
    secret:
      secretName: {{ $push.credentials.existingSecret | quote }}
      defaultMode: 0440
      items:
        {{- if eq $push.credentials.type "basic" }}
        - key: {{ $push.credentials.usernameKey | quote }}
          path: username
        - key: {{ $push.credentials.passwordKey | quote }}
          path: password
        {{- else }}
        - key: {{ $push.credentials.tokenKey | quote }}
          path: token
        {{- end }}
  {{- end }}
  {{- if and $push.url $push.caBundle.configMap }}
  - name: metrics-ca-bundle
    configMap:
      name: {{ $push.caBundle.configMap | quote }}
      items:
        - key: {{ $push.caBundle.key | quote }}
          path: ca.pem
  {{- else if and $push.url $push.caBundle.secret }}
  - name: metrics-ca-bundle
    secret:
      secretName: {{ $push.caBundle.secret | quote }}
      defaultMode: 0440
      items:
        - key: {{ $push.caBundle.key | quote }}
          path: ca.pem
  {{- end }}
  {{- with $root.Values.extraVolumes }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}
