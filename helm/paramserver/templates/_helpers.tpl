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

{{/* Image of a service: [<registry>/]<prefix>/<service>:<tag>. Call with (dict "ctx" $ "service" "master-service"). */}}
{{- define "paramserver.image" -}}
{{- $v := .ctx.Values.image }}
{{- $repo := printf "%s/%s" $v.prefix .service }}
{{- if $v.registry }}{{ $repo = printf "%s/%s" (trimSuffix "/" $v.registry) $repo }}{{ end }}
{{- printf "%s:%s" $repo (default .ctx.Chart.AppVersion $v.tag) }}
{{- end }}

{{/* ServiceAccount of every pod (its token is mounted only where a pod calls the Kubernetes API). */}}
{{- define "paramserver.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "paramserver.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
Name of a Job whose pod template changes with the values: <base>-<hash of its spec>. A Job's pod
template is immutable, so a changed spec must be a new Job (Helm deletes the old one) for
`helm upgrade` to succeed. Call with (dict "base" "x-trainer" "spec" $renderedSpec).
*/}}
{{- define "paramserver.hashedName" -}}
{{- printf "%s-%s" (.base | trunc 54 | trimSuffix "-") (.spec | sha256sum | trunc 8) }}
{{- end }}

{{/* The writable temp directory of every container (the root filesystem is read-only). */}}
{{- define "paramserver.tmpMount" -}}
- name: tmp
  mountPath: /tmp
{{- end }}
{{- define "paramserver.tmpVolume" -}}
- name: tmp
  emptyDir:
    sizeLimit: {{ .Values.tmpSizeLimit }}
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
    {{- include "paramserver.tmpMount" . | nindent 4 }}
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

{{/* Name of the trainer Job: <fullname>-trainer-<hash of its spec> (see paramserver.hashedName). */}}
{{- define "paramserver.trainerJobName" -}}
{{- include "paramserver.hashedName" (dict "base" (printf "%s-trainer" (include "paramserver.fullname" .)) "spec" (include "paramserver.trainerJobSpec" .)) }}
{{- end }}

{{/* Whether the trainers mount the chart's ReadWriteOnce model PVC (then they share one node). */}}
{{- define "paramserver.modelPvcRwo" -}}
{{- if and .Values.trainer.modelPersistence.enabled (not .Values.trainer.modelVolume) (not (has "ReadWriteMany" .Values.trainer.modelPersistence.accessModes)) }}true{{ end }}
{{- end }}

{{/* The job-end Job's spec (hashed into its name). */}}
{{- define "paramserver.jobEndSpec" -}}
{{- $fullname := include "paramserver.fullname" . -}}
backoffLimit: 20
template:
  metadata:
    labels:
      {{- include "paramserver.labels" (dict "ctx" . "component" "job-end") | nindent 6 }}
  spec:
    restartPolicy: OnFailure
    serviceAccountName: {{ include "paramserver.serviceAccountName" . }}
    automountServiceAccountToken: true
    securityContext:
      {{- toYaml .Values.podSecurityContext | nindent 6 }}
    {{- with .Values.imagePullSecrets }}
    imagePullSecrets:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    containers:
      - name: job-end
        # any image with sh and curl: the psctl image has both
        image: {{ include "paramserver.image" (dict "ctx" . "service" "psctl") }}
        imagePullPolicy: {{ .Values.image.pullPolicy }}
        command: ["/bin/sh", "-c"]
        args:
          - |
            set -u
            sa=/var/run/secrets/kubernetes.io/serviceaccount
            ns=$(cat $sa/namespace)
            api="https://${KUBERNETES_SERVICE_HOST}:${KUBERNETES_SERVICE_PORT}"
            k() { curl -fsS -m 10 --cacert "$sa/ca.crt" -H "Authorization: Bearer $(cat $sa/token)" "$@"; }
            field() { sed -n "s/.*\"$1\": *\([0-9][0-9]*\).*/\1/p" | head -1; }
            scale() { k -X PATCH -H "Content-Type: application/merge-patch+json" -d '{"spec":{"replicas":0}}' -o /dev/null "$api/apis/apps/v1/namespaces/$ns/$1/$2/scale" && echo "scaled $1/$2 to 0"; }
            replicas() { k "$api/apis/apps/v1/namespaces/$ns/$1/$2" | tr -d '\n' | sed 's/.*"status": *{//' | field replicas; }
            echo "waiting for Job $TRAINER_JOB to complete ($COMPLETIONS trainers)"
            while :; do
              done_=$(k "$api/apis/batch/v1/namespaces/$ns/jobs/$TRAINER_JOB" | tr -d '\n' | sed 's/.*"status": *{//' | field succeeded)
              [ "${done_:-0}" -ge "$COMPLETIONS" ] && break
              sleep "$PERIOD"
            done
            echo "the trainer Job is complete: the job is FINISHED"
            scale deployments {{ $fullname }}-master || exit 1
            scale statefulsets {{ $fullname }}-pserver || exit 1
            {{- if not .Values.etcd.external.endpoints }}
            # etcd last: the pservers record their final checkpoint in it
            until [ "$(replicas statefulsets {{ $fullname }}-pserver)" = 0 ]; do sleep 2; done
            scale statefulsets {{ include "paramserver.etcdName" . }} || exit 1
            {{- end }}
        env:
          - name: TRAINER_JOB
            value: {{ include "paramserver.trainerJobName" . }}
          - name: COMPLETIONS
            value: {{ .Values.trainer.completions | quote }}
          - name: PERIOD
            value: {{ .Values.jobEnd.periodSeconds | quote }}
          - name: JAVA_TOOL_OPTIONS
            value: ""
        securityContext:
          {{- toYaml .Values.securityContext | nindent 10 }}
        resources:
          {{- toYaml .Values.jobEnd.resources | nindent 10 }}
        volumeMounts:
          {{- include "paramserver.tmpMount" . | nindent 10 }}
    volumes:
      {{- include "paramserver.tmpVolume" . | nindent 6 }}
{{- end }}

{{/* Whole seconds of a Spring duration value: "90s", "5m", "1h", "2d", "500ms" or a bare number (ms). */}}
{{- define "paramserver.durationSeconds" -}}
{{- $v := toString . | trim }}
{{- $n := regexFind "^[0-9]+" $v | default "0" | int }}
{{- $unit := trimPrefix (toString $n) $v }}
{{- if eq $unit "s" }}{{ $n }}
{{- else if eq $unit "m" }}{{ mul $n 60 }}
{{- else if eq $unit "h" }}{{ mul $n 3600 }}
{{- else if eq $unit "d" }}{{ mul $n 86400 }}
{{- else if or (eq $unit "ms") (eq $unit "") }}{{ div $n 1000 }}
{{- else }}{{ fail (printf "cannot read the duration %q: use a number with s, m, h, d or ms" $v) }}
{{- end }}
{{- end }}
