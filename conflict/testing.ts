import { JsonObject } from '../util/json';

// Rule sets for measuring the conflict check (tests and bench): many teams, each with the rules a platform gives
// them, plus cluster-wide rules; generated as GitOps tools generate them (one template, many namespaces).

const DEPLOYMENTS = { select: '$.kind', matchValue: 'Deployment' };

function modRule(namespace: string, name: string, spec: JsonObject): JsonObject {
  return { apiVersion: 'api.kubemod.io/v1beta1', kind: 'ModRule', metadata: { name, namespace }, spec };
}

/** Cluster-wide rule `i`: every fifth a Reject rule (no :latest images), the others an annotation. */
function platformRule(i: number): JsonObject {
  const scope = { targetNamespaceRegex: `^team-${i % 10}.*` };
  return modRule(
    'kubemod-system',
    `platform-${i}`,
    i % 5 === 0
      ? {
          type: 'Reject',
          ...scope,
          rejectMessage: 'no :latest',
          match: [
            DEPLOYMENTS,
            { select: '$.spec.template.spec.containers[*].image', matchRegex: ':latest$' },
          ],
        }
      : {
          type: 'Patch',
          ...scope,
          match: [DEPLOYMENTS, { select: '$.metadata.labels.tier', matchValue: `tier-${i}` }],
          patch: [{ op: 'add', path: `/metadata/annotations/platform-${i}`, value: 'on' }],
        },
  );
}

/** The ten rules of team `t`: labels, replicas by app, a guarded sidecar, resources, checks, a DryRun rule. */
function teamRules(t: number): JsonObject[] {
  const ns = `team-${t}`;
  const patch = (match: JsonObject[], ops: JsonObject[], extra: JsonObject = {}) => ({
    type: 'Patch',
    match,
    patch: ops,
    ...extra,
  });
  const specs: JsonObject[] = [
    patch([DEPLOYMENTS], [{ op: 'add', path: '/metadata/labels/team', value: ns }]),
    patch(
      [DEPLOYMENTS, { select: '$.metadata.labels.app', matchValue: 'web' }],
      [{ op: 'replace', path: '/spec/replicas', value: '3' }],
    ),
    patch(
      [DEPLOYMENTS, { select: '$.metadata.labels.app', matchValue: 'db' }],
      [{ op: 'replace', path: '/spec/replicas', value: '1' }],
    ),
    patch(
      [
        DEPLOYMENTS,
        { select: '$.spec.template.spec.containers[*].name', matchValue: 'log-shipper', negate: true },
      ],
      [{ op: 'add', path: '/spec/template/spec/containers/-', value: 'name: log-shipper\nimage: reg/log:1' }],
    ),
    patch(
      [{ select: '$.kind', matchValue: 'Service' }],
      [{ op: 'add', path: '/metadata/annotations/owner', value: ns }],
    ),
    patch(
      [DEPLOYMENTS],
      [
        {
          op: 'add',
          path: '/spec/template/spec/containers/#0/resources',
          select: '$.spec.template.spec.containers[*]',
          value: 'limits: {memory: 1Gi}',
        },
      ],
      { executionTier: 1 },
    ),
    {
      type: 'Reject',
      rejectMessage: 'no host network',
      match: [{ select: '$.spec.hostNetwork', matchValue: 'true' }],
    },
    patch(
      [{ select: '$.kind', matchValue: 'ConfigMap' }],
      [{ op: 'add', path: '/metadata/labels/cost-center', value: `cc-${t}` }],
    ),
    patch(
      [DEPLOYMENTS],
      [{ op: 'add', path: '/spec/template/metadata/annotations/prometheus.io~1scrape', value: '"true"' }],
      { enforcementAction: 'DryRun' },
    ),
    { type: 'Reject', match: [DEPLOYMENTS, { select: '$.metadata.labels.team', negate: true }] },
  ];
  return specs.map((spec, n) => modRule(ns, `r${n}`, spec));
}

/** `count` realistic ModRules: ten per team namespace, plus cluster-wide rules (one per hundred). */
export function generatedRules(count: number): JsonObject[] {
  const out: JsonObject[] = [];
  for (let i = 0; i < Math.floor(count / 100); i++) out.push(platformRule(i));
  for (let t = 0; out.length < count; t++) out.push(...teamRules(t).slice(0, count - out.length));
  return out;
}
