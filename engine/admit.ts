import { isJsonObject, jsonEqual, JsonObject, JsonValue } from '../util/json';
import { BudgetExhaustedError, REJECT_RESERVE, RequestBudget, UNTIMED_BUDGET } from '../util/budget';
import { deeperThan, MAX_OBJECT_DEPTH } from '../util/depth';
import { CompiledRule } from '../modrule/compile';
import {
  AdmissionOperation,
  IGNORE_LABEL,
  LAST_APPLIED_ANNOTATION,
  NODE_REF_ANNOTATION,
} from '../modrule/types';
import { JsonPatchOperation } from '../patch/operation';
import { createPatch } from '../patch/diff';
import { RuleSnapshot } from '../store/rules';
import { setOwn } from '../patch/object';
import { RuleIndex } from '../store/rule-index';
import { ruleMatches } from './match';
import { SelectCache } from '../jsonpath/select-cache';
import {
  applyOperationsShared,
  Budget,
  MAX_OPERATIONS_PER_REQUEST,
  ResolvedOperation,
  resolveOperations,
  RuleRuntimeError,
} from './patch';

/** What the engine needs from an admission request. */
export interface AdmissionInput {
  operation: AdmissionOperation;
  object: JsonObject | null;
  oldObject: JsonObject | null;
  /** null or '' = cluster-scoped. */
  namespace: string | null;
}

/** A ModRule's identity. */
export interface RuleRef {
  namespace: string;
  name: string;
}

/** The engine's verdict; the caller turns it into an AdmissionResponse and logs it. */
export interface AdmissionOutcome {
  allowed: boolean;
  /** message is the rendered rejectMessage, '' when the rule has none (or it failed to render). */
  rejections: Array<{ rule: RuleRef; message: string }>;
  /** Original object -> final object; [] when nothing changed. Always [] for DELETE (Patch rules only feed Rejects). */
  patch: JsonPatchOperation[];
  /** Final object, without syntheticRefs. */
  object: JsonObject | null;
  /** Rules whose match section matched. */
  matched: RuleRef[];
  /** The Patch rules among them whose changes were applied (matched and did not fail). */
  patched: RuleRef[];
  /** Rules that failed at run time; their changes were dropped as a whole. */
  failures: Array<{ rule: RuleRef; message: string }>;
  /** The namespace (or Namespace object) is labelled admission.kubemod.io/ignore=true: nothing evaluated. */
  ignored: boolean;
}

const SYNTHETIC_REFS = 'syntheticRefs';

/**
 * Runs the rules of the snapshot against one admission request. Pure: no I/O, no logging. Once `budget` (default
 * UNTIMED_BUDGET; the webhook passes its own) runs out, the rules left fail (Patch) or reject (Reject).
 */
export function admit(
  input: AdmissionInput,
  snapshot: RuleSnapshot,
  budget: RequestBudget = new RequestBudget(UNTIMED_BUDGET),
): AdmissionOutcome {
  const outcome: AdmissionOutcome = {
    allowed: true,
    rejections: [],
    patch: [],
    object: input.object,
    matched: [],
    patched: [],
    failures: [],
    ignored: false,
  };
  const operation = input.operation;
  // On DELETE the API server sends only the old object; Reject rules are matched against it.
  const subject = operation === 'DELETE' ? input.oldObject : input.object;
  if (!subject) return outcome;

  const namespace = scopeOf(input.namespace, subject);
  if (isIgnored(namespace, subject, snapshot)) {
    outcome.ignored = true;
    return outcome;
  }
  const index = RuleIndex.of(snapshot.rulesFor(namespace));
  if (!index.operations.has(operation)) return outcome;
  if (deeperThan(subject)) {
    refuseDeep(
      index.rules.filter((r) => r.operations.has(operation)),
      outcome,
    );
    return outcome;
  }

  const namespaceText = namespace ?? '';
  const working = prepare(subject, namespace, snapshot);
  let current = working.object;

  // Patch rules run on DELETE too, as in KubeMod (CalculatePatch runs for every operation): Reject rules then see
  // the patched old object. The API server has no object to patch on DELETE, so no patch is returned there.
  const lastApplied = new LastApplied(subject);
  // Patch rules (a tenant's own among them) cannot spend what the Reject rules (the cluster's among them) need.
  const reserved = index.rejectOperations.has(operation);
  if (reserved) budget.reserve(REJECT_RESERVE);
  const { selects, candidates } = runPatchRules(
    index,
    operation,
    new SelectCache(current, budget),
    namespaceText,
    lastApplied,
    outcome,
  );
  const patched = selects.root as JsonObject;
  if (patched !== current) {
    current = patched;
    if (operation !== 'DELETE') {
      const final = finish(current, working);
      lastApplied.writeTo(final);
      outcome.object = final;
      outcome.patch = createPatch(input.object as JsonObject, final);
    }
  }

  if (reserved) {
    budget.release();
    runRejectRules(index, candidates, operation, selects, namespaceText, outcome);
  }
  if (outcome.rejections.length > 0) {
    outcome.allowed = false;
    outcome.patch = [];
  }
  return outcome;
}

