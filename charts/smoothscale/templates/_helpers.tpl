{{/* Names and labels shared by every template. */}}

{{- define "smoothscale.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's resource name prefix: the release name, plus the chart name unless it is contained. */}}
{{- define "smoothscale.fullname" -}}
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

{{- define "smoothscale.selectorLabels" -}}
app.kubernetes.io/name: {{ include "smoothscale.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{- define "smoothscale.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "smoothscale.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: smoothscale
{{- end }}

{{- define "smoothscale.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "smoothscale.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "smoothscale.peeringName" -}}
{{- default (include "smoothscale.fullname" .) .Values.peering.name }}
{{- end }}

{{/* More than one replica: kopf peering decides which replica acts. */}}
{{- define "smoothscale.peered" -}}
{{- if gt (int .Values.replicaCount) 1 }}true{{ end }}
{{- end }}
