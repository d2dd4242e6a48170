import { compileTemplate, CompiledTemplate } from '../template';
import type { SafeRegex } from '../util/regex';
import { isJsonObject, JsonObject } from '../util/json';
import { Interner } from '../util/interner';
import {
  AdmissionOperation,
  ENFORCEMENT_ACTIONS,
  EnforcementAction,
  MAX_EXECUTION_TIER,
  MIN_EXECUTION_TIER,
  ModRule,
  MODRULE_API_VERSION,
  MODRULE_KIND,
} from './types';
import type { ValidationProblem } from './problems';
import { CompiledLabelSelector, compileLabelSelector } from './labelselector';
import {
  CompiledMatchItem,
  CompiledPatchOperation,
  CompiledRule,
  CompileOptions,
  InvalidModRuleError,
  RuleReferences,
} from './compiled';
import { compileReferences, DEFAULT_REFERENCE_POLICY, isSecretKind, ReferenceDecl } from './references';
import { ruleOwnerReads } from './reads';
import { describe, Report, tryRegex, tryTemplate, unknownField } from './field-checks';
import { compileMatchItem } from './compile-match';
import { compilePatchOperation } from './compile-patch';
import { DEFAULT_OPERATIONS, internedRule } from './interned-rule';

/*
 * Compiling a ModRule checks every field and builds what the engine runs in one pass (analyzeModRule). The parts:
 * compiled.ts (the compiled types), field-checks.ts (field-level checks and messages), compile-match.ts
 * (spec.match items), compile-patch.ts (spec.patch operations), interned-rule.ts (rule objects over shared bodies).
 */
export type {
  CompiledMatchItem,
  CompiledPatchOperation,
  CompiledRule,
  CompiledValue,
  CompileOptions,
  PathToken,
  RuleReferences,
} from './compiled';
export { InvalidModRuleError } from './compiled';
export { placeholderCapacity, preprocessValueTemplate } from './compile-patch';

const SPEC_FIELDS = new Set([
  'type',
  'admissionOperations',
  'executionTier',
  'match',
  'patch',
  'rejectMessage',
  'targetNamespaceRegex',
  'targetNamespaceSelector',
  'references',
  'enforcementAction',
]);
const OPERATIONS: readonly AdmissionOperation[] = ['CREATE', 'UPDATE', 'DELETE'];
// Reject messages are shared by text across rules and rule versions (they are immutable).
const rejectMessages = new Interner<CompiledTemplate>();
const sharedReferences = new Interner<RuleReferences>();

/** Compiles a ModRule (namespace taken from metadata, '' when absent); throws InvalidModRuleError. */
export function compileModRule(rule: ModRule): CompiledRule {
  const { rule: compiled, problems } = analyzeModRule(rule);
  if (!compiled) throw new InvalidModRuleError(problems);
  return compiled;
}