/**
 * Runs Patch rules tier by tier (lowest first). Every rule of a tier is matched against the tier's input; the
 * matching ones then apply in namespace/name order, each computed against the object as the previous rules of the
 * tier left it (as KubeMod's CalculatePatch). A failing rule is recorded and its changes dropped.
 * Only the index's candidates for the tier's input are visited. Returns the selects of the final object and, unless
 * the budget ran out, its candidates (the Reject rules are among them).
 */
function runPatchRules(
  index: RuleIndex,
  operation: AdmissionOperation,
  input: SelectCache,
  namespace: string,
  lastApplied: LastApplied,
  outcome: AdmissionOutcome,
): { selects: SelectCache; candidates?: readonly CompiledRule[] } {
  const request = input.budget;
  const budget: Budget = { remaining: MAX_OPERATIONS_PER_REQUEST, request };
  let selects = input;
  let current = input.root as JsonObject;
  let work: TierWork | undefined;
  let rules: readonly CompiledRule[] = [];
  let i = 0;
  try {
    rules = index.candidates(selects);
    while (i < rules.length) {
      const tier = rules[i].tier;
      const tierInput = selects;
      work = new TierWork(current);
      for (; i < rules.length && rules[i].tier === tier; i++) {
        const rule = rules[i];
        if (rule.type !== 'Patch' || !rule.operations.has(operation)) continue;
        if (!ruleMatches(rule, tierInput.root, tierInput)) continue;
        request?.check();
        outcome.matched.push(refOf(rule));
        const ops = applyRule(rule, work, namespace, budget, outcome);
        if (ops !== undefined) lastApplied.apply(ops);
      }
      current = work.current;
      work = undefined;
      if (current !== tierInput.root) {
        // Later tiers see the patched object: its own selects, its own candidates.
        selects = new SelectCache(current, request);
        rules = index.candidates(selects);
        i = firstAfterTier(rules, tier);
      }
    }
  } catch (err) {
    if (!(err instanceof BudgetExhaustedError)) throw err;
    // The request's budget ran out: this rule and every candidate after it fail as rules fail at run time
    // (reported, their changes dropped), so the request is answered at once. What applied before stays.
    if (work) current = work.current;
    for (const rule of rules.slice(i))
      if (rule.type === 'Patch' && rule.operations.has(operation))
        outcome.failures.push({ rule: refOf(rule), message: err.message });
    return { selects: current === selects.root ? selects : new SelectCache(current, request) };
  }
  return { selects, candidates: rules };
}

/** One matching Patch rule applied to the tier's object: its operations, or undefined when it failed. */
function applyRule(
  rule: CompiledRule,
  work: TierWork,
  namespace: string,
  budget: Budget,
  outcome: AdmissionOutcome,
): ResolvedOperation[] | undefined {
  try {
    const ops = resolveOperations(rule, work.current, namespace, budget);
    work.apply(ops, budget.request);
    outcome.patched.push(refOf(rule));
    return ops;
  } catch (err) {
    if (err instanceof BudgetExhaustedError) throw err; // the request's, not this rule's: see runPatchRules
    outcome.failures.push({ rule: refOf(rule), message: (err as Error).message });
    return undefined;
  }
}

/**
 * The object the Patch rules of one tier build from the tier's input. Copy on write once per tier, not per rule:
 * containers copied by an earlier rule of the tier are written in place by the later ones. A rule that fails (or
 * runs out of budget) half-way may have written into them, so the object is rebuilt from the tier's input and the
 * operations of the rules that succeeded; after that each rule copies for itself again (one rebuild per tier at most).
 * The tier's input is never written: the tier's rules are matched against it.
 */
