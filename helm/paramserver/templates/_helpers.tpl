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

{{/*
Environment of every paramserver container: the pod IP as advertise host (what the service
publishes in etcd), the admin token from the Secret, the S3 store and its credentials, the JVM
options, the role's config file, then the component's extraEnv. Call with (dict "ctx" $
"component" .Values.master); add "noS3" true for a service that reads no object store.
*/}}
{{- define "paramserver.env" -}}
{{- $v := .ctx.Values -}}
- name: PARAMSERVER_ADVERTISE_HOST
  valueFrom:
    fieldRef:
      fieldPath: status.podIP
- name: PARAMSERVER_ADMIN_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ include "paramserver.secretName" .ctx }}
      key: {{ $v.adminToken.secretKey }}
{{- with include "paramserver.etcdPasswordSecret" .ctx }}
- name: PARAMSERVER_ETCD_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $v.etcd.auth.passwordKey }}
{{- end }}
{{- if not .noS3 }}
{{- include "paramserver.s3Env" .ctx }}
{{- end }}
- name: SPRING_CONFIG_ADDITIONAL_LOCATION
  value: optional:file:/config/
- name: JAVA_TOOL_OPTIONS
  value: {{ $v.javaToolOptions | quote }}
{{- with .component.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The S3 store (s3.*) and its credentials as environment variables: every service's, the Python trainers'. */}}
{{- define "paramserver.s3Env" -}}
{{- $v := .Values -}}
{{- with $v.s3.endpoint }}
- name: PARAMSERVER_S3_ENDPOINT
  value: {{ . | quote }}
{{- end }}
{{- with $v.s3.region }}
- name: PARAMSERVER_S3_REGION
  value: {{ . | quote }}
{{- end }}
{{- if $v.s3.pathStyle }}
- name: PARAMSERVER_S3_PATH_STYLE
  value: "true"
{{- end }}
{{- if $v.s3.existingSecret }}
# the AWS SDK's default credential chain reads these (no key in any ConfigMap)
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ $v.s3.existingSecret }}
      key: {{ $v.s3.accessKeyIdKey }}
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $v.s3.existingSecret }}
      key: {{ $v.s3.secretAccessKeyKey }}
{{- end }}
{{- end }}

