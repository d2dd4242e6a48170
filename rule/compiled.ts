import type { CompiledJsonPath } from '../jsonpath';
import type { CompiledTemplate } from '../template';
import type { SafeRegex } from '../util/regex';
import type { JsonValue } from '../util/json';
import type { AdmissionOperation, EnforcementAction, MatchFor, ModRule, PatchOperationType } from './types';
import type { ValidationProblem } from './problems';
import type { CompiledLabelSelector } from './labelselector';
import type { ReferenceDecl, ReferencePolicy } from './references';

/** One compiled criteria item of spec.match. */
export interface CompiledMatchItem {
  readonly select: CompiledJsonPath;
  readonly matchValue?: string;
  readonly matchValues?: readonly string[];
  /** matchValues as a Set when the list is long (VALUE_SET_FROM entries or more): built once, when compiled. */
  readonly valueSet?: ReadonlySet<string>;
  readonly matchRegex?: SafeRegex;
  readonly matchFor: MatchFor;
  readonly negate: boolean;
}

/**
 * A matchValues list this long or longer is also kept as a Set (KubeMod sets no limit: 100,000 values made a
 * request build one, uncounted, in the middle of a rule).
 */
export const VALUE_SET_FROM = 16;

/** A path token: literal text, or text with `#N` placeholders (numbers) to fill from a select's captured indices. */
export type PathToken = string | ReadonlyArray<string | number>;

/** How an operation's value is produced: nothing (remove), a constant parsed once, or a template rendered per result. */
export type CompiledValue =
  | { readonly kind: 'none' }
  | { readonly kind: 'constant'; readonly value: JsonValue }
  | { readonly kind: 'template'; readonly template: CompiledTemplate };

/** One compiled operation of spec.patch. */
export interface CompiledPatchOperation {
  readonly op: PatchOperationType;
  readonly path: string;
  readonly tokens: readonly PathToken[];
  readonly hasPlaceholders: boolean;
  readonly select?: CompiledJsonPath;
  readonly value: CompiledValue;
}

/**
 * A ModRule compiled once per version: everything the engine needs without re-parsing rule text. `source` is the
 * object it was compiled from (not copied), for the CLI's explain/lint/validate; stores of the servers compile
 * without it (`keepSource: false`), so the operator does not hold every listed ModRule object through its rule.
 */
export interface CompiledRule {
  readonly namespace: string;
  readonly name: string;
  /** "namespace/name", the rule's identity in logs and messages. */
  readonly key: string;
  readonly type: 'Patch' | 'Reject';
  readonly tier: number;
  readonly operations: ReadonlySet<AdmissionOperation>;
  /** spec.enforcementAction: Warn and DryRun rules run as the others, their outcome is recorded, not applied. */
  readonly enforcement: EnforcementAction;
  readonly source?: ModRule;
  readonly match: readonly CompiledMatchItem[];
  readonly patch: readonly CompiledPatchOperation[];
  readonly rejectMessage?: CompiledTemplate;
  /** Compiled targetNamespaceRegex; undefined when the field is absent or empty. */
  readonly targetNamespaceRegex?: SafeRegex;
  /** Compiled targetNamespaceSelector (labels of the object's Namespace); undefined when absent. */
  readonly targetNamespaceSelector?: CompiledLabelSelector;
  /** What it reads besides the object (spec.references, syntheticRefs.owner); undefined for most rules. */
  readonly references?: RuleReferences;
  /**
   * A Pod rule's variant for one controller kind (spec.podControllers): where the controller's pod template is.
   * Its selects and paths are moved under the template; its templates see the pod as the template describes it.
   */
  readonly podController?: PodTemplateAt;
  /** The Pod rule's variants, one per controller kind of spec.podControllers (on the Pod rule itself). */
  readonly variants?: readonly CompiledRule[];
}

/** A controller kind and where its pod template is (`spec.template`, a CronJob's `spec.jobTemplate.spec.template`). */
export interface PodTemplateAt {
  readonly kind: string;
  readonly apiVersion: string;
  readonly template: readonly string[];
}

/** What a rule reads of its object's owner chain (rule/reads.ts). */
export interface OwnerReads {
  /** How many levels of syntheticRefs.owner (0: none). */
  readonly levels: number;
  /** 'metadata' when only apiVersion, kind and metadata of the owners are read. */
  readonly fields: 'metadata' | 'all';
}

/** The other objects a rule reads: its named references and its object's owner chain. */
export interface RuleReferences {
  readonly named: readonly ReferenceDecl[];
  readonly owner: OwnerReads;
  /** It may read a Secret: its messages are withheld from logs, warnings, Events and reports. */
  readonly secrets: boolean;
}

/** Thrown by compileModRule for a rule that does not validate. */
export class InvalidModRuleError extends Error {
  constructor(readonly problems: ValidationProblem[]) {
    super(problems.map((p) => `${p.field}: ${p.message}`).join('; '));
  }
}

/** Compile options: `keepSource: false` leaves CompiledRule.source out (what a server holds per rule). */
export interface CompileOptions {
  readonly keepSource?: boolean;
  /** What spec.references may name (default: DEFAULT_REFERENCE_POLICY). */
  readonly references?: ReferencePolicy;
}
