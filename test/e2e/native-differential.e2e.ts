import { JsonObject } from '../../util/json';
import { corpus, exampleRules } from './native-corpus';
import { describeCluster } from './target';
import { DifferentialHarness, mismatchOf } from './native-harness';
import { reachProblems } from './native-reach';

/*
 * Native vs webhook on the real API server: for every rule of examples/ that the compiler says fits, the objects
 * of the corpus (with and without kubectl's last-applied-configuration) are created and updated once through the
 * dragnet webhook and once through the rule's policy, and what the API server stores (or the rejection) must be the
 * same, field by field. A fitting rule that changes none of the corpus fails the test too: it would prove nothing.
 * On the native side the dragnet webhook has the registration the operator computes (the rule's guards in its match
 * conditions): every write must reach it exactly when a guard leaves the object there, counted by the webhook and
 * by the API server's own metrics, with no match condition the API server could not evaluate.
 * It runs on an existing cluster too (target.ts), where the controller-manager and the scheduler also write the
 * corpus's objects (a Deployment's status and revision, a Pod's PodScheduled condition) between a create and its
 * update: the update then starts from a fresh read, and the comparison leaves out the fields those other managers own
 * (native-writers.ts); what the harness sent and what admission made of it stay compared.
 */

const ONLY = process.env.NATIVE_DIFF_ONLY;

describeCluster('native policies vs the webhook, every fitting rule of examples/', () => {
  let harness: DifferentialHarness;
  const report: string[] = [];

  beforeAll(async () => {
    harness = await DifferentialHarness.start();
  }, 120_000);

  afterAll(async () => {
    await harness?.stop();
    process.stderr.write(`native differential:\n${report.join('\n')}\n`);
  });

  const rules = exampleRules().filter(({ rule }) => !ONLY || (rule.metadata as JsonObject).name === ONLY);
  const objects = corpus();

  it('has a corpus of every kind the example rules look at', () => {
    const kinds = new Set(objects.map((o) => o.kind));
    for (const k of [
      'Deployment',
      'Pod',
      'Service',
      'ConfigMap',
      'Namespace',
      'StatefulSet',
      'PersistentVolumeClaim',
    ])
      expect(kinds).toContain(k);
    expect(objects.length).toBeGreaterThan(20);
  });

  rules.forEach(({ file, rule }, i) => {
    const name = `${file} ${String((rule.metadata as JsonObject).name)}`;
    it(`${name}: same stored objects and rejections`, async () => {
      const result = await harness.run({ id: i + 1, rule, objects });
      if (!result.compiled.fits) {
        report.push(`  ${name}: does not fit (${result.compiled.reasons.map((r) => r.field).join(', ')})`);
        return;
      }
      const reached = result.reach.filter((r) => r.reached).length;
      report.push(
        `  ${name}: fits; ${result.comparisons.length} objects, ${result.affected} changed or rejected, ` +
          `policy in effect after ${result.propagationMs} ms; ${reached} of ${result.reach.length} native-side ` +
          'writes reached the webhook',
      );
      const mismatches: string[] = [];
      for (const c of result.comparisons) {
        const diff = mismatchOf(c, i + 1);
        if (diff.length > 0) mismatches.push(`${c.object} (webhook | native):\n  ${diff.join('\n  ')}`);
      }
      expect(mismatches).toEqual([]);
      expect(result.affected).toBeGreaterThan(0);
      expect(reachProblems(result.reach, result.apiServer)).toEqual([]);
    }, 240_000);
  });
});
