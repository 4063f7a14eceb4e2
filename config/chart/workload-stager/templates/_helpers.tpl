{{/* The labels of every object of the chart. */}}
{{- define "stager.labels" -}}
app.kubernetes.io/name: workload-stager
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{/* The labels that select the stager's pods. */}}
{{- define "stager.selectorLabels" -}}
app.kubernetes.io/name: workload-stager
app.kubernetes.io/component: manager
{{- end }}

{{/* The namespace of the spaces' kubeconfig Secrets. */}}
{{- define "stager.kubeconfigNamespace" -}}
{{- default .Release.Namespace .Values.kubeconfig.namespace }}
{{- end }}

{{/* The stager's image. */}}
{{- define "stager.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