/** Validates and compiles in one pass: every problem found, and the compiled rule when there are none. */
export function analyzeModRule(
  obj: unknown,
  options: CompileOptions = {},
): { rule?: CompiledRule; problems: ValidationProblem[] } {
  const problems: ValidationProblem[] = [];
  const problem: Report = Object.assign(
    (field: string, message: string): void => {
      problems.push({ field, message });
    },
    { count: () => problems.length },
  );

  if (!isJsonObject(obj)) {
    problem('', 'a ModRule must be an object');
    return { problems };
  }
  if (obj.apiVersion !== MODRULE_API_VERSION) {
    problem('apiVersion', `must be ${MODRULE_API_VERSION}, got ${describe(obj.apiVersion)}`);
  }
  if (obj.kind !== MODRULE_KIND) problem('kind', `must be ${MODRULE_KIND}, got ${describe(obj.kind)}`);

  let namespace = '';
  let name = '';
  const metadata = obj.metadata;
  if (!isJsonObject(metadata)) {
    problem('metadata', 'required');
  } else {
    if (typeof metadata.name !== 'string' || metadata.name === '') problem('metadata.name', 'required');
    else name = metadata.name;
    if (metadata.namespace !== undefined && metadata.namespace !== null) {
      if (typeof metadata.namespace !== 'string') problem('metadata.namespace', 'must be a string');
      else namespace = metadata.namespace;
    }
  }

  const spec = obj.spec;
  if (!isJsonObject(spec)) {
    problem('spec', 'required');
    return { problems };
  }
  for (const key of Object.keys(spec)) {
    if (!SPEC_FIELDS.has(key)) problem(`spec.${key}`, unknownField(key, SPEC_FIELDS));
  }

  const type = spec.type;
  if (type !== 'Patch' && type !== 'Reject')
    problem('spec.type', `must be Patch or Reject, got ${describe(type)}`);

  const operations = operationsOf(spec, problem);
  const tier = tierOf(spec, problem);
  const enforcement = enforcementOf(spec, problem);

  const match: CompiledMatchItem[] = [];
  const itemKeys: string[] = [];
  const rawMatch = spec.match;
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

  const patch: CompiledPatchOperation[] = [];
  const rawPatch = spec.patch;
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

  let rejectMessage: CompiledTemplate | undefined;
  const rawMessage = spec.rejectMessage;
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

  let targetNamespaceRegex: SafeRegex | undefined;
  const rawTarget = spec.targetNamespaceRegex;
  if (rawTarget !== undefined && rawTarget !== null) {
    if (typeof rawTarget !== 'string') problem('spec.targetNamespaceRegex', 'must be a string');
    else if (rawTarget !== '')
      targetNamespaceRegex = tryRegex(rawTarget, 'spec.targetNamespaceRegex', problem);
  }

  let targetNamespaceSelector: CompiledLabelSelector | undefined;
  if (spec.targetNamespaceSelector !== undefined && spec.targetNamespaceSelector !== null) {
    targetNamespaceSelector = compileLabelSelector(
      spec.targetNamespaceSelector,
      'spec.targetNamespaceSelector',
      problem,
    );
  }

  let named: ReferenceDecl[] = [];
  if (spec.references !== undefined && spec.references !== null) {
    const policy = options.references ?? DEFAULT_REFERENCE_POLICY;
    named = compileReferences(spec.references, namespace, policy, problem) ?? [];
  }

  if (problems.length > 0) return { problems };
  return {
    problems,
    rule: internedRule(
      namespace,
      name,
      {
        type: type as 'Patch' | 'Reject',
        tier,
        operations,
        enforcement,
        match,
        rejectMessage,
        targetNamespaceRegex,
        targetNamespaceSelector,
      },
      itemKeys,
      spec.targetNamespaceSelector,
      patch,
      options.keepSource === false ? undefined : (obj as unknown as ModRule),
      referencesOf(named, match, patch, rejectMessage),
    ),
  };
}

/** What the rule reads besides its object; undefined for the many rules that read nothing else. */
function referencesOf(
  named: readonly ReferenceDecl[],
  match: readonly CompiledMatchItem[],
  patch: readonly CompiledPatchOperation[],
  rejectMessage: CompiledTemplate | undefined,
): RuleReferences | undefined {
  const owner = ruleOwnerReads(match, patch, rejectMessage);
  if (named.length === 0 && owner.levels === 0) return undefined;
  // Rules with equal references share one object: a request looks them up once for all of them.
  const key = JSON.stringify([owner, named.map(({ selector: _s, ...rest }) => rest)]);
  return sharedReferences.get(key, () => ({
    named,
    owner,
    secrets: named.some((d) => isSecretKind(d.group, d.kind)),
  }));
}

/** spec.admissionOperations as a set (KubeMod's default when absent or empty); problems reported. */
function operationsOf(spec: JsonObject, problem: Report): ReadonlySet<AdmissionOperation> {
  const ops = spec.admissionOperations;
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

/** spec.executionTier (0 when absent); problems reported. */
function tierOf(spec: JsonObject, problem: Report): number {
  const rawTier = spec.executionTier;
  if (rawTier === undefined || rawTier === null) return 0;
  if (typeof rawTier !== 'number' || !Number.isInteger(rawTier)) {
    problem('spec.executionTier', `must be an integer, got ${describe(rawTier)}`);
    return 0;
  }
  if (rawTier < MIN_EXECUTION_TIER || rawTier > MAX_EXECUTION_TIER) {
    problem(
      'spec.executionTier',
      `must be between ${MIN_EXECUTION_TIER} and ${MAX_EXECUTION_TIER}, got ${rawTier}`,
    );
    return 0;
  }
  return rawTier;
}

/** spec.enforcementAction (Enforce when absent); an unknown value reported with the allowed ones. */
function enforcementOf(spec: JsonObject, problem: Report): EnforcementAction {
  const rawAction = spec.enforcementAction;
  if (rawAction === undefined || rawAction === null) return 'Enforce';
  if (typeof rawAction === 'string' && (ENFORCEMENT_ACTIONS as readonly string[]).includes(rawAction))
    return rawAction as EnforcementAction;
  problem(
    'spec.enforcementAction',
    `must be one of ${ENFORCEMENT_ACTIONS.join(', ')}, got ${describe(rawAction)}`,
  );
  return 'Enforce';
}
