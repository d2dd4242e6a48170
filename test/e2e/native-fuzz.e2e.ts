import { JsonObject } from '../../util/json';
import { generateObject, generateRule, Random } from '../../native/testing/generate';
import { analyzeModRule } from '../../rule/compile';
import { compileNative } from '../../native';
import { waitFor } from './cluster';
import { describeCluster } from './target';
import { DifferentialHarness, fuzzCrd, mismatchOf } from './native-harness';
import { reachProblems } from './native-reach';

/*
 * The compiler's generated rules and objects on the real API server, native against webhook: CEL's semantics
 * (heterogeneous equality, optionals, regexes, string printing, JSONPatch) are checked here and nowhere else. The
 * objects are of a custom resource that keeps any JSON, so rules meet every JSON type where they read a value.
 * NATIVE_FUZZ_SEED and NATIVE_FUZZ_CASES replay or widen a run.
 */

const SEED = Number(process.env.NATIVE_FUZZ_SEED || 1937);
const CASES = Number(process.env.NATIVE_FUZZ_CASES || 24);
const OBJECTS = 10;

describeCluster(`generated rules, native vs webhook (seed ${SEED})`, () => {
  let harness: DifferentialHarness;
  const random = new Random(SEED);
  const cases: Array<{ rule: JsonObject; objects: JsonObject[] }> = [];
  // Only fitting rules are worth an API server round trip: draw until there are CASES of them.
  for (let i = 0; cases.length < CASES && i < CASES * 10; i++) {
    const rule = generateRule(random, `fuzz-${i}`);
    const objects = Array.from({ length: OBJECTS }, (_, j) => generateObject(random, `o-${i}-${j}`));
    if (compileNative(analyzeModRule(rule).rule!).fits) cases.push({ rule, objects });
  }
  let affected = 0;
  let declined = 0;
  let reached = 0;
  let writes = 0;

  beforeAll(async () => {
    harness = await DifferentialHarness.start();
    await harness.client.request('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
      body: fuzzCrd(),
    });
    await waitFor('the fuzz CRD to be served', async () => {
      await harness.client.request('GET', '/apis/fuzz.modrule.io/v1/configmaps');
      return true;
    });
  }, 120_000);

  afterAll(async () => {
    await harness?.stop();
    process.stderr.write(
      `native fuzz: ${cases.length} rules, ${affected} objects changed or rejected, ${declined} left to the ` +
        `webhook; ${reached} of ${writes} native-side writes reached it\n`,
    );
  });

  cases.forEach((c, i) => {
    it(`case ${i}: ${JSON.stringify((c.rule.spec as JsonObject).match).slice(0, 160)}`, async () => {
      const id = 100 + i;
      const result = await harness.run({ id, rule: c.rule, objects: c.objects });
      expect(result.compiled.fits).toBe(true);
      affected += result.affected;
      if (result.compiled.fits)
        declined += c.objects.filter(
          (o) =>
            !result.compiled.fits ||
            !(result.compiled as { guards: { holds(o: JsonObject): boolean } }).guards.holds(o),
        ).length;
      const mismatches: string[] = [];
      for (const cmp of result.comparisons) {
        const diff = mismatchOf(cmp, id);
        if (diff.length > 0) mismatches.push(`${cmp.object} (webhook | native):\n  ${diff.join('\n  ')}`);
      }
      expect({ rule: c.rule, mismatches }).toEqual({ rule: c.rule, mismatches: [] });
      // The dragnet's match conditions carry the rule's guards: reached exactly where one declines, never an error.
      expect({ rule: c.rule, reach: reachProblems(result.reach, result.apiServer) }).toEqual({
        rule: c.rule,
        reach: [],
      });
      reached += result.reach.filter((r) => r.reached).length;
      writes += result.reach.length;
    }, 120_000);
  });

  it('changed or rejected objects, and left some to the webhook', () => {
    expect(affected).toBeGreaterThan(CASES);
    expect(declined).toBeGreaterThan(0);
  });
});
