import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { execFileSync } from 'node:child_process';
import { parseAllDocuments } from 'yaml';
import { isJsonObject, JsonObject } from '../../util/json';

/*
 * What the differential test sends: every ModRule of examples/, and a corpus of realistic objects (the fixtures,
 * the examples' inputs, the admission reviews of examples/local, and a few objects the example rules look for).
 */

const ROOT = join(__dirname, '..', '..');

function yamlFiles(dir: string): string[] {
  return execFileSync('find', [join(ROOT, dir), '-name', '*.yaml', '-o', '-name', '*.json'], {
    encoding: 'utf8',
  })
    .trim()
    .split('\n')
    .filter(Boolean)
    .sort();
}

function documents(file: string): JsonObject[] {
  const text = readFileSync(file, 'utf8');
  return parseAllDocuments(text)
    .map((d) => d.toJSON() as unknown)
    .filter(isJsonObject)
    .flatMap((o) => (o.kind === 'List' && Array.isArray(o.items) ? o.items.filter(isJsonObject) : [o]));
}

/** Every ModRule in examples/, with the file it came from (rules without a namespace get "default"). */
export function exampleRules(): Array<{ file: string; rule: JsonObject }> {
  const out: Array<{ file: string; rule: JsonObject }> = [];
  for (const file of yamlFiles('examples')) {
    if (file.endsWith('.json')) continue;
    for (const doc of documents(file)) {
      if (doc.kind !== 'ModRule') continue;
      const meta = doc.metadata as JsonObject;
      meta.namespace ??= 'default';
      out.push({ file: relative(ROOT, file), rule: doc });
    }
  }
  return out;
}

const KINDS = new Set([
  'Deployment',
  'StatefulSet',
  'DaemonSet',
  // Every pod controller: spec.podControllers's variants act on them (examples/pod-controllers, examples/images).
  'ReplicaSet',
  'ReplicationController',
  'Job',
  'CronJob',
  'Pod',
  'Service',
  'ConfigMap',
  'PersistentVolumeClaim',
  'Namespace',
  'Node',
  'ServiceAccount',
]);

function key(o: JsonObject): string {
  const meta = o.metadata as JsonObject;
  return `${String(o.kind)}/${String(meta.name)}`;
}

/** The objects, deduplicated by kind and name (later ones renamed). */
export function corpus(): JsonObject[] {
  const found: JsonObject[] = [];
  const files = [...yamlFiles('fixtures'), ...yamlFiles('examples')];
  for (const file of files) {
    const rel = relative(ROOT, file);
    if (/modrule|expected|cluster\.yaml|rules|args/.test(rel) && !rel.includes('/reviews/')) continue;
    for (const doc of documents(file)) {
      const request = isJsonObject(doc.request) ? doc.request : undefined;
      const obj = request ? (isJsonObject(request.object) ? request.object : undefined) : doc;
      if (obj && KINDS.has(String(obj.kind)) && isJsonObject(obj.metadata)) found.push(obj);
    }
  }
  found.push(...extras());
  const seen = new Map<string, number>();
  return found.map((o) => {
    const k = key(o);
    const n = seen.get(k) ?? 0;
    seen.set(k, n + 1);
    if (n === 0) return o;
    return {
      ...o,
      metadata: { ...(o.metadata as JsonObject), name: `${String((o.metadata as JsonObject).name)}-${n}` },
    };
  });
}

/** Objects that make the example rules' other branches run. */
function extras(): JsonObject[] {
  const container = (name: string, image: string, more: JsonObject = {}) => ({ name, image, ...more });
  const deployment = (name: string, labels: JsonObject, podSpec: JsonObject): JsonObject => ({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, labels },
    spec: {
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: podSpec },
    },
  });
  return [
    deployment(
      'batch-job',
      { tier: 'batch', team: 'data' },
      {
        containers: [container('main', 'busybox:1.36', { resources: { limits: { memory: '1Gi' } } })],
      },
    ),
    deployment('batch-nolimit', { tier: 'batch' }, { containers: [container('main', 'busybox:1.36')] }),
    deployment(
      'latest',
      { app: 'latest' },
      {
        securityContext: { runAsNonRoot: true },
        containers: [
          container('web', 'docker.io/nginx:latest'),
          container('side', 'registry.k8s.io/pause:3.9'),
        ],
      },
    ),
    // KubeMod's sidecar example, as a Deployment written without kubectl (the policy's own objects): the annotation
    // as the README's rule spells it ('"true"', quotes included) and as the unquoted variant does.
    {
      ...deployment(
        'inject-quoted',
        { app: 'inject-quoted' },
        { containers: [container('web', 'nginx:1.14.2')] },
      ),
      metadata: { name: 'inject-quoted', annotations: { 'my-inject-annotation': '"true"' } },
    },
    {
      ...deployment('inject', { app: 'inject' }, { containers: [container('web', 'nginx:1.14.2')] }),
      metadata: {
        name: 'inject',
        labels: { app: 'inject' },
        annotations: { 'my-inject-annotation': 'true' },
      },
    },
    deployment(
      'nonroot',
      { app: 'nonroot' },
      {
        securityContext: { runAsNonRoot: true },
        containers: [container('web', 'nginx:1.14.2', { securityContext: { runAsUser: 1000 } })],
      },
    ),
    {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'db', labels: { app: 'db' } },
      spec: {
        serviceName: 'db',
        selector: { matchLabels: { app: 'db' } },
        template: {
          metadata: { labels: { app: 'db' } },
          spec: {
            containers: [container('db', 'postgres:16'), container('exporter', 'docker.io/exporter:1')],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'public', labels: { app: 'public' } },
      spec: { type: 'LoadBalancer', selector: { app: 'public' }, ports: [{ port: 80 }] },
    },
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'settings', labels: { app: 'settings' }, annotations: { note: 'x' } },
      data: { 'a.conf': 'x=1' },
    },
    {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'plain-claim' },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    },
    {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'owned-ns', labels: { owner: 'team-a' } },
    },
  ];
}
