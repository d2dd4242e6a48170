import { JsonObject } from '../../util/json';
import { splitKey } from '../../util/meta';
import { effectsOf, NativeFit, OtherRule, withProbe } from '../../native';
import { RuleStore } from '../../store/rules';
import { contains, owned } from './api';

/*
 * What the operator writes for a rule that fits (its policy, answering probes, and binding), whether an owned object
 * still says that, and the other rules a rule's hand-over is checked against.
 */

/** The policy (answering probes) and binding as the operator writes them for a rule of uid `ruleUid`. */
export function written(fit: NativeFit, ruleUid: string): { policy: JsonObject; binding: JsonObject } {
  return { policy: owned(withProbe(fit.policy), ruleUid), binding: owned(fit.binding, ruleUid) };
}

/** Whether an owned policy or binding still says what the operator writes for the fit. */
export function stillAsWritten(fit: NativeFit, obj: JsonObject): boolean {
  const { policy, binding } = written(fit, '');
  const want = String(obj.kind).endsWith('Binding') ? binding : policy;
  return want.kind === obj.kind && contains(obj.spec, want.spec ?? null);
}

/** The rules held besides `key`, with what they read and write (for the interference check). */
export function* otherRules(store: RuleStore, key: string): Iterable<OtherRule> {
  const natives = store.nativeRules();
  for (const rule of store.allRules()) {
    if (rule.key === key) continue;
    yield { rule, effects: effectsOf(rule), native: natives.has(rule.key) };
  }
  for (const [other, { partial }] of natives) {
    if (partial || other === key) continue;
    const { namespace, name } = splitKey(other);
    const rule = store.ruleOf(namespace, name);
    if (rule) yield { rule, effects: effectsOf(rule), native: true };
  }
}
