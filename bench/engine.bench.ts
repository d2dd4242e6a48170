import { admit, AdmissionInput } from '../engine/admit';
import { loadFixture } from '../fixtures/load';
import { JsonObject } from '../util/json';
import { RuleStore } from '../store/rules';
import { BenchRow, measure } from './types';

// A realistic mix: most rules target other kinds or other apps (fail on their first or second criterion),
// a few match the Deployment and patch it, one Reject rule checks every Deployment and lets it through.
function ruleSet(count: number): JsonObject[] {
  const rules: JsonObject[] = [];
  for (let i = 0; i < count; i++) {
    const name = `rule-${String(i).padStart(4, '0')}`;
    const meta = { name, namespace: i % 10 === 0 ? 'kubemod-system' : 'default' };
    const kind = i % 3 === 0 ? 'Service' : i % 3 === 1 ? 'StatefulSet' : 'Deployment';
    let spec: JsonObject;
    if (i % 50 === 7) {
      // matching Patch rule
      spec = {
        type: 'Patch',
        executionTier: i % 4,
        match: [
          { select: '$.kind', matchValue: 'Deployment' },
          { select: '$.spec.template.spec.containers[*].image', matchRegex: '^nginx:1\\.14\\.' },
        ],
        patch: [
          { op: 'add', path: `/metadata/labels/${name}`, value: 'applied' },
          {
            op: 'add',
            path: `/metadata/annotations/${name}`,
            value: '{{ .Target.metadata.name }}-{{ .Namespace }}',
          },
        ],
      };
    } else if (i % 50 === 13) {
      spec = {
        type: 'Reject',
        rejectMessage: 'no privileged containers in {{ .Namespace }}',
        match: [
          { select: '$.kind', matchValue: 'Deployment' },
          { select: '$.spec.template.spec.containers[*].securityContext.privileged == true' },
        ],
      };
    } else {
      spec = {
        type: 'Patch',
        match: [
          { select: '$.kind', matchValue: kind },
          { select: '$.metadata.labels.app', matchValue: `app-${i}` },
        ],
        patch: [{ op: 'add', path: '/metadata/labels/never', value: 'x' }],
      };
    }
    if (meta.namespace === 'kubemod-system') spec.targetNamespaceRegex = '^(default|prod-.*)$';
    rules.push({ apiVersion: 'api.kubemod.io/v1beta1', kind: 'ModRule', metadata: meta, spec });
  }
  return rules;
}

/** Rule evaluation throughput against the Deployment fixture, and store lookup cost. */
export async function run(): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  const deployment = loadFixture('deployment');
  for (const count of [10, 100, 1000]) {
    const store = new RuleStore();
    const rejected = store.replaceRules(ruleSet(count));
    if (rejected.length > 0) throw new Error(`bench rules rejected: ${JSON.stringify(rejected[0])}`);
    store.upsertNamespace(loadFixture('namespace'));
    const snapshot = store.snapshot();
    const input: AdmissionInput = {
      operation: 'CREATE',
      object: deployment,
      oldObject: null,
      namespace: 'default',
    };
    const sample = admit(input, snapshot);
    const considered = snapshot.rulesFor('default').length;
    const perSec = measure(() => admit(input, snapshot), 500);
    rows.push({
      suite: 'engine',
      case: `admit Deployment, ${count} rules`,
      opsPerSec: perSec,
      notes: `${considered} in scope, ${sample.matched.length} match, ${sample.patch.length} patch ops; ${Math.round(
        (perSec * considered) / 1000,
      ).toLocaleString('en-US')}k rule evaluations/s`,
    });
  }

  // 1000 namespaces with 5 rules each plus 20 cluster-wide rules: a lookup must not depend on the other namespaces.
  const store = new RuleStore();
  const many: JsonObject[] = [];
  for (let n = 0; n < 1000; n++) {
    for (let r = 0; r < 5; r++) {
      many.push({
        apiVersion: 'api.kubemod.io/v1beta1',
        kind: 'ModRule',
        metadata: { name: `r${r}`, namespace: `team-${n}` },
        spec: { type: 'Reject', executionTier: r, match: [{ select: '$.kind', matchValue: 'Nothing' }] },
      });
    }
  }
  for (let c = 0; c < 20; c++) {
    many.push({
      apiVersion: 'api.kubemod.io/v1beta1',
      kind: 'ModRule',
      metadata: { name: `wide-${c}`, namespace: 'kubemod-system' },
      spec: {
        type: 'Reject',
        targetNamespaceRegex: `^team-${c}\\d*$`,
        match: [{ select: '$.kind', matchValue: 'Nothing' }],
      },
    });
  }
  store.replaceRules(many);
  let i = 0;
  const warm = store.snapshot();
  rows.push({
    suite: 'engine',
    case: 'rulesFor, 1000 namespaces, memoized',
    opsPerSec: measure(() => warm.rulesFor(`team-${i++ % 1000}`)),
    notes: `${store.snapshot().ruleCount} rules`,
  });
  rows.push({
    suite: 'engine',
    case: 'rulesFor, 1000 namespaces, first lookup',
    opsPerSec: measure(() => {
      store.upsertNode({ metadata: { name: 'bench-node' } }); // any change: the next snapshot starts cold
      const fresh = store.snapshot();
      return fresh.rulesFor(`team-${i++ % 1000}`);
    }),
    notes: 'merge of own + 20 cluster-wide regexes, once per namespace per snapshot',
  });
  let t = 0;
  rows.push({
    suite: 'engine',
    case: 'upsertRule + snapshot, 5020 rules in store',
    opsPerSec: measure(() => {
      store.upsertRule({
        apiVersion: 'api.kubemod.io/v1beta1',
        kind: 'ModRule',
        metadata: { name: 'churn', namespace: `team-${t++ % 1000}` },
        spec: { type: 'Reject', match: [{ select: '$.kind', matchValue: 'Nothing' }] },
      });
      store.snapshot();
    }, 300),
    notes: 'copy-on-write: one namespace array and the namespace map',
  });
  rows.push(memoryRow());
  return rows;
}

// Heap held by compiled rules: what a replica pays per ModRule in the cluster (needs node --expose-gc).
function memoryRow(): BenchRow {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc)
    return {
      suite: 'engine',
      case: 'memory, 1000 compiled rules',
      opsPerSec: null,
      notes: 'run with --expose-gc',
    };
  const rules = ruleSet(1000);
  gc();
  const before = process.memoryUsage().heapUsed;
  const store = new RuleStore();
  store.replaceRules(rules);
  const snapshot = store.snapshot();
  gc();
  const bytes = process.memoryUsage().heapUsed - before;
  return {
    suite: 'engine',
    case: 'memory, 1000 compiled rules',
    opsPerSec: null,
    notes: `${(bytes / 1024 / 1024).toFixed(1)} MiB heap, ${(bytes / snapshot.ruleCount / 1024).toFixed(1)} KiB per rule`,
  };
}
