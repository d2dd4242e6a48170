import { loadFixture } from '../fixtures/load';
import { compileJsonPath } from '../jsonpath';
import { BenchRow, measure } from './types';

// Typical selects from KubeMod rules, evaluated on the realistic Deployment fixture.
const SELECTS = [
  '$.kind',
  '$.metadata.labels.app',
  '$.metadata.labels["app.kubernetes.io/component"]',
  '$.spec.template.spec.containers[*].image',
  '$.spec.template.spec.containers[? @.image =~ "nginx"].ports[? @.containerPort == 80]',
  'length($.spec.template.spec.containers) > 1',
  '$.spec.template.spec.containers[? isDefined(@.securityContext) && isEmpty(@.securityContext)]',
  '$..image',
];

const nsPerOp = (opsPerSec: number) => `${(1e9 / opsPerSec).toFixed(1)} ns/op`;

/** Evaluations per second per select, and compile (parse + closure build) throughput. */
export async function run(): Promise<BenchRow[]> {
  const deployment = loadFixture('deployment');
  const rows: BenchRow[] = [];
  let sink = 0;
  for (const source of SELECTS) {
    const compiled = compileJsonPath(source);
    const results = compiled.select(deployment).length;
    const ops = measure(() => {
      sink += compiled.select(deployment).length;
    });
    rows.push({
      suite: 'jsonpath',
      case: `select ${source}`,
      opsPerSec: ops,
      notes: `${nsPerOp(ops)}, ${results} result(s)`,
    });
  }
  for (const source of [SELECTS[0], SELECTS[4]]) {
    const ops = measure(() => {
      sink += compileJsonPath(source).source.length;
    });
    rows.push({ suite: 'jsonpath', case: `compile ${source}`, opsPerSec: ops, notes: nsPerOp(ops) });
  }
  if (sink < 0) throw new Error('unreachable: keeps the work observable');
  return rows;
}
