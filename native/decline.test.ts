import { JsonObject } from '../util/json';
import { analyzeModRule, CompiledRule } from '../rule/compile';
import { LAST_APPLIED_ANNOTATION } from '../rule/types';
import { compileNative, residualRule } from '.';
import { celTokens, comprehensionBodies, guardCelCost } from './cel-cost';
import { declineOf, declineOfGuards, MAX_DECLINE_COST } from './decline';
import { Guard, MAX_LIST } from './guard';
import { generateObject, generateRule, Random } from './testing/generate';

/*
 * The dragnet's condition for a rule served natively: true exactly where a guard declines the object, ordered so
 * that what iterates or builds text is evaluated only after the guards that bound it held, and with a cost bound.
 * Whether the API server evaluates it without error is checked on the real API server (native-differential and
 * native-fuzz e2e, with its match-condition error metric); here: what can be checked without one.
 */

function rule(spec: JsonObject): CompiledRule {
  return analyzeModRule({
    apiVersion: 'api.kubemod.io/v1beta1',
    kind: 'ModRule',
    metadata: { name: 'r', namespace: 'apps' },
    spec,
  }).rule!;
}

function fitOf(spec: JsonObject) {
  const n = compileNative(rule(spec));
  if (!n.fits) throw new Error(JSON.stringify(n.reasons));
  return n;
}

const CONFIGMAP = { select: '$.kind', matchValue: 'ConfigMap' };
const LABEL = { op: 'add', path: '/metadata/labels/team', value: 'platform' };

describe('the decline of a rule served natively', () => {
  test('only residual rules have one; its CEL reads the object behind a type check', () => {
    const n = fitOf({ type: 'Patch', match: [CONFIGMAP], patch: [LABEL] });
    expect(declineOf(n.rule)).toBeNull();
    const outcome = declineOf(residualRule(n.rule, n.guards)!);
    if (!outcome || !('decline' in outcome)) throw new Error('no decline');
    const { decline } = outcome;
    expect(decline.cel.startsWith('type(object) != map || !(')).toBe(true);
    const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' } };
    expect(decline.declines(cm)).toBe(false);
    expect(
      decline.declines({ ...cm, metadata: { name: 'a', annotations: { [LAST_APPLIED_ANNOTATION]: '{}' } } }),
    ).toBe(true);
    expect(decline.declines({ ...cm, metadata: 'text' })).toBe(true);
    expect(decline.declines(null)).toBe(true);
    expect(decline.cost).toBeLessThan(1000);
  });

  test('guards are ordered cheapest first: a list is iterated only after its size guard', () => {
    const n = fitOf({
      type: 'Patch',
      match: [CONFIGMAP, { select: '$.spec.items[*].name', matchRegex: '^a' }],
      patch: [LABEL],
    });
    const outcome = declineOfGuards(n.guards.list);
    if (!('decline' in outcome)) throw new Error(outcome.why);
    const cel = outcome.decline.cel;
    const size = cel.indexOf(`size(dyn(object[?"spec"][?"items"].value())) <= ${MAX_LIST}`);
    const iterate = cel.indexOf('.all(el,');
    expect(size).toBeGreaterThan(0);
    expect(iterate).toBeGreaterThan(size);
    expect(outcome.decline.cost).toBeGreaterThan(MAX_LIST);
    expect(outcome.decline.cost).toBeLessThanOrEqual(MAX_DECLINE_COST);
  });

  test('a guard reading the namespace object cannot be a webhook match condition', () => {
    const n = fitOf({
      type: 'Patch',
      match: [CONFIGMAP, { select: '$.syntheticRefs.namespace.metadata.labels.tier', matchRegex: 'x' }],
      patch: [LABEL],
    });
    const outcome = declineOfGuards(n.guards.list);
    expect('why' in outcome && outcome.why).toMatch(/reads the namespace object/);
  });

  test('guards over the cost a rule may take: no decline, and why', () => {
    const costly: Guard = {
      cel: 'dyn(object[?"a"].orValue(dyn([]))).all(el, el == 1 && el == 2 && el == 3)',
      holds: () => true,
      what: 'a costly guard',
      cost: 'elements',
    };
    const many = Array.from({ length: 40 }, (_, i) => ({ ...costly, cel: `${costly.cel} && ${i} == ${i}` }));
    const outcome = declineOfGuards(many);
    expect('why' in outcome && outcome.why).toMatch(/CEL units per request/);
  });

  test('the cost bound counts every comprehension body once per element, and text work for text guards', () => {
    const cel = 'dyn(object[?"a"].orValue(dyn([]))).all(el, type(el) == string)';
    expect(comprehensionBodies(cel)).toEqual(['el, type(el) == string']);
    expect(guardCelCost(cel, 'elements')).toBe(
      celTokens(cel) + MAX_LIST * (celTokens('el, type(el) == string') + 2),
    );
    expect(guardCelCost('"a" + object[?"b"].orValue("").matches("^x$")', 'text')).toBeGreaterThan(1000);
  });

  // The cost classes are set by hand where guards are built; this keeps them honest on every generated guard.
  test('every generated guard that iterates data or builds text says so in its cost class', () => {
    const r = new Random(29);
    let checked = 0;
    for (let i = 0; i < 600; i++) {
      const n = compileNative(analyzeModRule(generateRule(r, `g-${i}`)).rule!);
      if (!n.fits) continue;
      for (const g of n.guards.list) {
        checked++;
        // `).all(`: a comprehension over a value read from the object (`].all(` is over a literal list).
        if (/\)\.(?:all|exists|map|filter|transformList)\(/.test(g.cel))
          expect([g.what, g.cost]).toEqual([g.what, expect.stringMatching(/^elements/)]);
        if (/\.matches\(|\.replace\(|\.substring\(|\.join\(| \+ /.test(g.cel))
          expect([g.what, g.cost]).toEqual([g.what, expect.stringMatching(/text$/)]);
      }
    }
    expect(checked).toBeGreaterThan(200);
  });

  test('declines() is "some guard does not hold" on every generated object', () => {
    const r = new Random(31);
    let declined = 0;
    for (let i = 0; i < 200; i++) {
      const n = compileNative(analyzeModRule(generateRule(r, `d-${i}`)).rule!);
      const objects = Array.from({ length: 6 }, (_, j) => generateObject(r, `o-${j}`));
      if (!n.fits) continue;
      const outcome = declineOfGuards(n.guards.list);
      if (!('decline' in outcome)) continue;
      for (const o of objects) {
        expect(outcome.decline.declines(o)).toBe(!n.guards.holds(o));
        if (outcome.decline.declines(o)) declined++;
      }
    }
    expect(declined).toBeGreaterThan(0);
  });
});
