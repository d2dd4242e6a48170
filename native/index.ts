export { compileNative } from './compile';
export type { NativeCompilation, NativeFit, NativeMisfit, NativeOptions, NativeReason } from './compile';
export { defaultDragnetMatch, dragnetMatchOf, DRAGNET_RESOURCES } from './dragnet';
export type { DragnetMatch } from './dragnet';
export {
  policyBinding,
  policyCollection,
  policyName,
  policyPath,
  POLICY_API_VERSION,
  RULE_ANNOTATION,
  SERVE_ANNOTATION,
} from './policy';
export { effectsOf, interferenceProblem, templateReadsOf } from './interference';
export type { OtherRule, RuleEffects } from './interference';
export { originalOf, residualGuards, residualRule } from './residual';
export { overlaps, writeAffects } from './effects';
export type { Guards } from './guard';
export type { Read } from './select-context';
export type { OperationEffect, Pattern } from './patch';
export {
  PROBE_ANNOTATION,
  PROBED_ANNOTATION,
  probeAnswered,
  probeEvent,
  probeTokenOf,
  tokenOf,
  withProbe,
} from './probe';
export { declineOf, declineOfGuards, MATCH_CONDITIONS_BUDGET, MAX_DECLINE_COST } from './decline';
export type { Decline, DeclineOutcome } from './decline';
