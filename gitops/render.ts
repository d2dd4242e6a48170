import { JsonObject } from '../util/json';
import { IgnoreEntry } from './paths';

// The ignore rules of each GitOps tool, as the part of its object that holds them: a merge patch for an Argo CD
// Application (spec.ignoreDifferences), a Flux Kustomization (spec.ignore, kustomize-controller API v1.9+) or a
// Flux HelmRelease (spec.driftDetection.ignore, helm-controller API v2). Field names as the tools' CRDs have them.

/** Argo CD Application spec.ignoreDifferences: group (omitted for the core group), kind, jsonPointers, jq paths. */
export function argoIgnoreDifferences(entries: readonly IgnoreEntry[]): JsonObject[] {
  return entries.map((e) => ({
    ...(e.target.group === '' ? {} : { group: e.target.group }),
    kind: e.target.kind,
    ...(e.jsonPointers.length > 0 ? { jsonPointers: [...e.jsonPointers] } : {}),
    ...(e.jqPathExpressions.length > 0 ? { jqPathExpressions: [...e.jqPathExpressions] } : {}),
  }));
}

/** Flux ignore rules (Kustomization spec.ignore, HelmRelease spec.driftDetection.ignore): paths and a target. */
export function fluxIgnoreRules(entries: readonly IgnoreEntry[]): JsonObject[] {
  return entries.map((e) => {
    const target: JsonObject = {
      ...(e.target.group === '' || e.target.group === '*' ? {} : { group: e.target.group }),
      ...(e.target.kind === '*' ? {} : { kind: e.target.kind }),
    };
    return { paths: [...e.pointers], ...(Object.keys(target).length > 0 ? { target } : {}) };
  });
}

/** The Flux objects that take ignore rules. */
export type FluxTarget = 'kustomization' | 'helmrelease';

/** The merge patch that sets a tool's ignore rules. */
export function ignorePatch(tool: 'argocd' | FluxTarget, entries: readonly IgnoreEntry[]): JsonObject {
  if (tool === 'argocd') return { spec: { ignoreDifferences: argoIgnoreDifferences(entries) } };
  const ignore = fluxIgnoreRules(entries);
  // A HelmRelease compares with the cluster only when drift detection is on; its ignore rules apply then.
  return tool === 'kustomization'
    ? { spec: { ignore } }
    : { spec: { driftDetection: { mode: 'enabled', ignore } } };
}
