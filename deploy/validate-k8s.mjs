// Validates rendered Kubernetes manifests (multi-document YAML, e.g. `helm template` output)
// against the Kubernetes schemas of the npm package kubernetes-models (plus the Prometheus
// Operator's CRDs from @kubernetes-models/prometheus-operator), and checks what those schemas do
// not: that workload selectors match their pod labels, that named probe/hook/Service ports exist,
// that volume mounts name a volume, that RoleBindings name a rendered Role, and that referenced
// ConfigMaps and Secrets are rendered or listed as external.
//
// JobSets (jobset.x-k8s.io/v1alpha2) and Kubeflow Trainer ClusterTrainingRuntimes
// (trainer.kubeflow.org/v1alpha1, whose template is a JobSet spec) are checked against the JobSet
// spec schema given with --jobset-schema (deploy/jobset/jobset-v1alpha2.schema.json, with ajv), each
// replicated job's template as a batch/v1 Job, and its pods by the same cross-object checks.
//
// Usage: node validate-k8s.mjs [--external-secret NAME]... [--jobset-schema FILE] FILE...
// Run from a directory whose node_modules holds kubernetes-models, @kubernetes-models/prometheus-operator,
// yaml and ajv (scripts/validate-deploy.sh installs them into a cache directory and runs it there).
// Exits 1 on the first file with any invalid object, listing every problem found.
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

const args = process.argv.slice(2);
const externalSecrets = new Set();
const files = [];
let jobsetSchemaFile = null;
for (let i = 0; i < args.length; i++) {
  if (args[i] === "--external-secret") externalSecrets.add(args[++i]);
  else if (args[i] === "--jobset-schema") jobsetSchemaFile = args[++i];
  else files.push(args[i]);
}
if (files.length === 0) {
  console.error("usage: node validate-k8s.mjs [--external-secret NAME]... FILE...");
  process.exit(2);
}

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

async function modelClass(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : [null, apiVersion];
  const candidates = [];
  if (group === "monitoring.coreos.com") {
    candidates.push(`@kubernetes-models/prometheus-operator/${group}/${version}/${kind}`);
  } else {
    candidates.push(`kubernetes-models/${group ? group + "/" : ""}${version}/${kind}`);
  }
  for (const path of candidates) {
    try {
      const mod = await import(path);
      if (mod[kind]) return mod[kind];
    } catch (e) {
      if (e.code !== "ERR_MODULE_NOT_FOUND" && e.code !== "ERR_PACKAGE_PATH_NOT_EXPORTED") throw e;
    }
  }
  return null;
}

function podSpecOf(obj) {
  switch (obj.kind) {
    case "Pod":
      return { spec: obj.spec, labels: obj.metadata?.labels ?? {} };
    case "Deployment":
    case "StatefulSet":
    case "DaemonSet":
    case "ReplicaSet":
    case "Job":
      return { spec: obj.spec?.template?.spec, labels: obj.spec?.template?.metadata?.labels ?? {} };
    case "CronJob":
      return {
        spec: obj.spec?.jobTemplate?.spec?.template?.spec,
        labels: obj.spec?.jobTemplate?.spec?.template?.metadata?.labels ?? {},
      };
    default:
      return null;
  }
}

function matches(selector, labels) {
  return Object.entries(selector ?? {}).every(([k, v]) => labels[k] === v);
}

// Labels a pod sets on itself at run time (the masters' leader-label sidecar): a Service may select
// them although no pod template carries them.
const RUNTIME_LABELS = new Set(["paramserver.dev/leader"]);
function withoutRuntimeLabels(selector) {
  return Object.fromEntries(Object.entries(selector ?? {}).filter(([k]) => !RUNTIME_LABELS.has(k)));
}