{{/* The component's envFrom (whole Secrets or ConfigMaps as variables), if any. Call with the component's values. */}}
{{- define "paramserver.envFrom" -}}
{{- with .envFrom }}
envFrom:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* Mounts every paramserver container has besides its own: /tmp, its role's TLS Secret, extraVolumeMounts. Call with (dict "ctx" $ "role" "master" "component" .Values.master). */}}
{{- define "paramserver.commonMounts" -}}
{{- include "paramserver.tmpMount" .ctx }}
{{- if include "paramserver.tlsOn" .ctx }}
- name: tls
  mountPath: {{ .ctx.Values.tls.mountPath }}
  readOnly: true
{{- end }}
{{- with .component.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Volumes of every paramserver pod besides its own: /tmp, its role's TLS Secret, extraVolumes. Call with (dict "ctx" $ "role" "master" "component" .Values.master). */}}
{{- define "paramserver.commonVolumes" -}}
{{- include "paramserver.tmpVolume" .ctx }}
{{- if include "paramserver.tlsOn" .ctx }}
- name: tls
  secret:
    secretName: {{ include "paramserver.tlsSecret" (dict "ctx" .ctx "role" .role) }}
    defaultMode: 0440
{{- end }}
{{- with .component.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* "true" when the bundled etcd runs with authentication (etcd.auth.enabled, no external etcd). */}}
{{- define "paramserver.etcdAuthBundled" -}}
{{- if and (not .Values.etcd.external.endpoints) .Values.etcd.auth.enabled }}true{{ end }}
{{- end }}

{{/* The etcd user the services log in as: etcd.auth.user; "paramserver" for the bundled etcd with auth. */}}
{{- define "paramserver.etcdUser" -}}
{{- if include "paramserver.etcdAuthBundled" . }}
{{- .Values.etcd.auth.user | default "paramserver" }}
{{- else }}
{{- .Values.etcd.auth.user }}
{{- end }}
{{- end }}

{{/* The Secret of the etcd password(s): etcd.auth.passwordSecret, else the generated one (bundled etcd with auth), else none. */}}
{{- define "paramserver.etcdPasswordSecret" -}}
{{- if .Values.etcd.auth.passwordSecret }}
{{- .Values.etcd.auth.passwordSecret }}
{{- else if include "paramserver.etcdAuthBundled" . }}
{{- printf "%s-etcd-auth" (include "paramserver.fullname" .) }}
{{- end }}
{{- end }}

{{/* "true" when gRPC runs over TLS: a shared TLS Secret or a Secret of some role is given. */}}
{{- define "paramserver.tlsOn" -}}
{{- $v := .Values.tls -}}
{{- if or $v.existingSecret $v.roleSecrets.master $v.roleSecrets.pserver $v.roleSecrets.trainer $v.roleSecrets.serving }}true{{ end }}
{{- end }}

{{/*
The TLS Secret a role's pods mount: tls.roleSecrets.<role> (a certificate whose subject's OU names
the role), else the shared tls.existingSecret. Call with (dict "ctx" $ "role" "pserver").
*/}}
{{- define "paramserver.tlsSecret" -}}
{{- $v := .ctx.Values.tls -}}
{{- $secret := index $v.roleSecrets .role | default $v.existingSecret -}}
{{- if not $secret }}
{{- fail (printf "tls.roleSecrets.%s is empty and there is no tls.existingSecret to fall back on: the %s pods would have no certificate while the rest of the job speaks TLS; give the %s role its Secret (a certificate with OU=%s)" .role .role .role .role) }}
{{- end }}
{{- $secret }}
{{- end }}

{{/* Whether the pserver checkpoints go to an object store (s3://): then no checkpoint volume. */}}
{{- define "paramserver.checkpointsInS3" -}}
{{- if hasPrefix "s3://" .Values.pserver.checkpointDir }}true{{ end }}
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
    - --out
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

{{/* Name of the Python trainer Job: <fullname>-trainer-python-<hash of its spec>. */}}
{{- define "paramserver.pythonTrainerJobName" -}}
{{- include "paramserver.hashedName" (dict "base" (printf "%s-trainer-python" (include "paramserver.fullname" .)) "spec" (include "paramserver.pythonTrainerJobSpec" .)) }}
{{- end }}

{{/* The Job whose end ends the job: the Java trainers', or with none (trainer.parallelism 0) the Python trainers'. */}}
{{- define "paramserver.endingJobName" -}}
{{- if gt (int .Values.trainer.parallelism) 0 }}{{ include "paramserver.trainerJobName" . }}{{ else }}{{ include "paramserver.pythonTrainerJobName" . }}{{ end }}
{{- end }}

{{/* Whether the trainers mount the chart's ReadWriteOnce model PVC (then they share one node). */}}
{{- define "paramserver.modelPvcRwo" -}}
{{- if and .Values.trainer.modelPersistence.enabled (not .Values.trainer.modelVolume) (not (has "ReadWriteMany" .Values.trainer.modelPersistence.accessModes)) }}true{{ end }}
{{- end }}

{{/*
Whether the job has ended: jobEnd.ended, else the outcome the job-end Job wrote into the annotation
paramserver.dev/job-end of the release's ConfigMap (found with `lookup`; nothing under `helm
template`). An ended job renders its workloads at 0 replicas and no trainer or job-end Job, so a
later `helm upgrade` neither brings the services back (Helm 3's three-way merge) nor fights the
job end's scale-down over spec.replicas (Helm 4's server-side apply).
*/}}
{{- define "paramserver.jobEnded" -}}
{{- if .Values.jobEnd.ended }}{{ .Values.jobEnd.ended }}
{{- else }}
{{- $cm := lookup "v1" "ConfigMap" .Release.Namespace (printf "%s-config" (include "paramserver.fullname" .)) }}
{{- if and $cm $cm.metadata $cm.metadata.annotations }}{{ index $cm.metadata.annotations "paramserver.dev/job-end" | default "" }}{{ end }}
{{- end }}
{{- end }}

{{/* Replicas of a service: its value, or 0 once the job ended. Call with (dict "ctx" $ "replicas" n). */}}
{{- define "paramserver.replicas" -}}
{{- if include "paramserver.jobEnded" .ctx }}0{{ else }}{{ .replicas }}{{ end }}
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
        # any image with sh and kubectl (1.28 or newer): kubectl reads the Job's conditions
        # (jsonpath), annotates the ConfigMap and scales
        image: {{ .Values.jobEnd.image }}
        imagePullPolicy: {{ .Values.jobEnd.pullPolicy }}
        command: ["/bin/sh", "-c"]
        args:
          - |
            set -u
            start=$(date +%s)
            seen=""
            echo "waiting for Job $TRAINER_JOB to end: complete or failed"
            while :; do
              # its name, then the conditions that hold (Complete or Failed once it ended); nothing
              # at all once it is gone (deleted, or removed by ttlSecondsAfterFinished: it ended)
              if state=$(kubectl get job "$TRAINER_JOB" --ignore-not-found -o jsonpath='{.metadata.name}{range .status.conditions[?(@.status=="True")]}{" "}{.type}{end}'); then
                case " $state " in
                  *" Complete "*) outcome=succeeded; break ;;
                  *" Failed "*) outcome=failed; break ;;
                  "  ")
                    [ -n "$seen" ] && { outcome=removed; break; }
                    [ $(($(date +%s) - start)) -ge "$MISSING_AFTER" ] && { outcome=missing; break; } ;;
                  *) seen=1 ;;
                esac
              else
                echo "cannot read Job $TRAINER_JOB; trying again"
              fi
              sleep "$PERIOD"
            done
            echo "the trainer Job ended: $outcome"
            # the mark a later helm upgrade reads (paramserver.jobEnded)
            kubectl annotate configmap {{ $fullname }}-config "paramserver.dev/job-end=$outcome" --overwrite || exit 1
            kubectl scale deployment/{{ $fullname }}-master statefulset/{{ $fullname }}-pserver --replicas=0 || exit 1
            {{- if not .Values.etcd.external.endpoints }}
            # etcd last: the pservers record their final checkpoint in it
            kubectl wait --for=jsonpath='{.status.replicas}'=0 statefulset/{{ $fullname }}-pserver --timeout={{ add .Values.pserver.terminationGracePeriodSeconds 60 }}s || exit 1
            kubectl scale statefulset/{{ include "paramserver.etcdName" . }} --replicas=0 || exit 1
            {{- end }}
        env:
          - name: TRAINER_JOB
            value: {{ include "paramserver.endingJobName" . }}
          - name: PERIOD
            value: {{ .Values.jobEnd.periodSeconds | quote }}
          - name: MISSING_AFTER
            value: {{ .Values.jobEnd.missingAfterSeconds | quote }}
          # kubectl keeps its discovery cache under $HOME (the root filesystem is read-only)
          - name: HOME
            value: /tmp
        securityContext:
          {{- toYaml .Values.securityContext | nindent 10 }}
        resources:
          {{- toYaml .Values.jobEnd.resources | nindent 10 }}
        volumeMounts:
          {{- include "paramserver.tmpMount" . | nindent 10 }}
    volumes:
      {{- include "paramserver.tmpVolume" . | nindent 6 }}
{{- end }}

{{/* Milliseconds of a Spring duration value: "90s", "5m", "1h", "2d", "500ms" or a bare number (ms). */}}
{{- define "paramserver.durationMillis" -}}
{{- $v := toString . | trim }}
{{- $n := regexFind "^[0-9]+" $v | default "0" | int64 }}
{{- $unit := trimPrefix (toString $n) $v }}
{{- if eq $unit "s" }}{{ mul $n 1000 }}
{{- else if eq $unit "m" }}{{ mul $n 60000 }}
{{- else if eq $unit "h" }}{{ mul $n 3600000 }}
{{- else if eq $unit "d" }}{{ mul $n 86400000 }}
{{- else if or (eq $unit "ms") (eq $unit "") }}{{ $n }}
{{- else }}{{ fail (printf "cannot read the duration %q: use a number with s, m, h, d or ms" $v) }}
{{- end }}
{{- end }}

{{/* Whole seconds of a Spring duration value (see paramserver.durationMillis). */}}
{{- define "paramserver.durationSeconds" -}}
{{- div (include "paramserver.durationMillis" . | int64) 1000 }}
{{- end }}
