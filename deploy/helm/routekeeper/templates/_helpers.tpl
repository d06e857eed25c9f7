{{/* The release's full name: "routekeeper" for a release named routekeeper. */}}
{{- define "routekeeper.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "routekeeper.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "routekeeper.labels" -}}
{{ include "routekeeper.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "routekeeper.leaseName" -}}
{{- default (include "routekeeper.fullname" .) .Values.leaderElection.leaseName -}}
{{- end -}}

{{- define "routekeeper.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* Refuses values routekeeper would only reject at start. */}}
{{- define "routekeeper.validate" -}}
{{- if not .Values.cluster.name -}}
{{- fail "cluster.name is required: the value of the route table's claim tag" -}}
{{- end -}}
{{- if not .Values.cluster.clusterCIDRs -}}
{{- fail "cluster.clusterCIDRs is required: kube-controller-manager's --cluster-cidr" -}}
{{- end -}}
{{- if and (gt (int .Values.replicas) 1) (not .Values.leaderElection.enabled) -}}
{{- fail (printf "replicas=%d needs leaderElection.enabled=true: two replicas without it would both write the route table" (int .Values.replicas)) -}}
{{- end -}}
{{- if eq .Values.identity.type "workloadIdentity" -}}
{{- if not .Values.identity.workloadIdentity.clientID -}}
{{- fail "identity.workloadIdentity.clientID is required with identity.type=workloadIdentity" -}}
{{- end -}}
{{- if or (not .Values.azure.subscriptionID) (not .Values.azure.tenantID) -}}
{{- fail "azure.subscriptionID and azure.tenantID are required with identity.type=workloadIdentity (there is no azure.json)" -}}
{{- end -}}
{{- if or (not .Values.routeTable.id) (not .Values.subnets) -}}
{{- fail "routeTable.id and subnets are required with identity.type=workloadIdentity (there is no azure.json to derive them from)" -}}
{{- end -}}
{{- end -}}
{{- $controller := dig "controller" (dict) .Values.config -}}
{{- if hasKey $controller "leaderElection" -}}
{{- fail "config.controller.leaderElection: set leaderElection.enabled and leaderElection.leaseName instead (the chart keeps the Lease and its RBAC together)" -}}
{{- end -}}
{{- if hasKey $controller "metricsAddress" -}}
{{- fail "config.controller.metricsAddress: set metrics.port instead (the chart keeps the container port, probes and monitors together)" -}}
{{- end -}}
{{- if hasKey .Values.config "source" -}}
{{- fail "config.source: the chart runs routekeeper with the in-cluster Kubernetes source; leave it out" -}}
{{- end -}}
{{- if and .Values.identity.azureJSON.create (ne .Values.identity.type "azureJSON") -}}
{{- fail (printf "identity.azureJSON.create=true but identity.type=%s" .Values.identity.type) -}}
{{- end -}}
{{- if and .Values.identity.azureJSON.create (not .Values.identity.azureJSON.content) -}}
{{- fail "identity.azureJSON.create=true needs identity.azureJSON.content (the azure.json text)" -}}
{{- end -}}
{{- end -}}

{{/* routekeeper's configuration file (docs/configuration.md). */}}
{{- define "routekeeper.config" -}}
{{- $azure := dict -}}
{{- if eq .Values.identity.type "azureJSON" -}}
{{- $_ := set $azure "configFile" "/etc/routekeeper/azure/azure.json" -}}
{{- end -}}
{{- with .Values.azure.cloud }}{{ $_ := set $azure "cloud" . }}{{ end -}}
{{- with .Values.azure.subscriptionID }}{{ $_ := set $azure "subscriptionID" . }}{{ end -}}
{{- with .Values.azure.tenantID }}{{ $_ := set $azure "tenantID" . }}{{ end -}}
{{- $routeTable := dict "create" .Values.routeTable.create -}}
{{- with .Values.routeTable.id }}{{ $_ := set $routeTable "id" . }}{{ end -}}
{{- $leaderElection := dict "enabled" .Values.leaderElection.enabled "namespace" .Release.Namespace "name" (include "routekeeper.leaseName" .) -}}
{{- $cfg := dict
  "cluster" (deepCopy .Values.cluster)
  "routeTable" $routeTable
  "association" (deepCopy .Values.association)
  "routes" .Values.routes
  "cloud" (dict "type" "azure" "azure" $azure)
  "source" (dict "type" "kube")
  "controller" (dict "leaderElection" $leaderElection "metricsAddress" (printf ":%d" (int .Values.metrics.port)))
-}}
{{- with .Values.subnets }}{{ $_ := set $cfg "subnets" (deepCopy .) }}{{ end -}}
{{- toYaml (mergeOverwrite $cfg (deepCopy .Values.config)) -}}
{{- end -}}
