import { CompiledTemplate } from '../template';
import { isJsonObject, JsonObject, JsonValue } from '../util/json';
import { Interner } from '../util/interner';
import { ModRule, MODRULE_API_VERSION, MODRULE_KIND } from './types';
import { formatProblems, ValidationProblem } from './problems';
import { CompiledLabelSelector, compileLabelSelector } from './labelselector';
import {
  CompiledMatchItem,
  CompiledPatchOperation,
  CompiledRule,
  CompileOptions,
  InvalidModRuleError,
  PodTemplateAt,
  RuleReferences,
} from './compiled';
import { compileReferences, DEFAULT_REFERENCE_POLICY, isSecretKind, ReferenceDecl } from './references';
import { ruleOwnerReads } from './reads';
import { describe, Report, unknownField } from './field-checks';
import {
  enforcementOf,
  matchOf,
  namespaceRegexOf,
  operationsOf,
  patchOf,
  rejectMessageOf,
  tierOf,
} from './compile-fields';
import { internedRule } from './interned-rule';
import { compileMatchItem } from './compile-match';
import { markerMatchItem, podControllerKinds } from './pod-controllers';
import { podVariantSpecs, PodRuleParts } from './pod-variants';
import { asVariant, withVariants } from './pod-rule';

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
  PodTemplateAt,
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
  'podControllers',
  'enforcementAction',
]);
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

  const { namespace, name } = identityOf(obj.metadata, problem);

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

  const operations = operationsOf(spec.admissionOperations, problem);
  const tier = tierOf(spec.executionTier, problem);
  const enforcement = enforcementOf(spec.enforcementAction, problem);

  const { match, itemKeys } = matchOf(spec.match, problem);
  const patch = patchOf(spec.patch, type, problem);
  const rejectMessage = rejectMessageOf(spec.rejectMessage, type, problem);
  const targetNamespaceRegex = namespaceRegexOf(spec.targetNamespaceRegex, problem);
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

  const controllers = podControllerKinds(spec.podControllers, problem);
  if (problems.length > 0) return { problems };
  // A Pod rule reaching controllers: its variants, and the Pod rule skips pods of a template it patched.
  let variants: CompiledRule[] | undefined;
  if (controllers.length > 0) {
    const parts = { namespace, name, spec, match, patch, rejectMessage: rejectMessage?.source };
    variants = compileVariants(obj, parts, controllers, options, problem);
    if (problems.length > 0) return { problems };
    if (type === 'Patch') {
      const marker = compileMatchItem(markerMatchItem(namespace, name), 'spec.match', problem);
      if (marker) {
        match.push(marker.item);
        itemKeys.push(marker.key);
      }
    }
  }
  const rule = internedRule(
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
  );
  return { problems, rule: variants ? withVariants(rule, variants) : rule };
}

/** metadata.name (required) and metadata.namespace ('' when absent). */
function identityOf(metadata: JsonValue | undefined, problem: Report): { namespace: string; name: string } {
  let namespace = '';
  let name = '';
  if (!isJsonObject(metadata)) {
    problem('metadata', 'required');
    return { namespace, name };
  }
  if (typeof metadata.name !== 'string' || metadata.name === '') problem('metadata.name', 'required');
  else name = metadata.name;
  if (metadata.namespace !== undefined && metadata.namespace !== null) {
    if (typeof metadata.namespace !== 'string') problem('metadata.namespace', 'must be a string');
    else namespace = metadata.namespace;
  }
  return { namespace, name };
}

/** A Pod rule's variant per controller kind, each compiled as a rule of its own; problems reported. */
function compileVariants(
  obj: JsonObject,
  parts: PodRuleParts,
  controllers: readonly PodTemplateAt[],
  options: CompileOptions,
  problem: Report,
): CompiledRule[] {
  const specs = podVariantSpecs(parts, controllers, problem);
  return specs.flatMap((spec, i) => {
    if (!spec) return [];
    const { rule, problems } = analyzeModRule({ ...obj, spec }, options);
    if (rule) return [asVariant(rule, controllers[i])];
    problem('spec.podControllers', `the ${controllers[i].kind} variant: ${formatProblems(problems)}`);
    return [];
  });
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
