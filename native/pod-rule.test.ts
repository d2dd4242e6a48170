import { JsonObject } from '../util/json';
import { loadFixture, loadWorkloads } from '../fixtures/load';
import { analyzeModRule, CompiledRule } from '../rule/compile';
import { compileNative, residualRule } from '.';

function rule(spec: JsonObject): CompiledRule {
  const { rule: compiled, problems } = analyzeModRule({
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name: 'team-label', namespace: 'apps' },
    spec,
  });
  if (!compiled) throw new Error(JSON.stringify(problems));
  return compiled;
}

const LABEL_RULE: JsonObject = {
  type: 'Patch',
  podControllers: ['*'],
  match: [
    { select: '$.kind', matchValue: 'Pod' },
    { select: '$.metadata.labels.app', matchRegex: '.' },
  ],
  patch: [{ op: 'add', path: '/metadata/labels/team', value: '{{ .Target.metadata.labels.app }}-team' }],
};

describe('a Pod rule with controller variants as one native policy', () => {
  const compiled = rule(LABEL_RULE);
  const fit = compileNative(compiled);

  it('fits, and one policy sees the pods and every controller', () => {
    expect(fit.fits).toBe(true);
    if (!fit.fits) return;
    const spec = fit.policy.spec as JsonObject;
    expect((fit.policy.metadata as JsonObject).name).toBe('modrule.apps.team-label');
    const conditions = (spec.matchConditions as JsonObject[]).map((c) => String(c.expression));
    // Each condition chooses by apiVersion and kind: a Deployment's labels are its template's.
    const labels =
      (spec.matchConditions as JsonObject[])
        .filter((c) => String(c.name).startsWith('match-'))
        .map((c) => String(c.expression))
        .find((c) => c.includes('"app"')) ?? '';
    expect(labels).toContain('object[?"apiVersion"].orValue("") == "apps/v1"');
    expect(labels).toContain('object[?"kind"].orValue("") == "CronJob"');
    expect(labels).toContain('[?"jobTemplate"]');
    const patch = String(((spec.mutations as JsonObject[])[0].jsonPatch as JsonObject).expression);
    expect(patch).toContain('/spec/template/metadata/labels/team');
    expect(patch).toContain('/spec/jobTemplate/spec/template/metadata/labels/team');
    expect(patch).toContain('/metadata/labels/team');
    // Templates read the pod the controller's template describes.
    expect(patch).toContain('object[?"spec"][?"template"][?"metadata"][?"labels"][?"app"]');
    expect(patch).toContain(
      'object[?"spec"][?"jobTemplate"][?"spec"][?"template"][?"metadata"][?"labels"][?"app"]',
    );
    // The marker on a patched template, and the Pod rule's skip of marked pods.
    expect(patch).toContain('podtemplate.modrule.io~1apps.team-label');
    expect(conditions.join(' ')).toContain('podtemplate.modrule.io/apps.team-label');
  });

  it("keeps each member's guards to its own objects, and the residual rule covers the variants", () => {
    if (!fit.fits) throw new Error('does not fit');
    const deployment = loadFixture('deployment'); // carries last-applied-configuration: the webhook keeps it
    const { CronJob: cronjob } = loadWorkloads();
    const pod = loadFixture('pod');
    expect(fit.guards.holds(deployment)).toBe(false);
    expect(fit.guards.holds(cronjob)).toBe(true);
    expect(fit.guards.holds(pod)).toBe(true);
    expect(fit.guards.list.some((g) => g.what.startsWith('Deployment: '))).toBe(true);
    const residual = residualRule(compiled, fit.guards) as CompiledRule;
    expect(residual.variants?.map((v) => v.podController?.kind)).toEqual(
      compiled.variants?.map((v) => v.podController?.kind),
    );
    expect(residual.variants?.map((v) => v.match.length)).toEqual(
      compiled.variants?.map((v) => v.match.length + 1),
    );
  });

  it('stays on the webhook, naming the variant, when one member does not fit', () => {
    const misfit = compileNative(
      rule({
        ...LABEL_RULE,
        patch: [{ op: 'add', path: '/metadata/labels/team', value: '{{ .Target.kind }}' }],
      }),
    );
    expect(misfit.fits).toBe(false);
    if (misfit.fits) return;
    expect(misfit.reasons.map((r) => `${r.field}: ${r.message}`)).toContainEqual(
      expect.stringMatching(
        /^spec\.patch\[0\]: apps\/team-label \(Deployment\): .*\.Target\.kind of the pod a template describes/,
      ),
    );
  });

  it("names the rule's own fields in a variant's reasons, not the variant's shifted ones", () => {
    const misfit = compileNative(
      rule({
        ...LABEL_RULE,
        podControllers: ['Deployment', 'CronJob'],
        patch: [{ op: 'add', path: '/metadata/labels/team', value: '{{ .Target.kind }}' }],
      }),
    );
    if (misfit.fits) throw new Error('fits');
    expect(misfit.reasons.map((r) => `${r.field}: ${r.message.split(':')[0]}`)).toEqual([
      'spec.patch[0]: apps/team-label (Deployment)',
      'spec.patch[0]: apps/team-label (CronJob)',
    ]);
  });

  it("gives the Pod rule's reason once, not again for each variant where the rule itself does not fit", () => {
    const misfit = compileNative(
      rule({
        type: 'Reject',
        podControllers: ['Deployment', 'CronJob'],
        match: [
          { select: '$.kind', matchValue: 'Pod' },
          { select: '$.spec["initContainers","containers"][? imageTag(@.image) == "latest"]' },
        ],
      }),
    );
    if (misfit.fits) throw new Error('fits');
    expect([...new Set(misfit.reasons.map((r) => r.field))]).toEqual(['spec.match[1]']);
    expect(misfit.reasons.map((r) => r.message.split(':')[0])).toEqual([
      '$.spec["initContainers","containers"][? imageTag(@.image) == "latest"]',
    ]);
  });
});
