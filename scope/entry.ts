import { createHash } from 'node:crypto';
import { isJsonObject, JsonObject, JsonValue } from '../util/json';
import type { LabelSelector, LabelSelectorRequirement } from '../rule/labelselector';
import { MatchCondition, Scope, RuleScope, WebhookRule } from './types';
import { DRAGNET_WEBHOOK } from '../kube/owned';

/** The dragnet webhook's name in the mutating configuration. */

function strings(v: JsonValue | undefined): string[] {
  return Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : [];
}

function ruleOf(v: JsonValue): WebhookRule | null {
  if (!isJsonObject(v)) return null;
  const scope = v.scope === 'Cluster' || v.scope === 'Namespaced' ? v.scope : '*';
  return {
    apiGroups: strings(v.apiGroups),
    apiVersions: strings(v.apiVersions),
    resources: strings(v.resources),
    operations: strings(v.operations),
    scope: scope as RuleScope,
  };
}

function selectorOf(v: JsonValue | undefined): LabelSelector {
  if (!isJsonObject(v)) return {};
  const out: LabelSelector = {};
  if (isJsonObject(v.matchLabels)) {
    const labels: Record<string, string> = {};
    for (const [k, val] of Object.entries(v.matchLabels)) if (typeof val === 'string') labels[k] = val;
    if (Object.keys(labels).length > 0) out.matchLabels = labels;
  }
  if (Array.isArray(v.matchExpressions)) {
    const exprs: LabelSelectorRequirement[] = [];
    for (const e of v.matchExpressions) {
      if (!isJsonObject(e) || typeof e.key !== 'string' || typeof e.operator !== 'string') continue;
      const req: LabelSelectorRequirement = {
        key: e.key,
        operator: e.operator as LabelSelectorRequirement['operator'],
      };
      if (Array.isArray(e.values)) req.values = strings(e.values);
      exprs.push(req);
    }
    if (exprs.length > 0) out.matchExpressions = exprs;
  }
  return out;
}

function conditionsOf(v: JsonValue | undefined): MatchCondition[] {
  if (!Array.isArray(v)) return [];
  return v.flatMap((c) =>
    isJsonObject(c) && typeof c.name === 'string' && typeof c.expression === 'string'
      ? [{ name: c.name, expression: c.expression }]
      : [],
  );
}

/** The registration of one webhook entry, with the API server's defaults (scope `*`, empty selector) filled in. */
export function readScope(webhook: JsonObject): Scope {
  return {
    rules: (Array.isArray(webhook.rules) ? webhook.rules : []).flatMap((r) => ruleOf(r) ?? []),
    namespaceSelector: selectorOf(webhook.namespaceSelector),
    matchConditions: conditionsOf(webhook.matchConditions),
  };
}

/** The registration as JSON, in a fixed key order (hashes and annotations). */
export function scopeJson(reg: Scope): JsonObject {
  return {
    rules: reg.rules.map((r) => ({
      apiGroups: r.apiGroups,
      apiVersions: r.apiVersions,
      operations: r.operations,
      resources: r.resources,
      scope: r.scope,
    })),
    namespaceSelector: reg.namespaceSelector as JsonObject,
    matchConditions: reg.matchConditions.map((c) => ({ name: c.name, expression: c.expression })),
  };
}

/** A short hash of a registration: tells the operator's own writes from anyone else's. */
export function scopeHash(reg: Scope): string {
  return createHash('sha256')
    .update(JSON.stringify(scopeJson(reg)))
    .digest('hex')
    .slice(0, 32);
}

/** The registration parsed back from scopeJson (the configured-net annotation). */
export function parseScope(text: string): Scope | null {
  try {
    const v: unknown = JSON.parse(text);
    return isJsonObject(v) ? readScope(v) : null;
  } catch {
    return null;
  }
}

/** The dragnet webhook entry of a MutatingWebhookConfiguration and its index, or null. */
export function dragnetOf(
  config: JsonObject,
  name = DRAGNET_WEBHOOK,
): { webhook: JsonObject; index: number } | null {
  const hooks = Array.isArray(config.webhooks) ? config.webhooks : [];
  const index = hooks.findIndex((h) => isJsonObject(h) && h.name === name);
  return index < 0 ? null : { webhook: hooks[index] as JsonObject, index };
}

/** The webhook entry with its registration replaced by `reg` (everything else kept). */
export function withScope(webhook: JsonObject, reg: Scope): JsonObject {
  const json = scopeJson(reg);
  const out: JsonObject = { ...webhook, rules: json.rules, namespaceSelector: json.namespaceSelector };
  if (reg.matchConditions.length > 0) out.matchConditions = json.matchConditions;
  else delete out.matchConditions;
  return out;
}