class TierWork {
  current: JsonObject;
  private readonly applied: ResolvedOperation[][] = [];
  private owned: Set<object> | null = new Set();

  constructor(private readonly input: JsonObject) {
    this.current = input;
  }

  /** Applies one rule's operations; when one fails, the object is left as it was before the rule and it rethrows. */
  apply(ops: readonly ResolvedOperation[], budget: RequestBudget | undefined): void {
    try {
      const next = applyOperationsShared(this.current, ops, this.owned ?? new Set(), budget);
      if (!isJsonObject(next)) throw new RuleRuntimeError('the patch replaced the object with a non-object');
      this.current = next;
      if (this.owned) this.applied.push(ops as ResolvedOperation[]);
    } catch (err) {
      if (this.owned) this.rebuild();
      throw err;
    }
  }

  private rebuild(): void {
    this.owned = null;
    const owned = new Set<object>();
    let doc: JsonValue = this.input;
    // Replays what already succeeded on the same input: it cannot fail, and its budget was charged the first time.
    for (const ops of this.applied) doc = applyOperationsShared(doc, ops, owned);
    this.current = doc as JsonObject;
  }
}

function firstAfterTier(rules: readonly CompiledRule[], tier: number): number {
  let i = 0;
  while (i < rules.length && rules[i].tier <= tier) i++;
  return i;
}

/**
 * Reject rules of every tier see the final patched object (KubeMod's dragnet handler: patch first, then reject).
 * A Reject rule the budget cannot evaluate rejects (see rejectUnevaluated).
 */
function runRejectRules(
  index: RuleIndex,
  // The final object's candidates when the Patch phase already has them: the index is not read twice.
  candidates: readonly CompiledRule[] | undefined,
  operation: AdmissionOperation,
  selects: SelectCache,
  namespace: string,
  outcome: AdmissionOutcome,
): void {
  const object = selects.root;
  const budget = selects.budget;
  let rules: readonly CompiledRule[] = [];
  let i = 0;
  try {
    rules = (candidates ?? index.candidates(selects)).filter(
      (r) => r.type === 'Reject' && r.operations.has(operation),
    );
    for (; i < rules.length; i++) {
      const rule = rules[i];
      if (!ruleMatches(rule, object, selects)) continue;
      budget?.check();
      outcome.matched.push(refOf(rule));
      const message = rejectMessage(rule, object, namespace, budget, outcome);
      outcome.rejections.push({ rule: refOf(rule), message });
    }
  } catch (err) {
    if (!(err instanceof BudgetExhaustedError)) throw err;
    // rules[i] ran out of budget while matching or rendering its message: it and the rest reject.
    rejectUnevaluated(rules.slice(i), ` within the request budget (${err.message})`, outcome);
  }
}

/** The rule's rendered rejectMessage; '' when it has none or it fails (KubeMod's denial then names just the rule). */
function rejectMessage(
  rule: CompiledRule,
  object: JsonValue,
  namespace: string,
  budget: RequestBudget | undefined,
  outcome: AdmissionOutcome,
): string {
  if (!rule.rejectMessage) return '';
  try {
    return rule.rejectMessage.render({ Target: object, Namespace: namespace }, budget);
  } catch (err) {
    if (err instanceof BudgetExhaustedError) throw err;
    // A broken message must not turn a rejection into an admission.
    outcome.failures.push({ rule: refOf(rule), message: `rejectMessage: ${(err as Error).message}` });
    return '';
  }
}

/**
 * Reject rules that could not be evaluated reject (fail closed), as a rule whose rejectMessage fails still rejects:
 * otherwise exhausting the budget, or nesting the object deeply, would be a way around every policy. Each is also
 * reported as a failure (warned, counted).
 */
function rejectUnevaluated(rules: readonly CompiledRule[], why: string, outcome: AdmissionOutcome): void {
  const message = `could not be evaluated${why}`;
  for (const rule of rules) {
    outcome.failures.push({ rule: refOf(rule), message });
    outcome.rejections.push({ rule: refOf(rule), message });
  }
}

/**
 * An object nesting deeper than MAX_OBJECT_DEPTH is refused up front with a clear reason, rather than a stack
 * overflow somewhere in a rule: Patch rules fail, Reject rules fail closed (deep nesting must not get around them).
 */
