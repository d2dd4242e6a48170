import { isJsonObject, JsonValue } from '../util/json';
import type { CompiledJsonPath, SelectResult } from '../jsonpath';
import type { CompiledMatchItem, CompiledRule } from '../rule/compile';
import type { Guards } from './guard';

/*
 * While a rule is served natively, the webhook keeps the part the policy leaves out: the objects for which a guard
 * does not hold (a kubectl last-applied-configuration annotation to keep in step, a value of a type the CEL does not
 * handle). The residual rule is the rule with one more criterion, "a guard does not hold", evaluated by the same
 * TypeScript tests the guards' CEL mirrors. It keeps the rule's tier, name and operations, so for those objects the
 * webhook does exactly what it did before.
 */

const RESULT_TRUE: SelectResult[] = [{ value: true, path: null, indices: [] }];
const RESULT_FALSE: SelectResult[] = [{ value: false, path: null, indices: [] }];

/** A select that yields true when some guard does not hold for the object. */
function declinedSelect(guards: Guards): CompiledJsonPath {
  return {
    source: `native policy declines (${guards.list.map((g) => g.what).join('; ')})`,
    // Not a path: the rule index never indexes on it, and no JSONPath tool shows it as one.
    ast: { kind: 'literal', value: true, column: 1 },
    select: (root: JsonValue) => (isJsonObject(root) && guards.holds(root) ? RESULT_FALSE : RESULT_TRUE),
  };
}

/** The rule as the webhook serves it while its policy is in force; null when the webhook has nothing left to do. */
export function residualRule(rule: CompiledRule, guards: Guards): CompiledRule | null {
  if (guards.list.length === 0) return null;
  const item: CompiledMatchItem = {
    select: declinedSelect(guards),
    matchFor: 'Any',
    negate: false,
  };
  // A Pod rule's variants are served by the same policy: each keeps the objects its guards decline.
  const variants = rule.variants?.map((v) => new ResidualRule(v, [...v.match, item], guards));
  return new ResidualRule(rule, [...rule.match, item], guards, variants);
}

class ResidualRule implements CompiledRule {
  constructor(
    private readonly full: CompiledRule,
    readonly match: readonly CompiledMatchItem[],
    readonly guards: Guards,
    readonly variants?: readonly CompiledRule[],
  ) {}

  get podController() {
    return this.full.podController;
  }

  get namespace() {
    return this.full.namespace;
  }
  get name() {
    return this.full.name;
  }
  get key() {
    return this.full.key;
  }
  get type() {
    return this.full.type;
  }
  get tier() {
    return this.full.tier;
  }
  get operations() {
    return this.full.operations;
  }
  get enforcement() {
    return this.full.enforcement;
  }
  get source() {
    return this.full.source;
  }
  get patch() {
    return this.full.patch;
  }
  get rejectMessage() {
    return this.full.rejectMessage;
  }
  get targetNamespaceRegex() {
    return this.full.targetNamespaceRegex;
  }
  get targetNamespaceSelector() {
    return this.full.targetNamespaceSelector;
  }

  /** The rule it was derived from (the webhook serves that again when the policy goes). */
  get original(): CompiledRule {
    return this.full;
  }
}

/** The guards of a residual rule (its policy serves the objects they accept); undefined for any other rule. */
export function residualGuards(rule: CompiledRule): Guards | undefined {
  return rule instanceof ResidualRule ? rule.guards : undefined;
}

/** The full rule behind a residual one (or the rule itself). */
export function originalOf(rule: CompiledRule): CompiledRule {
  return rule instanceof ResidualRule ? rule.original : rule;
}
