import { compileTemplate, CompiledTemplate } from '../template';
import type { SafeRegex } from '../util/regex';
import { JsonValue } from '../util/json';
import { Interner } from '../util/interner';
import {
  AdmissionOperation,
  ENFORCEMENT_ACTIONS,
  EnforcementAction,
  MAX_EXECUTION_TIER,
  MIN_EXECUTION_TIER,
} from './types';
import type { CompiledMatchItem, CompiledPatchOperation } from './compiled';
import { describe, Report, tryRegex, tryTemplate } from './field-checks';
import { compileMatchItem } from './compile-match';
import { compilePatchOperation } from './compile-patch';
import { DEFAULT_OPERATIONS } from './interned-rule';

// The fields of a ModRule's spec, each read and compiled on its own (rule/compile.ts puts them together).

const OPERATIONS: readonly AdmissionOperation[] = ['CREATE', 'UPDATE', 'DELETE'];
// Reject messages are shared by text across rules and rule versions (they are immutable).
const rejectMessages = new Interner<CompiledTemplate>();

/** spec.admissionOperations read (default CREATE and UPDATE; an empty list too, as KubeMod). */
export function operationsOf(ops: JsonValue | undefined, problem: Report): ReadonlySet<AdmissionOperation> {
  if (ops === undefined || ops === null) return DEFAULT_OPERATIONS;
  if (!Array.isArray(ops)) {
    problem('spec.admissionOperations', 'must be a list of CREATE, UPDATE, DELETE');
    return DEFAULT_OPERATIONS;
  }
  if (ops.length === 0) return DEFAULT_OPERATIONS;
  const set = new Set<AdmissionOperation>();
  ops.forEach((o, i) => {
    if (typeof o === 'string' && (OPERATIONS as readonly string[]).includes(o))
      set.add(o as AdmissionOperation);
    else
      problem(`spec.admissionOperations[${i}]`, `must be one of CREATE, UPDATE, DELETE, got ${describe(o)}`);
  });
  return set;
}

/** spec.executionTier read (default 0). */
export function tierOf(rawTier: JsonValue | undefined, problem: Report): number {
  if (rawTier === undefined || rawTier === null) return 0;
  if (typeof rawTier !== 'number' || !Number.isInteger(rawTier)) {
    problem('spec.executionTier', `must be an integer, got ${describe(rawTier)}`);
  } else if (rawTier < MIN_EXECUTION_TIER || rawTier > MAX_EXECUTION_TIER) {
    problem(
      'spec.executionTier',
      `must be between ${MIN_EXECUTION_TIER} and ${MAX_EXECUTION_TIER}, got ${rawTier}`,
    );
  } else {
    return rawTier;
  }
  return 0;
}

/** spec.enforcementAction read (default Enforce); an unknown value reported with the allowed ones. */
export function enforcementOf(raw: JsonValue | undefined, problem: Report): EnforcementAction {
  if (raw === undefined || raw === null) return 'Enforce';
  if (typeof raw === 'string' && (ENFORCEMENT_ACTIONS as readonly string[]).includes(raw))
    return raw as EnforcementAction;
  problem('spec.enforcementAction', `must be one of ${ENFORCEMENT_ACTIONS.join(', ')}, got ${describe(raw)}`);
  return 'Enforce';
}

/** spec.match compiled, with the interning keys of its items. */
export function matchOf(
  rawMatch: JsonValue | undefined,
  problem: Report,
): { match: CompiledMatchItem[]; itemKeys: string[] } {
  const match: CompiledMatchItem[] = [];
  const itemKeys: string[] = [];
  if (rawMatch === undefined || rawMatch === null) {
    problem('spec.match', 'required: at least one match item');
  } else if (!Array.isArray(rawMatch)) {
    problem('spec.match', 'must be a list of match items');
  } else if (rawMatch.length === 0) {
    problem('spec.match', 'must have at least one item');
  } else {
    rawMatch.forEach((item, i) => {
      const compiled = compileMatchItem(item, `spec.match[${i}]`, problem);
      if (compiled) {
        match.push(compiled.item);
        itemKeys.push(compiled.key);
      }
    });
  }

  return { match, itemKeys };
}

/** spec.patch compiled (required for Patch rules, refused in Reject rules). */
export function patchOf(
  rawPatch: JsonValue | undefined,
  type: JsonValue | undefined,
  problem: Report,
): CompiledPatchOperation[] {
  const patch: CompiledPatchOperation[] = [];
  const patchCount = Array.isArray(rawPatch) ? rawPatch.length : 0;
  if (rawPatch !== undefined && rawPatch !== null && !Array.isArray(rawPatch)) {
    problem('spec.patch', 'must be a list of patch operations');
  } else if (type === 'Patch' && patchCount === 0) {
    problem('spec.patch', 'required for ModRules of type Patch: at least one operation');
  } else if (type === 'Reject' && patchCount > 0) {
    problem('spec.patch', 'only allowed in ModRules of type Patch');
  } else if (Array.isArray(rawPatch)) {
    rawPatch.forEach((item, i) => {
      const compiled = compilePatchOperation(item, `spec.patch[${i}]`, problem);
      if (compiled) patch.push(compiled);
    });
  }

  return patch;
}

/** spec.rejectMessage compiled (Reject rules only). */
export function rejectMessageOf(
  rawMessage: JsonValue | undefined,
  type: JsonValue | undefined,
  problem: Report,
): CompiledTemplate | undefined {
  let rejectMessage: CompiledTemplate | undefined;
  if (rawMessage !== undefined && rawMessage !== null) {
    if (typeof rawMessage !== 'string') problem('spec.rejectMessage', 'must be a string');
    else if (type === 'Patch') problem('spec.rejectMessage', 'only allowed in ModRules of type Reject');
    else
      rejectMessage = tryTemplate(
        () => rejectMessages.get(rawMessage, () => compileTemplate(rawMessage, 'rejectMessage')),
        'spec.rejectMessage',
        problem,
      );
  }

  return rejectMessage;
}

/** spec.targetNamespaceRegex compiled; undefined when absent or empty. */
export function namespaceRegexOf(rawTarget: JsonValue | undefined, problem: Report): SafeRegex | undefined {
  let targetNamespaceRegex: SafeRegex | undefined;
  if (rawTarget !== undefined && rawTarget !== null) {
    if (typeof rawTarget !== 'string') problem('spec.targetNamespaceRegex', 'must be a string');
    else if (rawTarget !== '')
      targetNamespaceRegex = tryRegex(rawTarget, 'spec.targetNamespaceRegex', problem);
  }

  return targetNamespaceRegex;
}
