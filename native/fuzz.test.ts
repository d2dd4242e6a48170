import { JsonObject } from '../util/json';
import { analyzeModRule } from '../rule/compile';
import { RuleStore } from '../store/rules';
import { admit } from '../engine/admit';
import { ruleMatches } from '../engine/match';
import { compileNative, residualRule } from '.';
import { generateObject, generateRule, Random } from './testing/generate';

/*
 * Generated rules and objects against the compiler's invariants. What CEL does with them is checked on the real API
 * server (test/e2e/native-fuzz.e2e.ts); here: the compiler is deterministic, says why a rule does not fit at a field
 * the rule has, the residual rule the webhook keeps is exactly "the rule, where a guard does not hold", and every
 * Patch rule it calls fitting is idempotent in the engine (applying it to its own result changes nothing).
 */

const CASES = 400;
const OBJECTS = 12;

function engineRun(rule: JsonObject, object: JsonObject): JsonObject | null {
  const store = new RuleStore();
  store.upsertRule(rule);
  const out = admit({ operation: 'CREATE', object, oldObject: null, namespace: 'default' }, store.snapshot());
  return out.allowed ? (out.object as JsonObject) : null;
}

describe('generated rules', () => {
  const r = new Random(19);
  const cases = Array.from({ length: CASES }, (_, i) => ({
    rule: generateRule(r, `fuzz-${i}`),
    objects: Array.from({ length: OBJECTS }, (_, j) => generateObject(r, `obj-${j}`)),
  }));
  const compiled = cases.map((c) => {
    const rule = analyzeModRule(c.rule).rule;
    if (!rule) throw new Error(`generator made an invalid rule: ${JSON.stringify(c.rule)}`);
    return { ...c, compiledRule: rule, native: compileNative(rule) };
  });

  it('fit often enough to test something, and not always', () => {
    const fits = compiled.filter((c) => c.native.fits).length;
    expect(fits).toBeGreaterThan(CASES * 0.3);
    expect(fits).toBeLessThan(CASES);
  });

  it('compile to the same policy every time', () => {
    for (const c of compiled.slice(0, 50)) {
      const again = compileNative(analyzeModRule(c.rule).rule!);
      expect(JSON.stringify(again)).toBe(JSON.stringify(c.native));
    }
  });

  it('that do not fit say why, at a field the rule has', () => {
    for (const c of compiled) {
      if (c.native.fits) continue;
      expect(c.native.reasons.length).toBeGreaterThan(0);
      for (const reason of c.native.reasons) {
        const m = /^spec\.(match|patch)\[(\d+)\]/.exec(reason.field);
        if (m) expect(((c.rule.spec as JsonObject)[m[1]] as unknown[]).length).toBeGreaterThan(Number(m[2]));
        else
          expect(reason.field).toMatch(
            /^(spec(\.(admissionOperations|rejectMessage|match|patch))?|metadata\.name)$/,
          );
        expect(reason.message.length).toBeGreaterThan(10);
      }
    }
  });

  it('leave to the webhook exactly the objects whose guards do not hold', () => {
    let declined = 0;
    for (const c of compiled) {
      if (!c.native.fits) continue;
      const residual = residualRule(c.compiledRule, c.native.guards);
      for (const o of c.objects) {
        const holds = c.native.guards.holds(o);
        if (!holds) declined++;
        const full = ruleMatches(c.compiledRule, o);
        if (!residual) {
          expect(holds).toBe(true);
          continue;
        }
        expect(ruleMatches(residual, o)).toBe(full && !holds);
      }
    }
    // Numbers, nulls and maps where strings are read: some objects must exercise the residual path.
    expect(declined).toBeGreaterThan(0);
  });

  it('are idempotent in the engine when they fit, for the objects the policy serves', () => {
    let changed = 0;
    for (const c of compiled) {
      if (!c.native.fits || c.compiledRule.type !== 'Patch') continue;
      for (const o of c.objects) {
        // Applied again by the policy (reinvocation) or by the webhook (residual): either way as the engine does.
        if (!c.native.guards.holds(o)) continue;
        const once = engineRun(c.rule, o);
        if (!once) continue;
        if (JSON.stringify(once) !== JSON.stringify(o)) changed++;
        expect(engineRun(c.rule, once)).toEqual(once);
      }
    }
    expect(changed).toBeGreaterThan(50);
  });
});
