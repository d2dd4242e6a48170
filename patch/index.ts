export { parsePointer, formatPointer, escapeToken } from './pointer';
export type { JsonPatchOperation } from './operation';
export { PatchError } from './operation';
export { applyKubeModOperation, MAX_ARRAY_PADDING } from './kubemod';
export { createPatch } from './diff';
export { applyPatch } from './rfc6902';
