import type { CompiledTemplate } from '../template';
import type { SafeRegex } from '../util/regex';
import type { JsonValue } from '../util/json';
import { Interner } from '../util/interner';
import type { AdmissionOperation, EnforcementAction, ModRule } from './types';
import type { CompiledLabelSelector } from './labelselector';
import type { CompiledMatchItem, CompiledPatchOperation, CompiledRule, RuleReferences } from './compiled';

/*
 * Compiled rules share what they can: rules generated from one template (GitOps) differ only in their identity and
 * patch paths, so each holds its name, its patch operations and a pointer to one interned body.
 */

/** What rules with the same spec apart from their patch paths share (immutable, interned). */
export interface RuleBody {
  readonly type: 'Patch' | 'Reject';
  readonly tier: number;
  readonly operations: ReadonlySet<AdmissionOperation>;
  readonly enforcement: EnforcementAction;
  readonly match: readonly CompiledMatchItem[];
  readonly rejectMessage?: CompiledTemplate;
  readonly targetNamespaceRegex?: SafeRegex;
  readonly targetNamespaceSelector?: CompiledLabelSelector;
}

/**
 * A compiled rule as servers hold it: its identity, its patch operations and a pointer to the shared body. The
 * rest of CompiledRule reads through to the body (getters the engine's calls inline), and `key` is made on demand.
 */
class Rule implements CompiledRule {
  constructor(
    readonly namespace: string,
    readonly name: string,
    private readonly body: RuleBody,
    readonly patch: readonly CompiledPatchOperation[],
    readonly references: RuleReferences | undefined,
  ) {}

  get key(): string {
    return `${this.namespace}/${this.name}`;
  }
  get type(): 'Patch' | 'Reject' {
    return this.body.type;
  }
  get tier(): number {
    return this.body.tier;
  }
  get operations(): ReadonlySet<AdmissionOperation> {
    return this.body.operations;
  }
  get enforcement(): EnforcementAction {
    return this.body.enforcement;
  }
  get match(): readonly CompiledMatchItem[] {
    return this.body.match;
  }
  get rejectMessage(): CompiledTemplate | undefined {
    return this.body.rejectMessage;
  }
  get targetNamespaceRegex(): SafeRegex | undefined {
    return this.body.targetNamespaceRegex;
  }
  get targetNamespaceSelector(): CompiledLabelSelector | undefined {
    return this.body.targetNamespaceSelector;
  }
  get source(): ModRule | undefined {
    return undefined;
  }
}

/** A rule that keeps the object it was compiled from (the CLI's explain, lint and validate read it). */
class SourcedRule extends Rule {
  constructor(
    namespace: string,
    name: string,
    body: RuleBody,
    patch: readonly CompiledPatchOperation[],
    references: RuleReferences | undefined,
    private readonly from: ModRule,
  ) {
    super(namespace, name, body, patch, references);
  }

  override get source(): ModRule {
    return this.from;
  }
}

const NO_PATCH: readonly CompiledPatchOperation[] = Object.freeze([]);

/** The operations a rule without admissionOperations (or with an empty list) applies to. */
export const DEFAULT_OPERATIONS: ReadonlySet<AdmissionOperation> = new Set<AdmissionOperation>([
  'CREATE',
  'UPDATE',
]);

// Few distinct admissionOperations sets exist (subsets of three): one Set object each.
const operationSets = new Map<string, ReadonlySet<AdmissionOperation>>([
  ['CREATE,UPDATE', DEFAULT_OPERATIONS],
]);
function sharedOperations(ops: ReadonlySet<AdmissionOperation>): ReadonlySet<AdmissionOperation> {
  const key = [...ops].sort().join(',');
  const seen = operationSets.get(key);
  if (seen) return seen;
  operationSets.set(key, ops);
  return ops;
}

// Numbers for interned objects that appear in interning keys (held weakly: a gone object's number goes with it).
const ids = new WeakMap<object, number>();
let nextId = 0;
function identity(o: object): number {
  let id = ids.get(o);
  if (id === undefined) ids.set(o, (id = nextId++));
  return id;
}

const bodies = new Interner<RuleBody>();

/**
 * A compiled rule over the body shared by every rule of the same shape. `itemKeys` names the interned match items
 * and `selector` is the targetNamespaceSelector as written (both part of the body's key); `source`, when given, is
 * kept for the CLI; `references`, when the rule reads other objects, is its own.
 */
export function internedRule(
  namespace: string,
  name: string,
  parts: RuleBody,
  itemKeys: readonly string[],
  selector: JsonValue | undefined,
  patch: readonly CompiledPatchOperation[],
  source: ModRule | undefined,
  references?: RuleReferences,
): CompiledRule {
  const {
    type,
    tier,
    operations,
    enforcement,
    match,
    rejectMessage,
    targetNamespaceRegex,
    targetNamespaceSelector,
  } = parts;
  // One body object per distinct shape (criteria list exact-size, as arrays built by push() carry spare capacity).
  // A short key (one per distinct body is kept): the texts that may hold "|" come last, JSON-quoted.
  const bodyKey = [
    type,
    tier,
    operations === DEFAULT_OPERATIONS ? '' : [...operations].sort().join(','),
    itemKeys.join(','),
    rejectMessage ? identity(rejectMessage) : '',
    targetNamespaceRegex ? JSON.stringify(targetNamespaceRegex.source) : '',
    targetNamespaceSelector ? JSON.stringify(selector) : '',
    enforcement === 'Enforce' ? '' : enforcement,
  ].join('|');
  const body = bodies.get(bodyKey, () => ({
    type,
    tier,
    operations: sharedOperations(operations),
    enforcement,
    match: match.slice(),
    rejectMessage,
    targetNamespaceRegex,
    targetNamespaceSelector,
  }));
  const held = patch.length === 0 ? NO_PATCH : patch.slice();
  return source === undefined
    ? new Rule(namespace, name, body, held, references)
    : new SourcedRule(namespace, name, body, held, references, source);
}
