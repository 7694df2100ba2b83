{{/* The release's objects are all named after it (truncated to DNS label length). */}}
{{- define "inferwire.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "inferwire.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "inferwire.labels" -}}
{{ include "inferwire.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* HTTPS probes when the server speaks TLS; plain TCP when it also demands client
certificates, which the kubelet cannot present. */}}
{{- define "inferwire.probe" -}}
{{- if and .root.Values.tls.enabled .root.Values.tls.clientCaKey -}}
tcpSocket:
  port: http
{{- else -}}
httpGet:
  path: {{ .path }}
  port: http
  scheme: {{ if .root.Values.tls.enabled }}HTTPS{{ else }}HTTP{{ end }}
{{- end -}}
{{- end -}}
