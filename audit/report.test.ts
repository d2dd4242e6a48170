import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { JsonObject } from '../util/json';
import { crdValidator } from '../bundle/schema';
import {
  MAX_REPORT_BYTES,
  OMITTED_ANNOTATION,
  ReportBuilder,
  ReportFormat,
  resultMessage,
  sameReport,
} from './report';
import { ObjectAudit, RuleResult } from './types';

const NOW = new Date('2026-05-01T10:00:00Z');
const LATER = new Date('2026-05-01T11:00:00Z');

function audit(
  name: string,
  namespace: string,
  rules: Array<Partial<RuleResult> & { name: string }>,
): ObjectAudit {
  const verdicts = rules.map((r) => r.verdict ?? 'pass');
  return {
    ref: {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      namespace,
      name,
      uid: `uid-${name}`,
      resourceVersion: '7',
    },
    verdict: verdicts.includes('reject') ? 'reject' : verdicts.includes('patch') ? 'patch' : 'pass',
    patch: verdicts.includes('patch')
      ? [{ op: 'add', path: '/metadata/labels/team', value: 'platform' }]
      : [],
    message: '',
    rules: rules.map((r) => ({
      rule: { namespace: r.rule?.namespace ?? namespace, name: r.name },
      type: r.type ?? 'Patch',
      verdict: r.verdict ?? 'pass',
      message: r.message,
    })),
  };
}

function crds(format: ReportFormat): JsonObject[] {
  const file = join(__dirname, '..', 'config', 'reports', format, 'crds.yaml');
  return parseAllDocuments(readFileSync(file, 'utf8')).map((d) => d.toJS() as JsonObject);
}