/** Cross-object checks the schemas cannot express. */
function semanticProblems(objects) {
  const problems = [];
  const names = (kind) => new Set(objects.filter((o) => o.kind === kind).map((o) => o.metadata.name));
  const configMaps = names("ConfigMap");
  const secrets = new Set([...names("Secret"), ...externalSecrets]);
  const pods = [];
  for (const o of objects) {
    const where = `${o.kind}/${o.metadata?.name}`;
    const name = o.metadata?.name ?? "";
    if (!DNS1123_SUBDOMAIN.test(name) || name.length > 253) problems.push(`${where}: invalid name`);
    if (o.kind === "Service" && (!DNS1123_LABEL.test(name) || name.length > 63)) {
      problems.push(`${where}: a Service name must be a DNS-1123 label of at most 63 characters`);
    }
    for (const [k, v] of Object.entries(o.metadata?.labels ?? {})) {
      if (String(v).length > 63) problems.push(`${where}: label ${k} longer than 63 characters`);
    }
    const pod = podSpecOf(o);
    if (!pod) continue;
    if (!pod.spec) {
      problems.push(`${where}: no pod template spec`);
      continue;
    }
    pods.push({ where, ...pod, kind: o.kind });
    const sel = o.spec?.selector?.matchLabels;
    if (["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"].includes(o.kind)) {
      if (!sel || !matches(sel, pod.labels)) {
        problems.push(`${where}: spec.selector.matchLabels does not match the pod template's labels`);
      }
    }
    const volumes = new Set((pod.spec.volumes ?? []).map((v) => v.name));
    for (const t of o.spec?.volumeClaimTemplates ?? []) volumes.add(t.metadata?.name);
    for (const v of pod.spec.volumes ?? []) {
      if (v.configMap && !configMaps.has(v.configMap.name)) {
        problems.push(`${where}: volume ${v.name} names ConfigMap ${v.configMap.name}, which is not rendered`);
      }
      if (v.secret && !secrets.has(v.secret.secretName)) {
        problems.push(`${where}: volume ${v.name} names Secret ${v.secret.secretName}, which is not rendered`);
      }
    }
    const containers = [...(pod.spec.initContainers ?? []), ...(pod.spec.containers ?? [])];
    for (const c of containers) {
      const portNames = new Set((c.ports ?? []).map((p) => p.name).filter(Boolean));
      for (const m of c.volumeMounts ?? []) {
        if (!volumes.has(m.name)) problems.push(`${where}: container ${c.name} mounts unknown volume ${m.name}`);
      }
      for (const probe of ["startupProbe", "livenessProbe", "readinessProbe"]) {
        const port = c[probe]?.httpGet?.port ?? c[probe]?.tcpSocket?.port;
        if (typeof port === "string" && !portNames.has(port)) {
          problems.push(`${where}: container ${c.name} ${probe} uses port "${port}", not declared`);
        }
      }
      for (const hook of ["postStart", "preStop"]) {
        const port = c.lifecycle?.[hook]?.httpGet?.port ?? c.lifecycle?.[hook]?.tcpSocket?.port;
        if (typeof port === "string" && !portNames.has(port)) {
          problems.push(`${where}: container ${c.name} ${hook} hook uses port "${port}", not declared`);
        }
      }
      for (const e of c.env ?? []) {
        const ref = e.valueFrom?.secretKeyRef?.name;
        if (ref && !secrets.has(ref)) problems.push(`${where}: env ${e.name} reads Secret ${ref}, not rendered`);
        const cm = e.valueFrom?.configMapKeyRef?.name;
        if (cm && !configMaps.has(cm)) problems.push(`${where}: env ${e.name} reads ConfigMap ${cm}, not rendered`);
      }
    }
  }
  for (const o of objects) {
    const where = `${o.kind}/${o.metadata?.name}`;
    if (o.kind === "Service" && o.spec?.selector) {
      const targets = pods.filter((p) => matches(withoutRuntimeLabels(o.spec.selector), p.labels));
      if (targets.length === 0) problems.push(`${where}: selector matches no rendered pod template`);
      for (const port of o.spec.ports ?? []) {
        if (typeof port.targetPort !== "string") continue;
        for (const t of targets) {
          const declared = (t.spec.containers ?? []).some((c) => (c.ports ?? []).some((p) => p.name === port.targetPort));
          if (!declared) problems.push(`${where}: targetPort "${port.targetPort}" not declared by ${t.where}`);
        }
      }
    }
    if (o.kind === "RoleBinding" && o.roleRef?.kind === "Role" && !names("Role").has(o.roleRef.name)) {
      problems.push(`${where}: roleRef names Role ${o.roleRef.name}, which is not rendered`);
    }
    if (o.kind === "StatefulSet" && !names("Service").has(o.spec?.serviceName)) {
      problems.push(`${where}: serviceName ${o.spec?.serviceName} is not a rendered Service`);
    }
    if (o.kind === "PodDisruptionBudget") {
      if (!pods.some((p) => matches(o.spec?.selector?.matchLabels, p.labels))) {
        problems.push(`${where}: selector matches no rendered pod template`);
      }
    }
  }
  return problems;
}

let validateJobSetSpecSchema = null;
async function jobSetSpecSchema() {
  if (!validateJobSetSpecSchema) {
    if (!jobsetSchemaFile) throw new Error("a JobSet needs --jobset-schema FILE");
    const { default: Ajv } = await import("ajv");
    const ajv = new Ajv({ allErrors: true, strict: false });
    validateJobSetSpecSchema = ajv.compile(JSON.parse(readFileSync(jobsetSchemaFile, "utf8")));
  }
  return validateJobSetSpecSchema;
}

/**
 * Problems of a JobSet spec (also a ClusterTrainingRuntime's template.spec); adds one batch/v1 Job
 * per replicated job to `jobs`, for the cross-object checks.
 */
