import { loadFixture } from '../fixtures/load';
import { JsonObject } from '../util/json';
import { compileTemplate } from '../template';
import { BenchRow, measure } from './types';

// Three templates typical of ModRules: a field lookup, a Sprig regex rewrite, and a reject message with control flow.
const TEMPLATES: Array<[string, string]> = [
  ['field', '{{ .Target.metadata.name }}'],
  ['regexReplaceAll', '{{ regexReplaceAll "(.+)/(.*)" .SelectedItem.image "my-repo/${2}" }}'],
  [
    'reject message',
    'Deployment {{ .Namespace }}/{{ .Target.metadata.name }} uses images {{ range $i, $c := .Target.spec.template.spec.containers }}{{ if $i }}, {{ end }}{{ $c.image | quote }}{{ end }} - {{ printf "%d containers" (len .Target.spec.template.spec.containers) }}',
  ],
];

/** Compile and render throughput of typical ModRule templates. */
export async function run(): Promise<BenchRow[]> {
  const target = loadFixture('deployment');
  const containers = (((target.spec as JsonObject).template as JsonObject).spec as JsonObject)
    .containers as JsonObject[];
  const data = { Target: target, Namespace: 'default', SelectedItem: containers[1], SelectKeyParts: [1] };
  const rows: BenchRow[] = [];
  for (const [name, src] of TEMPLATES) {
    const compileOps = measure(() => compileTemplate(src));
    const t = compileTemplate(src);
    const renderOps = measure(() => t.render(data));
    rows.push({
      suite: 'template',
      case: `compile ${name}`,
      opsPerSec: compileOps,
      notes: `${(1e6 / compileOps).toFixed(2)} µs/op`,
    });
    rows.push({
      suite: 'template',
      case: `render ${name}`,
      opsPerSec: renderOps,
      notes: `${(1e6 / renderOps).toFixed(2)} µs/op`,
    });
  }
  return rows;
}