function refuseDeep(rules: readonly CompiledRule[], outcome: AdmissionOutcome): void {
  const message = `object nests deeper than ${MAX_OBJECT_DEPTH} levels; ModRules are not evaluated against it`;
  for (const rule of rules) if (rule.type === 'Patch') outcome.failures.push({ rule: refOf(rule), message });
  const rejects = rules.filter((r) => r.type === 'Reject');
  rejectUnevaluated(rejects, `: object nests deeper than ${MAX_OBJECT_DEPTH} levels`, outcome);
  outcome.allowed = rejects.length === 0;
}

function refOf(rule: CompiledRule): RuleRef {
  return { namespace: rule.namespace, name: rule.name };
}

/**
 * The namespace whose rules apply (null = cluster-scoped). KubeMod treats Namespace objects as cluster-scoped even
 * though UPDATE requests carry their own name as namespace.
 */
export function scopeOf(namespace: string | null, subject: JsonObject): string | null {
  if (subject.kind === 'Namespace' && subject.apiVersion === 'v1') return null;
  return namespace === '' ? null : namespace;
}

function labelsOf(obj: JsonObject | undefined): JsonObject | undefined {
  const meta = obj?.metadata;
  return isJsonObject(meta) && isJsonObject(meta.labels) ? meta.labels : undefined;
}

function annotationsOf(obj: JsonObject): JsonObject | undefined {
  const meta = obj.metadata;
  return isJsonObject(meta) && isJsonObject(meta.annotations) ? meta.annotations : undefined;
}

/**
 * Whether the object is exempt (label admission.kubemod.io/ignore=true on its namespace, or on itself for Namespace
 * objects). The webhook's namespaceSelector does this in a cluster; doing it here keeps `serve --local` and `apply`
 * alike.
 */
export function isIgnored(namespace: string | null, subject: JsonObject, snapshot: RuleSnapshot): boolean {
  const labels =
    namespace === null
      ? subject.kind === 'Namespace'
        ? labelsOf(subject)
        : undefined
      : labelsOf(snapshot.namespace(namespace));
  return labels?.[IGNORE_LABEL] === 'true';
}

/** The object the rules see, plus what finish() needs to turn it back into what the API server stores. */
export interface Working {
  object: JsonObject;
  managedFields: JsonValue | undefined;
  managedFieldsAt: number;
  originalRefs: JsonValue | undefined;
}

/** The object the rules see: managedFields dropped (KubeMod does too: noise, slow to match), syntheticRefs injected. */
export function prepare(subject: JsonObject, namespace: string | null, snapshot: RuleSnapshot): Working {
  const refs: JsonObject = {};
  if (namespace !== null) {
    const ns = snapshot.namespace(namespace);
    if (ns) refs.namespace = ns;
  }
  if (subject.kind === 'Pod') {
    const nodeName = annotationsOf(subject)?.[NODE_REF_ANNOTATION];
    const node = typeof nodeName === 'string' ? snapshot.node(nodeName) : undefined;
    if (node) refs.node = node;
  }
  const object: JsonObject = { ...subject, [SYNTHETIC_REFS]: refs };
  let managedFields: JsonValue | undefined;
  let managedFieldsAt = 0;
  const meta = subject.metadata;
  if (isJsonObject(meta) && meta.managedFields !== undefined) {
    const { managedFields: mf, ...rest } = meta;
    managedFields = mf;
    managedFieldsAt = Object.keys(meta).indexOf('managedFields');
    object.metadata = rest;
  }
  return { object, managedFields, managedFieldsAt, originalRefs: subject[SYNTHETIC_REFS] };
}

// Back to what the API server should store: no syntheticRefs (even if a rule patched under it), managedFields restored.
// `current` stays as it is: Reject rules still match against it, syntheticRefs included.
function finish(current: JsonObject, working: Working): JsonObject {
  const { [SYNTHETIC_REFS]: _refs, ...final } = current;
  if (working.originalRefs !== undefined) final[SYNTHETIC_REFS] = working.originalRefs;
  if (working.managedFields !== undefined && isJsonObject(final.metadata)) {
    final.metadata = insertKey(
      final.metadata,
      'managedFields',
      working.managedFields,
      working.managedFieldsAt,
    );
  }
  return final;
}

// Puts a key back where it was, so manifests printed from the result keep their field order.
function insertKey(obj: JsonObject, key: string, value: JsonValue, at: number): JsonObject {
  const out: JsonObject = {};
  const keys = Object.keys(obj).filter((k) => k !== key);
  keys.splice(Math.min(at, keys.length), 0, key);
  for (const k of keys) out[k] = k === key ? value : obj[k];
  return out;
}