async function jobSetSpecProblems(spec, where, ownerName, jobs) {
  const problems = [];
  const check = await jobSetSpecSchema();
  if (!check(spec)) {
    for (const e of check.errors) problems.push(`${where}: spec${e.instancePath} ${e.message}${e.params?.additionalProperty ? ` (${e.params.additionalProperty})` : ""}`);
  }
  const Job = await modelClass("batch/v1", "Job");
  const names = new Set();
  for (const rj of spec?.replicatedJobs ?? []) {
    if (names.has(rj.name)) problems.push(`${where}: replicated job ${rj.name} appears twice`);
    names.add(rj.name);
    const job = { apiVersion: "batch/v1", kind: "Job", metadata: { ...(rj.template?.metadata ?? {}), name: `${ownerName}-${rj.name}` }, spec: rj.template?.spec };
    try {
      new Job(job).validate();
      jobs.push(job);
    } catch (e) {
      problems.push(`${where}: replicated job ${rj.name}: ${e.message}`);
    }
    if (spec.network?.enableDNSHostnames !== false && rj.template?.spec?.completionMode !== "Indexed") {
      problems.push(`${where}: replicated job ${rj.name}: DNS hostnames need completionMode Indexed`);
    }
  }
  for (const [what, targets] of [
    ["successPolicy", spec?.successPolicy?.targetReplicatedJobs ?? []],
    ["failurePolicy", (spec?.failurePolicy?.rules ?? []).flatMap((r) => r.targetReplicatedJobs ?? [])],
    ["dependsOn", (spec?.replicatedJobs ?? []).flatMap((r) => (r.dependsOn ?? []).map((d) => d.name))],
  ]) {
    for (const t of targets) if (!names.has(t)) problems.push(`${where}: ${what} names replicated job ${t}, which does not exist`);
  }
  return problems;
}

let failed = false;
for (const file of files) {
  const docs = parseAllDocuments(readFileSync(file, "utf8"));
  const objects = [];
  const problems = [];
  for (const doc of docs) {
    if (doc.errors.length) {
      problems.push(`YAML error: ${doc.errors.map((e) => e.message).join("; ")}`);
      continue;
    }
    const obj = doc.toJS();
    if (obj == null) continue;
    if (!obj.apiVersion || !obj.kind) {
      problems.push(`document without apiVersion/kind: ${JSON.stringify(obj).slice(0, 120)}`);
      continue;
    }
    const where = `${obj.apiVersion} ${obj.kind}/${obj.metadata?.name}`;
    if (obj.apiVersion === "jobset.x-k8s.io/v1alpha2" && obj.kind === "JobSet") {
      const found = await jobSetSpecProblems(obj.spec, where, obj.metadata?.name, objects);
      if (!DNS1123_LABEL.test(obj.metadata?.name ?? "")) found.push(`${where}: a JobSet name must be a DNS-1123 label`);
      problems.push(...found);
      if (!found.length) console.log(`  valid ${where} (${obj.spec.replicatedJobs.length} replicated jobs)`);
      continue;
    }
    if (obj.apiVersion === "trainer.kubeflow.org/v1alpha1" && obj.kind === "ClusterTrainingRuntime") {
      const found = [];
      for (const k of Object.keys(obj.spec ?? {})) {
        if (!["mlPolicy", "podGroupPolicy", "template"].includes(k)) found.push(`${where}: unknown field spec.${k}`);
      }
      const n = obj.spec?.mlPolicy?.numNodes;
      if (n !== undefined && !(Number.isInteger(n) && n >= 1)) found.push(`${where}: spec.mlPolicy.numNodes must be an integer >= 1`);
      if (!obj.spec?.template?.spec) found.push(`${where}: spec.template.spec (a JobSet spec) is required`);
      else found.push(...(await jobSetSpecProblems(obj.spec.template.spec, where, obj.metadata?.name, objects)));
      if (!(obj.spec?.template?.spec?.replicatedJobs ?? []).some((r) => r.name === "node")) {
        found.push(`${where}: Kubeflow Trainer runs the TrainJob's nodes as the replicated job "node": none found`);
      }
      problems.push(...found);
      if (!found.length) console.log(`  valid ${where}`);
      continue;
    }
    const Cls = await modelClass(obj.apiVersion, obj.kind);
    if (!Cls) {
      problems.push(`${where}: unknown kind (no schema for ${obj.apiVersion} ${obj.kind})`);
      continue;
    }
    try {
      new Cls(obj).validate();
      objects.push(obj);
      console.log(`  valid ${where}`);
    } catch (e) {
      problems.push(`${where}: ${e.message}`);
    }
  }
  problems.push(...semanticProblems(objects));
  if (problems.length) {
    failed = true;
    console.error(`INVALID ${file}:`);
    for (const p of problems) console.error(`  - ${p}`);
  } else {
    console.log(`OK ${file}: ${objects.length} objects valid`);
  }
}
process.exit(failed ? 1 : 0);
