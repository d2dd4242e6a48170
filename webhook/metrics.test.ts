import { Registry } from 'prom-client';
import { RuleStore } from '../store/rules';
import { DragnetMetrics } from './metrics';

async function series(registry: Registry, name: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  for (const v of (metric?.values ?? []) as Array<{ labels: Record<string, string>; value: number }>) {
    out[`${v.labels.namespace}/${v.labels.name}`] = v.value;
  }
  return out;
}

describe('DragnetMetrics per-rule counters', () => {
  it('count every rule of every call, and a scrape does not change the totals', async () => {
    const registry = new Registry();
    const metrics = new DragnetMetrics(registry, new RuleStore());
    const a = { namespace: 'shop', name: 'add-owner' };
    const b = { namespace: 'kubemod-system', name: 'add-owner' };
    metrics.countRules('patch', [a, b]);
    metrics.countRules('patch', [a]);
    metrics.countRules('rejection', [b]);
    expect(await series(registry, 'modrule_rule_patches_total')).toEqual({
      'shop/add-owner': 2,
      'kubemod-system/add-owner': 1,
    });
    // Scraped again (and after more counts): running totals, not doubled.
    metrics.countRules('patch', [b]);
    expect(await series(registry, 'modrule_rule_patches_total')).toEqual({
      'shop/add-owner': 2,
      'kubemod-system/add-owner': 2,
    });
    expect(await series(registry, 'modrule_rule_rejections_total')).toEqual({
      'kubemod-system/add-owner': 1,
    });
    expect(await series(registry, 'modrule_rule_errors_total')).toEqual({});
    const text = await registry.metrics();
    expect(text).toContain('modrule_rule_patches_total{namespace="shop",name="add-owner"} 2');
    metrics.close();
  });
});