/**
 * kubectl's last-applied-configuration annotation, patched with the same resolved operations as the object so a
 * later `kubectl apply` does not undo the rules' changes. Operations that do not apply to it are skipped.
 */
class LastApplied {
  private readonly text: string | undefined;
  private parsed = false;
  private original: JsonValue | undefined;
  private doc: JsonValue | undefined;
  // Copy on write: `original` is never changed, so no up-front clone is needed to compare at the end.
  private readonly owned = new Set<object>();

  constructor(subject: JsonObject) {
    const text = annotationsOf(subject)?.[LAST_APPLIED_ANNOTATION];
    if (typeof text === 'string') this.text = text;
  }

  apply(ops: readonly ResolvedOperation[]): void {
    // Parsed on first use: most requests match no Patch rule and never need it.
    if (!this.parsed) this.parse();
    if (this.doc === undefined) return;
    for (const o of ops) {
      if (o.tokens[0] === SYNTHETIC_REFS) continue;
      try {
        this.doc = applyOperationsShared(this.doc, [o], this.owned);
      } catch {
        // e.g. replace of a field the user never set: the annotation simply does not mention it.
      }
    }
  }

  private parse(): void {
    this.parsed = true;
    if (this.text === undefined) return;
    try {
      const parsed = JSON.parse(this.text) as JsonValue;
      if (isJsonObject(parsed)) {
        this.original = parsed;
        this.doc = parsed;
      }
    } catch {
      // Not JSON: leave the annotation alone rather than fail the request.
    }
  }

  writeTo(final: JsonObject): void {
    if (this.doc === undefined || this.original === undefined || this.doc === this.original) return;
    if (jsonEqual(this.doc, this.original)) return;
    const meta = final.metadata;
    if (!isJsonObject(meta) || !isJsonObject(meta.annotations)) return;
    // final shares its metadata with the request's object: write into copies.
    // kubectl writes the annotation as compact JSON with sorted keys and a trailing newline.
    final.metadata = {
      ...meta,
      annotations: { ...meta.annotations, [LAST_APPLIED_ANNOTATION]: stableStringify(this.doc) + '\n' },
    };
  }
}

/** Compact JSON with object keys sorted, as Go's encoding/json writes maps. */
export function stableStringify(v: JsonValue): string {
  const sorted = sortedView(v);
  return sorted === undefined ? sortedStringify(v) : JSON.stringify(sorted);
}

// Digit-only keys enumerate before all others whatever the insertion order: those objects take the slow path.
const DIGIT_KEY = /^\d+$/;

/**
 * `v` itself when every object's keys already enumerate in sorted order (kubectl writes the annotation sorted and
 * JSON.parse keeps the order), else a copy in sorted order that shares the sorted parts, so the native writer can
 * do the rest. undefined when an object has digit-only keys.
 */
function sortedView(v: JsonValue): JsonValue | undefined {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) {
    let out: JsonValue[] | undefined;
    for (let i = 0; i < v.length; i++) {
      const x = sortedView(v[i]);
      if (x === undefined) return undefined;
      if (x !== v[i]) (out ??= v.slice())[i] = x;
    }
    return out ?? v;
  }
  // One pass without allocating: a sorted subtree (the usual case, kubectl writes it so) is returned as it is.
  let prev: string | undefined;
  let inOrder = true;
  let views: Map<string, JsonValue> | undefined;
  for (const k in v) {
    const c = k.charCodeAt(0);
    if (c >= 48 && c <= 57 && DIGIT_KEY.test(k)) return undefined;
    if (prev !== undefined && prev >= k) inOrder = false;
    prev = k;
    const x = sortedView(v[k]);
    if (x === undefined) return undefined;
    if (x !== v[k]) (views ??= new Map()).set(k, x);
  }
  if (inOrder && views === undefined) return v;
  const out: JsonObject = {};
  for (const k of Object.keys(v).sort()) setOwn(out, k, views?.has(k) ? (views.get(k) as JsonValue) : v[k]);
  return out;
}

function sortedStringify(v: JsonValue): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(sortedStringify).join(',')}]`;
  const keys = Object.keys(v).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${sortedStringify(v[k])}`).join(',')}}`;
}
