import { loadFixture } from '../fixtures/load';
import { JsonObject, JsonValue, cloneJson } from '../util/json';
import { applyKubeModOperation, createPatch, parsePointer } from '../patch';
import { BenchRow, measure } from './types';

type Containers = { template: { spec: { containers: JsonObject[] } } };

/** createPatch on realistic before/after Deployments, and KubeMod-style in-place operations. */
export async function run(): Promise<BenchRow[]> {
  const from = loadFixture('deployment');

  const small = cloneJson(from);
  (small.metadata as { labels: JsonObject }).labels['topology.kubernetes.io/region'] = 'eu-west-1';

  // A large change: every container rewritten, a sidecar added, metadata churned.
  const large = cloneJson(from);
  const meta = large.metadata as JsonObject;
  meta.annotations = { 'sidecar.istio.io/inject': 'true', 'prometheus.io/scrape': 'true' };
  delete meta.managedFields;
  const spec = large.spec as JsonObject & Containers;
  for (const c of spec.template.spec.containers) {
    c.image = `my-repo/${String(c.image)}`;
    c.env = Array.from({ length: 10 }, (_, i) => ({ name: `VAR_${i}`, value: String(i) }));
    c.securityContext = { runAsNonRoot: true, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } };
  }
  spec.template.spec.containers.unshift({ name: 'jaeger-agent', image: 'jaegertracing/jaeger-agent:1.28' });
  spec.replicas = 5;

  const smallOps = createPatch(from, small).length;
  const largeOps = createPatch(from, large).length;

  const annotation = parsePointer('/metadata/annotations/sidecar.istio.io~1inject');
  const sidecar: JsonValue = { name: 'jaeger-agent', image: 'jaegertracing/jaeger-agent:1.28' };
  const append = parsePointer('/spec/template/spec/containers/-1');
  const remove = parsePointer('/spec/template/spec/containers/-1');
  const doc = loadFixture('deployment');

  return [
    {
      suite: 'patch',
      case: 'createPatch Deployment, small change',
      opsPerSec: measure(() => createPatch(from, small)),
      notes: `${smallOps} op(s)`,
    },
    {
      suite: 'patch',
      case: 'createPatch Deployment, large change',
      opsPerSec: measure(() => createPatch(from, large)),
      notes: `${largeOps} ops`,
    },
    {
      suite: 'patch',
      case: 'applyKubeModOperation add annotation',
      // Re-adding the same key overwrites it, so the document stays the same size across iterations.
      opsPerSec: measure(() => applyKubeModOperation(doc, 'add', annotation, 'true')),
    },
    {
      suite: 'patch',
      case: 'applyKubeModOperation add+remove sidecar',
      opsPerSec: measure(() => {
        applyKubeModOperation(doc, 'add', append, sidecar);
        applyKubeModOperation(doc, 'remove', remove);
      }),
      notes: 'two operations per iteration',
    },
  ];
}
