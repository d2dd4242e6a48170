import { JsonValue } from '../util/json';
import { BudgetExhaustedError, RequestBudget } from '../util/budget';
import { CompiledPatchOperation, CompiledRule, PathToken } from '../rule/compile';
import { applyKubeModOperation } from '../patch/kubemod';
import { formatPointer } from '../patch/pointer';
import { parseModRuleValue } from '../rule/value';
import { hasOwn, setOwn } from '../patch/object';
import { messageOf } from '../util/errors';
import { TemplateTarget, templateTarget } from './pod-view';
import { patchField } from '../rule/pod-controllers';

/** A patch operation with its path resolved and its value rendered, ready to apply. */
export interface ResolvedOperation {
  readonly op: 'add' | 'replace' | 'remove';
  readonly tokens: readonly string[];
  readonly value?: JsonValue;
}

/** Thrown when a rule cannot be run against an object; the engine drops that rule's changes as a whole. */
export class RuleRuntimeError extends Error {}

/** Caps on the work one request may cause, so one tenant's rule cannot stall the webhook. */
export const MAX_OPERATIONS_PER_RULE = 10_000;
export const MAX_OPERATIONS_PER_REQUEST = 100_000;

/** Mutable operation allowance shared by all rules of one request. */
export interface Budget {
  remaining: number;
  /** The request's work and time budget, charged by selects, templates, value parsing and operations. */
  request?: RequestBudget;
}

// A budget error is the request's, not the rule's: it passes through the wrapping of rule errors.
function rethrowBudget(err: unknown): void {
  if (err instanceof BudgetExhaustedError) throw err;
}

/**
 * Expands a rule's patch section against `target` (the object as the rule sees it, with syntheticRefs):
 * one operation per select result with #N placeholders filled, values rendered and parsed.
 */
export function resolveOperations(
  rule: CompiledRule,
  target: JsonValue,
  namespace: string,
  budget: Budget,
): ResolvedOperation[] {
  const out: ResolvedOperation[] = [];
  // Built once per rule and object, and only when a value is templated.
  let seen: TemplateTarget | undefined;
  const dataOf = () => (seen ??= templateTarget(rule, target));
  rule.patch.forEach((op, i) => {
    const at = patchField(rule, i);
    if (!op.select) {
      out.push(
        resolveOne(op, op.tokens as readonly string[], dataOf, namespace, null, [], at, budget.request),
      );
    } else {
      let results;
      try {
        results = op.select.select(target, budget.request);
      } catch (err) {
        rethrowBudget(err);
        throw new RuleRuntimeError(`${at}.select: ${messageOf(err)}`);
      }
      if (out.length + results.length > MAX_OPERATIONS_PER_RULE) {
        throw new RuleRuntimeError(`${at}: more than ${MAX_OPERATIONS_PER_RULE} operations in one rule`);
      }
      const resolved = results.map((r) =>
        resolveOne(
          op,
          fillPlaceholders(op, r.indices, at),
          dataOf,
          namespace,
          r.value,
          r.indices,
          at,
          budget.request,
        ),
      );
      // Removing array elements front to back would shift the indices of the later ones.
      if (op.op === 'remove') resolved.reverse();
      out.push(...resolved);
    }
    if (out.length > MAX_OPERATIONS_PER_RULE) {
      throw new RuleRuntimeError(`${at}: more than ${MAX_OPERATIONS_PER_RULE} operations in one rule`);
    }
  });
  if (out.length > budget.remaining) {
    throw new RuleRuntimeError(`request exceeds ${MAX_OPERATIONS_PER_REQUEST} patch operations`);
  }
  budget.remaining -= out.length;
  return out;
}

function resolveOne(
  op: CompiledPatchOperation,
  tokens: readonly string[],
  dataOf: () => TemplateTarget,
  namespace: string,
  selectedItem: JsonValue,
  keyParts: ReadonlyArray<number | string>,
  at: string,
  budget: RequestBudget | undefined,
): ResolvedOperation {
  budget?.charge(1);
  const v = op.value;
  if (v.kind === 'none') return { op: op.op, tokens };
  if (v.kind === 'constant') return { op: op.op, tokens, value: v.value };
  let text: string;
  try {
    const seen = dataOf();
    const data: Record<string, unknown> = {
      Target: seen.target,
      Namespace: namespace,
      SelectedItem: selectedItem,
      SelectKeyParts: keyParts.map(goKeyPart),
    };
    if (seen.controller !== undefined) data.Controller = seen.controller;
    text = v.template.render(data, budget);
  } catch (err) {
    rethrowBudget(err);
    throw new RuleRuntimeError(`${at}.value: ${messageOf(err)}`);
  }
  // YAML parsing is the slowest string work on the path (~30 µs for a short value): paid for before it starts.
  budget?.charge(VALUE_PARSE_STEPS + Math.floor(text.length / VALUE_CHARS_PER_STEP));
  try {
    return { op: op.op, tokens, value: parseModRuleValue(text) };
  } catch (err) {
    throw new RuleRuntimeError(`${at}.value: rendered value is not valid: ${messageOf(err)}`);
  }
}

