import { isJsonObject, JsonObject } from '../../util/json';
import type { CompiledRule } from '../../modrule/compile';
import type { ReferenceDecl } from '../../modrule/references';
import type { DeclState } from './named';

/*
 * The ReferenceMissing condition of a ModRule: True while one of its references is not found or cannot be read (the
 * message says which), False once they all are again (kept, so lastTransitionTime says when it cleared); not there
 * on rules that never missed one. It names objects and kinds, never a value read from one.
 */

export const REFERENCE_MISSING = 'ReferenceMissing';

/** A condition besides Ready, as the status writer writes it (lastTransitionTime added there). */
export interface RuleCondition {
  type: string;
  status: 'True' | 'False';
  reason: string;
  message: string;
  observedGeneration?: number;
}

function target(decl: ReferenceDecl): string {
  const where = decl.namespace ? `${decl.namespace}/` : '';
  return decl.objectName !== undefined
    ? `${decl.kind} ${where}${decl.objectName}`
    : `${decl.kind} in ${decl.namespace}`;
}

/** One line per reference of `rule` that is missing or cannot be read. */
export function referenceProblems(
  rule: CompiledRule,
  stateOf: (decl: ReferenceDecl) => DeclState,
  ownerProblems: ReadonlyMap<string, string> | undefined,
): string[] {
  const out: string[] = [];
  for (const decl of rule.references?.named ?? []) {
    const s = stateOf(decl);
    if (s.state === 'absent') out.push(`syntheticRefs.${decl.name}: ${target(decl)} not found`);
    else if (s.state === 'unreadable')
      out.push(`syntheticRefs.${decl.name}: cannot read ${target(decl)}: ${s.why}`);
  }
  for (const why of ownerProblems?.values() ?? []) out.push(`syntheticRefs.owner: ${why}`);
  return out;
}

function current(rule: JsonObject, type: string): JsonObject | undefined {
  const status = isJsonObject(rule.status) ? rule.status : {};
  const conditions = Array.isArray(status.conditions) ? status.conditions : [];
  return conditions.find((c): c is JsonObject => isJsonObject(c) && c.type === type);
}

/** The ReferenceMissing condition `rule` should carry, given its problems; undefined when it never had one. */
export function referenceMissingCondition(
  rule: JsonObject,
  problems: readonly string[],
  generation: number | undefined,
): RuleCondition | undefined {
  const base = generation === undefined ? {} : { observedGeneration: generation };
  if (problems.length > 0)
    return {
      type: REFERENCE_MISSING,
      status: 'True',
      reason: problems.some((p) => p.includes(': cannot read ') || p.startsWith('syntheticRefs.owner:'))
        ? 'Unreadable'
        : 'NotFound',
      message: problems.join('; '),
      ...base,
    };
  if (!current(rule, REFERENCE_MISSING)) return undefined;
  return {
    type: REFERENCE_MISSING,
    status: 'False',
    reason: 'Found',
    message: 'every reference is found',
    ...base,
  };
}

/** Whether the rule's status already carries `want` (lastTransitionTime aside). */
export function conditionUpToDate(rule: JsonObject, want: RuleCondition): boolean {
  const have = current(rule, want.type);
  return (
    !!have &&
    have.status === want.status &&
    have.reason === want.reason &&
    have.message === want.message &&
    have.observedGeneration === want.observedGeneration
  );
}

/** `want` with its lastTransitionTime: kept while the status stays the same, else now. */
export function withTransitionTime(rule: JsonObject, want: RuleCondition, now: string): JsonObject {
  const have = current(rule, want.type);
  const lastTransitionTime =
    have && have.status === want.status && typeof have.lastTransitionTime === 'string'
      ? have.lastTransitionTime
      : now;
  return { ...want, lastTransitionTime };
}
