import { JsonObject } from '../../util/json';
import { splitKey } from '../../util/meta';
import { CompiledRule } from '../../rule/compile';
import { formatProblems } from '../../rule/problems';
import {
  compileNative,
  DragnetMatch,
  effectsOf,
  interferenceProblem,
  NativeFit,
  OtherRule,
  withProbe,
} from '../../native';
import { RuleStore } from '../../store/rules';
import { contains, owned } from './api';

/*
 * Whether a rule fits a policy (it compiles, and no other rule's tier order or paths forbid it), what the operator
 * writes for a rule that fits (its policy, answering probes, and binding), whether an owned object still says that,
 * and the other rules a rule's hand-over is checked against.
 */

/** Where the compiled rules' policies act: the operator's cluster namespace and the dragnet's configured net. */
export interface FitContext {
  clusterNamespace: string;
  dragnet: DragnetMatch;
}

/** The rule's fit, or why it stays on the webhook (the NotNative message). */
export function fitOf(held: CompiledRule, ctx: FitContext, store: RuleStore): NativeFit | string {
  const fit = compileNative(held, ctx);
  if (!fit.fits) {
    const why = formatProblems(fit.reasons.map((r) => ({ field: r.field, message: r.message })));
    return `does not compile to a policy: ${why}`;
  }
  const conflict = interferenceProblem(fit, otherRules(store, held.key), ctx.clusterNamespace);
  return conflict ? `stays on the webhook: ${conflict}` : fit;
}

/** The policy (answering probes) and binding as the operator writes them for a rule of uid `ruleUid`. */
export function written(fit: NativeFit, ruleUid: string): { policy: JsonObject; binding: JsonObject } {
  return { policy: owned(withProbe(fit.policy), ruleUid), binding: owned(fit.binding, ruleUid) };
}

/** Whether an owned policy or binding still says what the operator writes for the rule (false: it does not fit). */
export function stillAsWritten(compiled: CompiledRule, ctx: FitContext, obj: JsonObject): boolean {
  const fit = compileNative(compiled, ctx);
  if (!fit.fits) return false;
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
