{{/*
The application.properties of each role. Each role's pods carry a checksum of their own file only
(checksum/config), so a change of one role's settings restarts that role alone; the trainer Job's
name hashes its spec, so a pserver-only change keeps the running trainers.
*/}}

{{/* Properties every service shares (paramserver.* of service-support's CommonProperties). */}}
{{- define "paramserver.commonProperties" -}}
paramserver.job={{ .Values.jobName }}
paramserver.etcd.endpoints={{ include "paramserver.etcdEndpoints" . }}
paramserver.etcd.call-timeout={{ .Values.etcd.callTimeout }}
paramserver.etcd.lease-ttl={{ .Values.etcd.leaseTtl }}
paramserver.etcd.startup-timeout={{ .Values.etcd.startupTimeout }}
{{- with include "paramserver.etcdUser" . }}
paramserver.etcd.user={{ . }}
{{- end }}
{{- if include "paramserver.tlsOn" . }}
# gRPC clients (trainers; masters calling pservers; serving replicas) trust the CA of the TLS Secret
paramserver.grpc-client.tls.enabled=true
paramserver.grpc-client.tls.trust-cert-collection={{ include "paramserver.tlsFile" (dict "ctx" . "key" .Values.tls.caKey) }}
{{- if .Values.tls.mutual }}
paramserver.grpc-client.tls.certificate-chain={{ include "paramserver.tlsFile" (dict "ctx" . "key" .Values.tls.certKey) }}
paramserver.grpc-client.tls.private-key={{ include "paramserver.tlsFile" (dict "ctx" . "key" .Values.tls.keyKey) }}
{{- end }}
{{- with .Values.tls.authorityOverride }}
paramserver.grpc-client.tls.authority-override={{ . }}
{{- end }}
{{- end }}
{{- range $k, $v := .Values.extraProperties }}
{{ $k }}={{ $v }}
{{- end }}
{{- end }}

{{/* TLS of a gRPC server (Spring Boot's spring.grpc.server.ssl.*, a PEM SSL bundle), from the role's TLS Secret. */}}
{{- define "paramserver.grpcServerTls" -}}
{{- if include "paramserver.tlsOn" . }}
spring.ssl.bundle.pem.grpc-server.keystore.certificate=file:{{ include "paramserver.tlsFile" (dict "ctx" . "key" .Values.tls.certKey) }}
spring.ssl.bundle.pem.grpc-server.keystore.private-key=file:{{ include "paramserver.tlsFile" (dict "ctx" . "key" .Values.tls.keyKey) }}
{{- if .Values.tls.mutual }}
spring.ssl.bundle.pem.grpc-server.truststore.certificate=file:{{ include "paramserver.tlsFile" (dict "ctx" . "key" .Values.tls.caKey) }}
spring.grpc.server.ssl.client-auth=REQUIRE
{{- end }}
spring.grpc.server.ssl.bundle=grpc-server
spring.grpc.server.ssl.enabled=true
{{- end }}
{{- end }}

{{- define "paramserver.masterProperties" -}}
server.port={{ .Values.master.httpPort }}
spring.grpc.server.port={{ .Values.master.grpcPort }}
{{- with include "paramserver.grpcServerTls" . | trim }}
{{ . }}
{{- end }}
{{ include "paramserver.commonProperties" . }}
paramserver.master.passes={{ .Values.master.passes }}
paramserver.master.chunks-per-task={{ .Values.master.chunksPerTask }}
paramserver.master.task-timeout={{ .Values.master.taskTimeout }}
paramserver.master.max-failures={{ .Values.master.maxFailures }}
{{- if .Values.master.tracking.enabled }}
# run tracking (metrics.jsonl, params.json, TensorBoard events), on the writable tracking volume
paramserver.master.tracking.dir={{ .Values.master.tracking.mountPath }}
paramserver.master.tracking.metrics-file={{ .Values.master.tracking.mountPath }}/metrics.jsonl
{{- if .Values.master.tracking.tensorboard }}
paramserver.master.tracking.tensorboard-dir={{ .Values.master.tracking.mountPath }}/tensorboard
{{- end }}
{{- else }}
paramserver.master.tracking.enabled=false
{{- end }}
# Ready = alive and connected to etcd, standby or leader, so rollouts and `helm --wait` finish;
# leadership is its own group, /actuator/health/leader, read by the leader-label sidecar
management.endpoint.health.group.readiness.include=readinessState,etcd
management.endpoint.health.group.leader.include=leadership
{{- range $k, $v := .Values.master.extraProperties }}
paramserver.master.{{ $k }}={{ $v }}
{{- end }}
{{- end }}

{{- define "paramserver.pserverProperties" -}}
server.port={{ .Values.pserver.httpPort }}
spring.grpc.server.port={{ .Values.pserver.grpcPort }}
{{- with include "paramserver.grpcServerTls" . | trim }}
{{ . }}
{{- end }}
{{ include "paramserver.commonProperties" . }}
paramserver.pserver.desired={{ .Values.pserver.replicas }}
paramserver.pserver.checkpoint-dir={{ .Values.pserver.checkpointDir }}
paramserver.pserver.checkpoint-interval={{ .Values.pserver.checkpointInterval }}
{{- if .Values.pserver.elastic.enabled }}
# elastic (docs/deploy.md, "Scaling pservers on Kubernetes"): the StatefulSet's replicas are the
# job's pservers; the preStop hook waits for the moves, leaving the drain its own grace period
paramserver.pserver.kubernetes.grow-job=true
paramserver.pserver.kubernetes.stateful-set={{ include "paramserver.fullname" . }}-pserver
paramserver.pserver.kubernetes.pre-stop-timeout={{ include "paramserver.pserverPreStopSeconds" . }}s
{{- end }}
{{- range $k, $v := .Values.pserver.extraProperties }}
paramserver.pserver.{{ $k }}={{ $v }}
{{- end }}
{{- end }}

