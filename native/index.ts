export { compileNative } from './compile';
export type { NativeCompilation, NativeFit, NativeMisfit, NativeOptions, NativeReason } from './compile';
export { defaultDragnetScope, dragnetScopeOf, DRAGNET_RESOURCES, DRAGNET_WEBHOOK } from './dragnet';
export type { DragnetScope } from './dragnet';
export {
  policyBinding,
  policyCollection,
  policyName,
  policyPath,
  POLICY_API_VERSION,
  RULE_ANNOTATION,
} from './policy';
export { originalOf, residualRule } from './residual';
export { overlaps, writeAffects } from './effects';
export type { Guards } from './guard';
export type { Read } from './select';
export type { OperationEffect, Pattern } from './patch';
