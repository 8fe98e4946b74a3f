{{/* Chart name, truncated to the 63 characters of a DNS label. */}}
{{- define "paramserver.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name prefix of every resource: <release>-<chart>, or the release name when it already holds the chart name. */}}
{{- define "paramserver.fullname" -}}
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

{{- define "paramserver.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Standard labels (app.kubernetes.io/*). Call with (dict "ctx" $ "component" "master"). */}}
{{- define "paramserver.labels" -}}
helm.sh/chart: {{ include "paramserver.chart" .ctx }}
{{ include "paramserver.selectorLabels" . }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/part-of: paramserver
{{- end }}

{{/* Selector labels: stable across upgrades. Call with (dict "ctx" $ "component" "master"). */}}
{{- define "paramserver.selectorLabels" -}}
app.kubernetes.io/name: {{ include "paramserver.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* Image of a service. Call with (dict "ctx" $ "service" "master-service"). */}}
{{- define "paramserver.image" -}}
{{- printf "%s/%s:%s" .ctx.Values.image.prefix .service (default .ctx.Chart.AppVersion .ctx.Values.image.tag) }}
{{- end }}

{{- define "paramserver.etcdName" -}}
{{- printf "%s-etcd" (include "paramserver.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* etcd client URLs (paramserver.etcd.endpoints): the external ones, or the bundled etcd's Service. */}}
{{- define "paramserver.etcdEndpoints" -}}
{{- if .Values.etcd.external.endpoints }}
{{- join "," .Values.etcd.external.endpoints }}
{{- else }}
{{- printf "http://%s:%d" (include "paramserver.etcdName" .) (int .Values.etcd.clientPort) }}
{{- end }}
{{- end }}

{{- define "paramserver.secretName" -}}
{{- if .Values.adminToken.existingSecret }}
{{- .Values.adminToken.existingSecret }}
{{- else }}
{{- printf "%s-admin" (include "paramserver.fullname" .) }}
{{- end }}
{{- end }}

{{/* Properties every service shares (paramserver.* of service-support's CommonProperties). */}}
{{- define "paramserver.commonProperties" -}}
paramserver.job={{ .Values.jobName }}
paramserver.etcd.endpoints={{ include "paramserver.etcdEndpoints" . }}
paramserver.etcd.call-timeout={{ .Values.etcd.callTimeout }}
paramserver.etcd.lease-ttl={{ .Values.etcd.leaseTtl }}
paramserver.etcd.startup-timeout={{ .Values.etcd.startupTimeout }}
{{- if .Values.etcd.auth.user }}
paramserver.etcd.user={{ .Values.etcd.auth.user }}
{{- end }}
{{- range $k, $v := .Values.extraProperties }}
{{ $k }}={{ $v }}
{{- end }}
{{- end }}

{{/*
Environment of every paramserver container: the pod IP as advertise host (what the service
publishes in etcd), the admin token from the Secret, the JVM options, the role's config file.
*/}}
{{- define "paramserver.env" -}}
- name: PARAMSERVER_ADVERTISE_HOST
  valueFrom:
    fieldRef:
      fieldPath: status.podIP
- name: PARAMSERVER_ADMIN_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ include "paramserver.secretName" . }}
      key: {{ .Values.adminToken.secretKey }}
{{- if .Values.etcd.auth.passwordSecret }}
- name: PARAMSERVER_ETCD_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .Values.etcd.auth.passwordSecret }}
      key: {{ .Values.etcd.auth.passwordKey }}
{{- end }}
- name: SPRING_CONFIG_ADDITIONAL_LOCATION
  value: optional:file:/config/
- name: JAVA_TOOL_OPTIONS
  value: {{ .Values.javaToolOptions | quote }}
{{- end }}

{{/* Probes on the actuator groups, on the container port named "http". */}}
{{- define "paramserver.probes" -}}
startupProbe:
  httpGet:
    path: /actuator/health/liveness
    port: http
  periodSeconds: {{ .Values.probes.startupPeriodSeconds }}
  failureThreshold: {{ .Values.probes.startupFailureThreshold }}
livenessProbe:
  httpGet:
    path: /actuator/health/liveness
    port: http
  periodSeconds: {{ .Values.probes.periodSeconds }}
  timeoutSeconds: {{ .Values.probes.timeoutSeconds }}
  failureThreshold: {{ .Values.probes.livenessFailureThreshold }}
readinessProbe:
  httpGet:
    path: /actuator/health/readiness
    port: http
  periodSeconds: {{ .Values.probes.periodSeconds }}
  timeoutSeconds: {{ .Values.probes.timeoutSeconds }}
  failureThreshold: {{ .Values.probes.readinessFailureThreshold }}
{{- end }}

{{/* The demo-data init container and the data volume mount. */}}
{{- define "paramserver.demoDataInit" -}}
{{- if and .Values.data.demo.enabled (not .Values.data.volume) }}
- name: demo-data
  image: {{ include "paramserver.image" (dict "ctx" . "service" "psctl") }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  args:
    - demo-data
    - --output
    - {{ .Values.data.mountPath }}
    {{- range .Values.data.demo.args }}
    - {{ . | quote }}
    {{- end }}
  securityContext:
    {{- toYaml .Values.securityContext | nindent 4 }}
  resources:
    {{- toYaml .Values.data.demo.resources | nindent 4 }}
  volumeMounts:
    - name: data
      mountPath: {{ .Values.data.mountPath }}
{{- end }}
{{- end }}

{{- define "paramserver.dataVolume" -}}
- name: data
  {{- if .Values.data.volume }}
  {{- toYaml .Values.data.volume | nindent 2 }}
  {{- else }}
  emptyDir: {}
  {{- end }}
{{- end }}
