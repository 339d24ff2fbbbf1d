// Validates Kubernetes manifests (kubectl kustomize's output, one or more YAML streams named on the
// command line, "-" for stdin) against the Kubernetes API schemas that npm's kubernetes-models
// carries (generated from the API's OpenAPI document) and the prometheus-operator CRDs' schemas.
// On top of the schemas, which accept fields they do not know, the references between objects are
// checked: every ConfigMap and claim a Deployment names is rendered, Service and PDB selectors match
// its pods, the HPA's target is rendered and, when the Prometheus adapter's configuration is among
// the files, each pods metric it scales on is served by one of its rules; every container has
// readiness and liveness probes. Exit 0 when all pass, 1 with one line per problem.
//
//   node validate_manifests.mjs rendered.yaml [more.yaml...]

import { readFileSync } from "node:fs";
import { parse, parseAllDocuments } from "yaml";
import * as core from "kubernetes-models/v1";
import * as apps from "kubernetes-models/apps/v1";
import * as policy from "kubernetes-models/policy/v1";
import * as autoscaling from "kubernetes-models/autoscaling/v2";
import * as monitoring from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1";

const models = {
  "v1/ConfigMap": core.ConfigMap,
  "v1/Service": core.Service,
  "v1/PersistentVolumeClaim": core.PersistentVolumeClaim,
  "v1/Secret": core.Secret,
  "apps/v1/Deployment": apps.Deployment,
  "policy/v1/PodDisruptionBudget": policy.PodDisruptionBudget,
  "autoscaling/v2/HorizontalPodAutoscaler": autoscaling.HorizontalPodAutoscaler,
  "monitoring.coreos.com/v1/ServiceMonitor": monitoring.ServiceMonitor,
};

const problems = [];
const objects = [];
for (const file of process.argv.slice(2)) {
  const text = readFileSync(file === "-" ? 0 : file, "utf8");
  for (const document of parseAllDocuments(text)) {
    if (document.errors.length) {
      problems.push(`${file}: YAML: ${document.errors.map((e) => e.message).join("; ")}`);
      continue;
    }
    const object = document.toJS();
    if (object !== null) objects.push({ file, object });
  }
}

for (const { file, object } of objects) {
  const key = `${object.apiVersion}/${object.kind}`;
  const where = `${file}: ${key} ${object.metadata?.name ?? "(no name)"}`;
  const Model = models[key];
  if (!Model) {
    problems.push(`${where}: no schema for this apiVersion and kind here (a typo, or add it to validate_manifests.mjs)`);
    continue;
  }
  try {
    new Model(object).validate();
  } catch (error) {
    problems.push(`${where}: ${error.message}`);
  }
}

const named = (kind) => new Map(objects.filter(({ object }) => object.kind === kind).map(({ object }) => [object.metadata.name, object]));
const configMaps = named("ConfigMap");
const claims = named("PersistentVolumeClaim");
const deployments = named("Deployment");
const matches = (selector, labels) => Object.entries(selector ?? {}).every(([k, v]) => labels?.[k] === v);

for (const [name, deployment] of deployments) {
  const pod = deployment.spec.template;
  if (!matches(deployment.spec.selector?.matchLabels, pod.metadata?.labels))
    problems.push(`Deployment ${name}: its selector does not match its pod labels`);
  for (const container of pod.spec.containers) {
    for (const probe of ["readinessProbe", "livenessProbe"])
      if (!container[probe]) problems.push(`Deployment ${name}: container ${container.name} has no ${probe}`);
    for (const source of container.envFrom ?? [])
      if (source.configMapRef && !configMaps.has(source.configMapRef.name))
        problems.push(`Deployment ${name}: envFrom names ConfigMap ${source.configMapRef.name}, which is not rendered`);
    const mounted = new Set((container.volumeMounts ?? []).map((m) => m.name));
    for (const volume of pod.spec.volumes ?? [])
      if (!mounted.has(volume.name)) problems.push(`Deployment ${name}: volume ${volume.name} is mounted nowhere`);
  }
  for (const volume of pod.spec.volumes ?? [])
    if (volume.persistentVolumeClaim && !claims.has(volume.persistentVolumeClaim.claimName))
      problems.push(`Deployment ${name}: claim ${volume.persistentVolumeClaim.claimName} is not rendered`);
}
for (const { object } of objects) {
  const podsOf = (selector) => [...deployments.values()].filter((d) => matches(selector, d.spec.template.metadata.labels));
  if (object.kind === "Service" && podsOf(object.spec.selector).length === 0)
    problems.push(`Service ${object.metadata.name}: its selector matches no Deployment's pods`);
  if (object.kind === "PodDisruptionBudget" && podsOf(object.spec.selector?.matchLabels).length === 0)
    problems.push(`PodDisruptionBudget ${object.metadata.name}: its selector matches no Deployment's pods`);
  if (object.kind === "HorizontalPodAutoscaler" && !deployments.has(object.spec.scaleTargetRef.name))
    problems.push(`HorizontalPodAutoscaler ${object.metadata.name}: its target ${object.spec.scaleTargetRef.name} is not rendered`);
}

// The Prometheus adapter's rules (a ConfigMap holding its config.yaml): each complete, and every pods
// metric an HPA scales on served by one of them.
const servedMetrics = new Set();
for (const [name, configMap] of configMaps) {
  if (!configMap.data?.["config.yaml"]) continue;
  for (const rule of parse(configMap.data["config.yaml"]).rules ?? []) {
    for (const field of ["seriesQuery", "resources", "metricsQuery"])
      if (!rule[field]) problems.push(`ConfigMap ${name}: an adapter rule without ${field}`);
    if (rule.name?.as) servedMetrics.add(rule.name.as);
  }
}
const adapterRendered = [...configMaps.values()].some((c) => c.data?.["config.yaml"]);
for (const { object } of objects)
  if (object.kind === "HorizontalPodAutoscaler" && adapterRendered)
    for (const metric of object.spec.metrics ?? [])
      if (metric.type === "Pods" && !servedMetrics.has(metric.pods.metric.name))
        problems.push(`HorizontalPodAutoscaler ${object.metadata.name}: no adapter rule serves ${metric.pods.metric.name}`);

if (objects.length === 0) problems.push("no objects to validate");
for (const problem of problems) console.error(problem);
if (problems.length) process.exit(1);
const kinds = objects.map(({ object }) => object.kind).sort().join(", ");
console.log(`${objects.length} objects valid against the Kubernetes API schemas: ${kinds}`);
