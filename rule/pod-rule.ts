import type { CompiledTemplate } from '../template';
import type { SafeRegex } from '../util/regex';
import type { AdmissionOperation, EnforcementAction, ModRule } from './types';
import type { CompiledLabelSelector } from './labelselector';
import type {
  CompiledMatchItem,
  CompiledPatchOperation,
  CompiledRule,
  PodTemplateAt,
  RuleReferences,
} from './compiled';

/*
 * A Pod rule with spec.podControllers holds its variants, and each variant says which controller it is for: both
 * wrap a compiled rule (interned as any other) and read everything else through to it.
 */
class PodRule implements CompiledRule {
  constructor(
    private readonly base: CompiledRule,
    readonly podController: PodTemplateAt | undefined,
    readonly variants: readonly CompiledRule[] | undefined,
  ) {}

  get namespace(): string {
    return this.base.namespace;
  }
  get name(): string {
    return this.base.name;
  }
  get key(): string {
    return this.base.key;
  }
  get type(): 'Patch' | 'Reject' {
    return this.base.type;
  }
  get tier(): number {
    return this.base.tier;
  }
  get operations(): ReadonlySet<AdmissionOperation> {
    return this.base.operations;
  }
  get enforcement(): EnforcementAction {
    return this.base.enforcement;
  }
  get source(): ModRule | undefined {
    return this.base.source;
  }
  get match(): readonly CompiledMatchItem[] {
    return this.base.match;
  }
  get patch(): readonly CompiledPatchOperation[] {
    return this.base.patch;
  }
  get rejectMessage(): CompiledTemplate | undefined {
    return this.base.rejectMessage;
  }
  get targetNamespaceRegex(): SafeRegex | undefined {
    return this.base.targetNamespaceRegex;
  }
  get targetNamespaceSelector(): CompiledLabelSelector | undefined {
    return this.base.targetNamespaceSelector;
  }
  get references(): RuleReferences | undefined {
    return this.base.references;
  }
}

/** The Pod rule holding its controller variants. */
export function withVariants(rule: CompiledRule, variants: readonly CompiledRule[]): CompiledRule {
  return new PodRule(rule, undefined, Object.freeze([...variants]));
}

/** A compiled variant marked as the rule's variant for one controller kind. */
export function asVariant(rule: CompiledRule, at: PodTemplateAt): CompiledRule {
  return new PodRule(rule, at, undefined);
}