describe('ReportBuilder', () => {
  const builder = new ReportBuilder();
  builder.add(
    audit('web', 'shop', [
      { name: 'team', verdict: 'patch' },
      { name: 'pin', type: 'Reject' },
    ]),
  );
  builder.add(
    audit('api', 'shop', [
      { name: 'team' },
      { name: 'pin', type: 'Reject', verdict: 'reject', message: 'api: pin the image' },
    ]),
  );
  builder.add(
    audit('job', 'shop', [{ name: 'memory', verdict: 'error', message: 'replace /spec/x: missing' }]),
  );
  builder.add(audit('ns', '', [{ name: 'label', rule: { namespace: 'kubemod-system', name: 'label' } }]));

  it('gives each (rule, object) a result: fail for would-patch and would-reject, error, pass; and a summary', () => {
    const report = builder.report('openreports', 'shop', NOW)!;
    expect(report).toMatchObject({
      apiVersion: 'openreports.io/v1alpha1',
      kind: 'Report',
      metadata: {
        name: 'modrule-audit',
        namespace: 'shop',
        labels: { 'app.kubernetes.io/managed-by': 'modrule' },
      },
      source: 'modrule',
      summary: { pass: 2, fail: 2, warn: 0, error: 1, skip: 0 },
    });
    const results = report.results as JsonObject[];
    expect(
      results.map((r) => [r.result, r.policy, (r.resources as JsonObject[])[0].name, r.message]),
    ).toEqual([
      ['fail', 'shop/pin', 'api', 'would be rejected: api: pin the image'],
      ['fail', 'shop/team', 'web', 'would be patched: add /metadata/labels/team'],
      ['error', 'shop/memory', 'job', 'failed: replace /spec/x: missing'],
      ['pass', 'shop/team', 'api', 'in line with the rule'],
      ['pass', 'shop/pin', 'web', 'in line with the rule'],
    ]);
    expect(results[0]).toEqual({
      source: 'modrule',
      policy: 'shop/pin',
      rule: 'pin',
      category: 'ModRule Reject',
      result: 'fail',
      scored: true,
      message: 'would be rejected: api: pin the image',
      resources: [
        { apiVersion: 'apps/v1', kind: 'Deployment', name: 'api', namespace: 'shop', uid: 'uid-api' },
      ],
      timestamp: { seconds: Math.floor(NOW.getTime() / 1000), nanos: 0 },
    });
    expect(builder.namespaces()).toEqual(['', 'shop']);
    expect(builder.report('openreports', 'elsewhere', NOW)).toBeUndefined();
  });

  it('writes a cluster report for cluster-scoped objects, and PolicyReports in the wgpolicyk8s format', () => {
    expect(builder.report('openreports', '', NOW)).toMatchObject({
      kind: 'ClusterReport',
      metadata: { name: 'modrule-audit' },
    });
    const polr = builder.report('wgpolicyk8s', 'shop', NOW)!;
    expect(polr).toMatchObject({ apiVersion: 'wgpolicyk8s.io/v1alpha2', kind: 'PolicyReport' });
    expect(polr.source).toBeUndefined();
    expect(builder.report('wgpolicyk8s', '', NOW)).toMatchObject({ kind: 'ClusterPolicyReport' });
  });

  it('produces reports the shipped CRDs accept (config/reports)', () => {
    for (const format of ['openreports', 'wgpolicyk8s'] as const) {
      const [namespaced, cluster] = crds(format);
      expect(crdValidator(namespaced)(builder.report(format, 'shop', NOW)!)).toEqual([]);
      expect(crdValidator(cluster)(builder.report(format, '', NOW)!)).toEqual([]);
      // The validator does catch a report that does not fit.
      expect(
        crdValidator(namespaced)({ ...builder.report(format, 'shop', NOW)!, results: [{ result: 'maybe' }] }),
      ).not.toEqual([]);
    }
  });

  it('keeps the timestamps of unchanged results, so an unchanged scan writes the same report', () => {
    const first = builder.report('openreports', 'shop', NOW)!;
    const again = builder.report('openreports', 'shop', LATER, first)!;
    expect(again.results).toEqual(first.results);
    expect(sameReport(again, first)).toBe(true);
    const fresh = new ReportBuilder();
    fresh.add(audit('web', 'shop', [{ name: 'team' }, { name: 'pin', type: 'Reject' }]));
    const changed = fresh.report('openreports', 'shop', LATER, first)!;
    expect(sameReport(changed, first)).toBe(false);
    const byPolicy = new Map((changed.results as JsonObject[]).map((r) => [r.policy, r.timestamp]));
    // team on web changed (fail to pass): found now; pin on web did not: found then.
    expect(byPolicy.get('shop/team')).toEqual({ seconds: Math.floor(LATER.getTime() / 1000), nanos: 0 });
    expect(byPolicy.get('shop/pin')).toEqual({ seconds: Math.floor(NOW.getTime() / 1000), nanos: 0 });
  });

  it('stays under the etcd object limit: passes are left out first, counted in the summary and an annotation', () => {
    const big = new ReportBuilder();
    for (let i = 0; i < 6000; i++)
      big.add(
        audit(`deployment-with-a-long-name-${i}`, 'shop', [
          { name: 'team', verdict: i < 10 ? 'patch' : 'pass' },
        ]),
      );
    const report = big.report('openreports', 'shop', NOW)!;
    expect(JSON.stringify(report).length).toBeLessThan(MAX_REPORT_BYTES + 10_000);
    const results = report.results as JsonObject[];
    expect(results.filter((r) => r.result === 'fail')).toHaveLength(10);
    expect(report.summary).toMatchObject({ fail: 10, pass: 5990 });
    const omitted = Number(((report.metadata as JsonObject).annotations as JsonObject)[OMITTED_ANNOTATION]);
    expect(omitted).toBe(6000 - results.length);
    expect(omitted).toBeGreaterThan(0);
  });

  it('keeps a bounded number of results in memory, failures first, and counts all of them', () => {
    const small = new ReportBuilder(10);
    for (let i = 0; i < 20; i++) small.add(audit(`p-${i}`, 'shop', [{ name: 'team' }]));
    for (let i = 0; i < 5; i++) small.add(audit(`f-${i}`, 'shop', [{ name: 'team', verdict: 'patch' }]));
    for (let i = 0; i < 10; i++) small.add(audit(`g-${i}`, 'shop', [{ name: 'team', verdict: 'patch' }]));
    const report = small.report('openreports', 'shop', NOW)!;
    const results = report.results as JsonObject[];
    expect(results).toHaveLength(10);
    expect(results.every((r) => r.result === 'fail')).toBe(true);
    expect(report.summary).toMatchObject({ pass: 20, fail: 15 });
    expect(((report.metadata as JsonObject).annotations as JsonObject)[OMITTED_ANNOTATION]).toBe('25');
  });

  it('says what the webhook would do in one line', () => {
    const a = audit('web', 'shop', [{ name: 'team', verdict: 'patch' }]);
    a.patch = Array.from({ length: 7 }, (_, i) => ({
      op: 'add' as const,
      path: `/metadata/labels/l${i}`,
      value: 'x',
    }));
    expect(resultMessage(a, a.rules[0])).toBe(
      'would be patched: add /metadata/labels/l0, add /metadata/labels/l1, add /metadata/labels/l2, ' +
        'add /metadata/labels/l3, add /metadata/labels/l4, 2 more',
    );
  });
});