/**
 * A captured index as KubeMod's templates see it: keyPartsFromSelectKey turns every part that strconv.Atoi accepts
 * (array indices, and map keys such as "8080") into a Go int, so `eq .#0 0` and `printf "%d" .#0` work. Other map
 * keys stay strings. (Paths keep the key text as captured: see fillPlaceholders.)
 */
function goKeyPart(part: number | string): bigint | string {
  if (typeof part === 'number') return BigInt(part);
  if (/^[+-]?\d+$/.test(part)) {
    const n = BigInt(part);
    if (n >= -(2n ** 63n) && n < 2n ** 63n) return n;
  }
  return part;
}

function fillPlaceholders(
  op: CompiledPatchOperation,
  indices: ReadonlyArray<number | string>,
  at: string,
): string[] {
  if (!op.hasPlaceholders) return op.tokens as string[];
  return op.tokens.map((t: PathToken) => {
    if (typeof t === 'string') return t;
    let s = '';
    for (const part of t) {
      if (typeof part === 'string') {
        s += part;
      } else {
        if (part >= indices.length) {
          throw new RuleRuntimeError(`${at}.path: placeholder #${part} has no captured index in ${op.path}`);
        }
        s += String(indices[part]);
      }
    }
    return s;
  });
}

/** Characters of a rendered value parsed per budget step, on top of VALUE_PARSE_STEPS per value. */
const VALUE_CHARS_PER_STEP = 16;
const VALUE_PARSE_STEPS = 128;

type Container = { [key: string]: JsonValue } | JsonValue[];

function isContainer(v: JsonValue | undefined): v is Container {
  return typeof v === 'object' && v !== null;
}

/** Where a token leads in a container, as the KubeMod patcher reads it (negative array indices from the end). */
function childKey(doc: Container, token: string): string | number | undefined {
  if (!Array.isArray(doc)) return hasOwn(doc, token) ? token : undefined;
  if (!/^[+-]?\d{1,18}$/.test(token)) return undefined;
  let idx = Number(token);
  if (idx < 0) idx += doc.length;
  return idx >= 0 && idx < doc.length ? idx : undefined;
}

/**
 * Copy on write: a private shallow copy of every container from the root down to the parent of the token path,
 * so an in-place operation there leaves the shared originals untouched. `owned` holds the copies made so far.
 */
function ownPath(root: JsonValue, tokens: readonly string[], owned: Set<object>): JsonValue {
  if (!isContainer(root)) return root;
  const own = (c: Container): Container => {
    if (owned.has(c)) return c;
    const copy: Container = Array.isArray(c) ? c.slice() : { ...c }; // spread keeps "__proto__" an own key
    owned.add(copy);
    return copy;
  };
  const top = own(root);
  let doc = top;
  let i = 0;
  for (; i < tokens.length - 1; i++) {
    const key = childKey(doc, tokens[i]);
    if (key === undefined) break;
    const child = Array.isArray(doc) ? doc[key as number] : doc[key as string];
    if (!isContainer(child)) break;
    const mine = own(child);
    if (mine !== child) {
      if (Array.isArray(doc)) doc[key as number] = mine;
      else setOwn(doc, key as string, mine);
    }
    doc = mine;
  }
  reached.parentLength = i === tokens.length - 1 && Array.isArray(doc) ? doc.length : 0;
  return top;
}

// What ownPath found, without allocating per operation: the length of the operation's parent when it is an array
// (an add or remove there moves the elements after it).
const reached = { parentLength: 0 };

/**
 * Applies resolved operations to a copy of `root` that shares every part the operations do not touch; `root`
 * itself is never changed, so a failing rule simply drops its copy. `owned` (default: a fresh set) holds the
 * containers already private to the copy; values are shared, never mutated later (a write under one copies it).
 * Each operation costs the request budget (if given) a step, and one per 64 elements of an array it inserts into or
 * removes from.
 */
export function applyOperationsShared(
  root: JsonValue,
  ops: readonly ResolvedOperation[],
  owned: Set<object> = new Set(),
  budget?: RequestBudget,
): JsonValue {
  let doc = root;
  for (const o of ops) {
    budget?.charge(1);
    try {
      const own = ownPath(doc, o.tokens, owned);
      // Inserting into or removing from a long array moves its elements: paid before, a step per 64.
      if (budget && o.op !== 'replace' && reached.parentLength >= 64)
        budget.charge(reached.parentLength >> 6);
      doc = applyKubeModOperation(own, o.op, o.tokens, o.value);
    } catch (err) {
      throw new RuleRuntimeError(`${o.op} ${formatPointer(o.tokens)}: ${messageOf(err)}`);
    }
  }
  return doc;
}

/**
 * Applies resolved operations in order and returns the new root; throws on the first failure. The root is not
 * changed (copy on write, as applyOperationsShared), so callers that copied it first keep working.
 */
export function applyOperations(
  root: JsonValue,
  ops: readonly ResolvedOperation[],
  budget?: RequestBudget,
): JsonValue {
  return applyOperationsShared(root, ops, new Set(), budget);
}
