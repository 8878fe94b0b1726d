{{/* The name every object of the release carries: <release>-scheduler. */}}
{{- define "pal.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-scheduler" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "pal.serviceAccountName" -}}
{{- default (include "pal.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "pal.selectorLabels" -}}
app.kubernetes.io/name: pal
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "pal.labels" -}}
{{ include "pal.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The scheduler's config: the values' config plus what the release decides. */}}
{{- define "pal.config" -}}
{{- $c := deepCopy .Values.config -}}
{{- $_ := set $c "namespace" (default .Release.Namespace $c.namespace) -}}
{{- $_ := set $c "metricsAddr" (default (printf ":%v" .Values.metrics.port) $c.metricsAddr) -}}
{{- $le := default dict $c.leaderElection -}}
{{- $_ := set $le "leaseName" (default (include "pal.fullname" .) $le.leaseName) -}}
{{- $_ := set $c "leaderElection" $le -}}
{{- if and (gt (int .Values.replicas) 1) (not $le.enabled) -}}
{{- fail "replicas > 1 needs config.leaderElection.enabled: true (two leaders would bind the same GPUs)" -}}
{{- end -}}
{{- toYaml $c -}}
{{- end -}}