{{- define "paramserver.servingProperties" -}}
server.port={{ .Values.serving.httpPort }}
spring.grpc.server.port={{ .Values.serving.grpcPort }}
{{- with include "paramserver.grpcServerTls" . | trim }}
{{ . }}
{{- end }}
{{ include "paramserver.commonProperties" . }}
paramserver.serving.max-ids={{ .Values.serving.maxIds }}
paramserver.serving.min-version-wait={{ .Values.serving.minVersionWait }}
paramserver.serving.shards-timeout={{ .Values.serving.shardsTimeout }}
# Ready = serving a version, without etcd: once the job ended (jobEnd scales etcd and the pservers
# to 0) a replica keeps answering with the last version it holds
management.endpoint.health.group.readiness.include=readinessState,served
{{- range $k, $v := .Values.serving.extraProperties }}
paramserver.serving.{{ $k }}={{ $v }}
{{- end }}
{{- end }}

{{- define "paramserver.trainerProperties" -}}
server.port={{ .Values.trainer.httpPort }}
{{ include "paramserver.commonProperties" . }}
paramserver.trainer.train-data={{ .Values.trainer.trainData }}
paramserver.trainer.test-data={{ .Values.trainer.testData }}
paramserver.trainer.model={{ .Values.trainer.model }}
paramserver.trainer.optimizer={{ .Values.trainer.optimizer }}
paramserver.trainer.learning-rate={{ .Values.trainer.learningRate }}
paramserver.trainer.batch-size={{ .Values.trainer.batchSize }}
paramserver.trainer.sync={{ .Values.trainer.sync }}
{{- with .Values.trainer.mode }}
paramserver.trainer.mode={{ . }}
{{- end }}
{{- with .Values.trainer.activation }}
paramserver.trainer.activation={{ . }}
{{- end }}
paramserver.trainer.exit-when-done=true
{{- if .Values.trainer.modelOutput }}
paramserver.trainer.model-output={{ .Values.trainer.modelOutput }}
{{- end }}
{{- range $k, $v := .Values.trainer.extraProperties }}
paramserver.trainer.{{ $k }}={{ $v }}
{{- end }}
{{- end }}

{{/* Path of a key of the TLS Secret, mounted at tls.mountPath. Call with (dict "ctx" $ "key" k). */}}
{{- define "paramserver.tlsFile" -}}
{{- printf "%s/%s" (trimSuffix "/" .ctx.Values.tls.mountPath) .key }}
{{- end }}

{{/*
Checks the services would make at start, made at render time: the etcd durations within the
bounds of CommonProperties.Etcd (@DurationMin/@DurationMax), a trainer mode that agrees with sync.
*/}}
{{- define "paramserver.validate" -}}
{{- $bounds := list
    (list "etcd.callTimeout" "call-timeout" .Values.etcd.callTimeout 100 300000)
    (list "etcd.leaseTtl" "lease-ttl" .Values.etcd.leaseTtl 2000 600000)
    (list "etcd.startupTimeout" "startup-timeout" .Values.etcd.startupTimeout 0 1800000) }}
{{- range $bounds }}
{{- $ms := include "paramserver.durationMillis" (index . 2) | int64 }}
{{- if or (lt $ms (index . 3 | int64)) (gt $ms (index . 4 | int64)) }}
{{- fail (printf "%s=%v is out of bounds: paramserver.etcd.%s takes %dms to %dms" (index . 0) (index . 2) (index . 1) (index . 3) (index . 4)) }}
{{- end }}
{{- end }}
{{- if and .Values.trainer.sync (eq (toString .Values.trainer.mode) "bounded-staleness") }}
{{- fail "trainer.sync=true contradicts trainer.mode=bounded-staleness: set only trainer.mode" }}
{{- end }}
{{- end }}

{{/*
Seconds the elastic pservers' preStop hook may wait for the moves: the elastic grace period minus
the pserver's own (left for the drain and the final checkpoint after SIGTERM).
*/}}
{{- define "paramserver.pserverPreStopSeconds" -}}
{{- $wait := sub (int .Values.pserver.elastic.terminationGracePeriodSeconds) (int .Values.pserver.terminationGracePeriodSeconds) }}
{{- if le (int $wait) 0 }}
{{- fail (printf "pserver.elastic.terminationGracePeriodSeconds (%d) must exceed pserver.terminationGracePeriodSeconds (%d): the difference is the preStop hook's wait for the moves" (int .Values.pserver.elastic.terminationGracePeriodSeconds) (int .Values.pserver.terminationGracePeriodSeconds)) }}
{{- end }}
{{- $wait }}
{{- end }}

{{/*
What the pserver pods' checksum/config hashes: their properties, without the pserver count when
elastic (a change of pserver.replicas scales the running job; restarting every pserver for it
would only disturb the job, and the count in etcd wins over the file anyway).
*/}}
{{- define "paramserver.pserverPropertiesChecksum" -}}
{{- $p := include "paramserver.pserverProperties" . }}
{{- if .Values.pserver.elastic.enabled }}
{{- $p = regexReplaceAll "(?m)^paramserver[.]pserver[.]desired=.*$" $p "" }}
{{- end }}
{{- $p | sha256sum }}
{{- end }}
