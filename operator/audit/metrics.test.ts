import { Registry } from 'prom-client';
import { JsonObject } from '../../util/json';
import { silentLogger } from '../../util/logger';
import { storeFromYaml } from '../../engine/testing';
import { FakeCluster } from '../testing/fake-cluster';
import { eventually } from '../testing/eventually';
import { KubeApiError } from '../../kube/kube';
import { BackgroundAudit } from './background';
import { AuditMetrics } from './metrics';

/** Every sample of the registry as `name{labels}` -> value. */
async function samples(registry: Registry): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const line of (await registry.metrics()).split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    out[line.slice(0, at)] = Number(line.slice(at + 1));
  }
  return out;
}

const rule: JsonObject = {
  apiVersion: 'api.kubemod.io/v1beta1',
  kind: 'ModRule',
  metadata: { name: 'team', namespace: 'shop' },
  spec: {
    type: 'Patch',
    match: [{ select: '$.kind', matchValue: 'ConfigMap' }],
    patch: [{ op: 'add', path: '/metadata/labels/team', value: 'x' }],
  },
};

/** A BackgroundAudit on a fake cluster with one ConfigMap the rule patches, its rounds fed to AuditMetrics. */
function setUp(now: () => number) {
  const c = new FakeCluster();
  c.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } });
  c.put({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', namespace: 'shop' } });
  const store = storeFromYaml([], { cluster: c.all('Namespace') });
  store.upsertRule(rule);
  const registry = new Registry();
  const metrics = new AuditMetrics(registry, 600, now);
  let rounds = 0;
  let failures = 0;
  const audit = new BackgroundAudit(
    { format: 'openreports', intervalSeconds: 600, debounceMs: 10, pageSize: 10, qps: 1000 },
    {
      ...{ client: c, store, logger: silentLogger(), rulesLoaded: Promise.resolve() },
      onRound: (round) => {
        metrics.round(round);
        rounds++;
      },
      onFailure: (_err, ms) => {
        metrics.failed(ms);
        failures++;
      },
    },
  );
  return { c, registry, audit, counts: () => ({ rounds, failures }) };
}

describe('AuditMetrics', () => {
  it('shows the audit started, then a complete scan: when, what it found, reports written, not partial', async () => {
    let now = 1_000_000;
    const { registry, audit, counts } = setUp(() => now);
    expect(await samples(registry)).toMatchObject({
      modrule_audit_last_scan_timestamp_seconds: 1000,
      modrule_audit_interval_seconds: 600,
      modrule_audit_reports_partial: 0,
      'modrule_audit_scans_total{result="complete"}': 0,
      'modrule_audit_scans_total{result="failed"}': 0,
    });
    now = 2_000_000;
    audit.start();
    try {
      await eventually(() => expect(counts().rounds).toBe(1));
    } finally {
      await audit.stop();
    }
    expect(await samples(registry)).toMatchObject({
      modrule_audit_last_scan_timestamp_seconds: 2000,
      modrule_audit_reports_partial: 0,
      'modrule_audit_scans_total{result="complete"}': 1,
      'modrule_audit_scans_total{result="partial"}': 0,
      'modrule_audit_objects{verdict="patch"}': 1,
      'modrule_audit_objects{verdict="pass"}': 0,
      'modrule_audit_report_writes_total{result="written"}': 1,
      'modrule_audit_report_writes_total{result="failed"}': 0,
    });
  });

  it('marks the reports partial when a list fails (the scan still counts as done)', async () => {
    let now = 1_000_000;
    const { c, registry, audit, counts } = setUp(() => now);
    c.hooks.push((req) => {
      if (req.method === 'GET' && req.path.endsWith('/configmaps'))
        throw new KubeApiError('403 Forbidden: configmaps', 403, 'Forbidden');
    });
    now = 2_000_000;
    audit.start();
    try {
      await eventually(() => expect(counts().rounds).toBe(1));
    } finally {
      await audit.stop();
    }
    expect(await samples(registry)).toMatchObject({
      modrule_audit_reports_partial: 1,
      modrule_audit_last_scan_timestamp_seconds: 2000,
      'modrule_audit_scans_total{result="partial"}': 1,
      'modrule_audit_scans_total{result="complete"}': 0,
    });
  });

  it('leaves the timestamp where it was (stale) when a report cannot be written', async () => {
    let now = 1_000_000;
    const { c, registry, audit, counts } = setUp(() => now);
    c.hooks.push((req) => {
      if (req.method === 'POST' && req.path.includes('/reports'))
        throw new KubeApiError('500 etcd unavailable', 500, 'InternalError');
    });
    now = 2_000_000;
    audit.start();
    try {
      await eventually(() => expect(counts().rounds).toBe(1));
    } finally {
      await audit.stop();
    }
    expect(await samples(registry)).toMatchObject({
      modrule_audit_reports_partial: 0,
      modrule_audit_last_scan_timestamp_seconds: 1000,
      'modrule_audit_scans_total{result="complete"}': 1,
      'modrule_audit_report_writes_total{result="failed"}': 1,
    });
  });

  it('counts a scan that failed before writing anything, leaving the timestamp where it was', async () => {
    let now = 1_000_000;
    const { c, registry, audit, counts } = setUp(() => now);
    c.hooks.push((req) => {
      if (req.path.includes('openreports.io'))
        throw new KubeApiError('503 unavailable', 503, 'ServiceUnavailable');
    });
    now = 2_000_000;
    audit.start();
    try {
      await eventually(() => expect(counts().failures).toBeGreaterThanOrEqual(1));
    } finally {
      await audit.stop();
    }
    const got = await samples(registry);
    expect(got['modrule_audit_scans_total{result="failed"}']).toBeGreaterThanOrEqual(1);
    expect(got.modrule_audit_last_scan_timestamp_seconds).toBe(1000);
  });
});
