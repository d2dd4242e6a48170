import { JsonObject } from '../../util/json';
import { formatProblems, ValidationProblem } from '../../rule/problems';
import {
  ComposedStatus,
  Condition,
  CONDITION_TYPES,
  conditionsOf,
  ConditionType,
  Facet,
  FACET_SOURCES,
  FacetSource,
  holdOf,
  IN_EFFECT,
  isoSeconds,
  READY_REASON_INVALID,
  READY_REASON_VALID,
  ReadyCondition,
  ReadyVerdict,
  summaryOf,
  truncateMessage,
} from './facets';

// A ModRule's whole status, composed from what each source says of it (pure: the reporter writes it).

/** What the composition reads. */
export interface ComposeInput {
  generation: number | undefined;
  /** The rule's validation problems: any makes it Invalid. */
  problems: readonly ValidationProblem[];
  facets: ReadonlyMap<FacetSource, Facet>;
  /** The rule's status as it is now ({} when none). */
  current: JsonObject;
  /** This replica's name (another replica's per-replica word is left alone while it stands). */
  instance: string;
  now: number;
}

/** The composed status, and when to compose again because another replica's word lapses then. */
export interface Composition {
  status: ComposedStatus;
  recheckAt?: number;
}

interface Context extends ComposeInput {
  recheckAt?: number;
}

/**
 * Whether a condition the rule carries is another replica's word that stands: on this generation, not lapsed, and
 * what this replica would say instead (`own`, if anything) is not a per-replica word that lasts longer. Two replicas
 * that both say something so converge on the later one, instead of overwriting each other at every watch event.
 */
function stands(ctx: Context, carried: JsonObject | undefined, own: string | undefined): boolean {
  if (!carried || carried.observedGeneration !== ctx.generation) return false;
  const theirs = holdOf(carried.message);
  if (!theirs || theirs.replica === ctx.instance || theirs.until <= ctx.now) return false;
  if (own !== undefined) {
    const mine = holdOf(own);
    if (!mine || mine.until > theirs.until) return false;
  }
  ctx.recheckAt = Math.min(ctx.recheckAt ?? Infinity, theirs.until);
  return true;
}

/** The abnormal-true conditions, in CONDITION_TYPES order, and the summaries Ready's message names. */
function abnormalConditions(
  ctx: Context,
  facets: ReadonlyArray<Facet>,
  carried: readonly JsonObject[],
): { conditions: Array<Condition | JsonObject>; notes: string[] } {
  const gen = ctx.generation === undefined ? {} : { observedGeneration: ctx.generation };
  const conditions: Array<Condition | JsonObject> = [];
  const notes: string[] = [];
  for (const type of Object.keys(CONDITION_TYPES) as ConditionType[]) {
    const own = facets.find((f) => f.condition?.type === type)?.condition;
    const have = carried.find((c) => c.type === type);
    if (have?.status === 'True' && stands(ctx, have, own?.message)) {
      conditions.push(have);
      notes.push(summaryOf(String(have.message)));
    } else if (own) {
      const message = truncateMessage(own.message);
      conditions.push({ type, status: 'True', reason: own.reason, message, ...gen });
      notes.push(summaryOf(message));
    } else if (have) {
      conditions.push({ type, status: 'False', ...CONDITION_TYPES[type], ...gen });
    }
  }
  return { conditions, notes };
}

/** Ready: Invalid for problems; else the first facet that takes it False, or says how the rule is served. */
function readyOf(
  ctx: Context,
  facets: ReadonlyArray<Facet>,
  carried: readonly JsonObject[],
  notes: readonly string[],
): ReadyCondition | JsonObject {
  const gen = ctx.generation === undefined ? {} : { observedGeneration: ctx.generation };
  if (ctx.problems.length > 0) {
    const message = truncateMessage(formatProblems(ctx.problems));
    return { type: 'Ready', status: 'False', reason: READY_REASON_INVALID, message, ...gen };
  }
  const verdict: ReadyVerdict = facets.find((f) => f.ready?.status === 'False')?.ready ??
    facets.find((f) => f.ready)?.ready ?? { status: 'True', reason: READY_REASON_VALID, message: IN_EFFECT };
  const have = carried.find((c) => c.type === 'Ready');
  const own = verdict.status === 'False' ? verdict.message : undefined;
  if (have?.status === 'False' && have.reason !== READY_REASON_INVALID && stands(ctx, have, own)) return have;
  let message = verdict.message;
  if (notes.length > 0)
    message =
      verdict.status === 'True'
        ? `in effect, but ${notes.join('; ')}${verdict.message === IN_EFFECT ? '' : `; ${verdict.message}`}`
        : `${verdict.message}; also ${notes.join('; ')}`;
  return { type: 'Ready', ...verdict, message: truncateMessage(message), ...gen };
}

/**
 * Who serves a valid rule (`kubectl get modrule` column Served): the serving facet's word (native.ts), else the
 * webhook, which serves every valid rule not handed to a policy. An invalid rule is served by nobody.
 */
function servedByOf(problems: readonly unknown[], facets: readonly Facet[]): Facet['servedBy'] {
  if (problems.length > 0) return undefined;
  return facets.find((f) => f.servedBy)?.servedBy ?? 'Webhook';
}

/**
 * The status a rule should carry: Ready, the abnormal-true conditions, other owners' conditions, servedBy and the
 * pod controllers it reaches.
 */
export function composeStatus(input: ComposeInput): Composition {
  const ctx: Context = { ...input };
  const facets = FACET_SOURCES.flatMap((s) => input.facets.get(s) ?? []);
  const carried = conditionsOf(input.current);
  const { conditions, notes } = abnormalConditions(ctx, facets, carried);
  const ready = readyOf(ctx, facets, carried, notes);
  const owned = (type: unknown) => type === 'Ready' || Object.hasOwn(CONDITION_TYPES, String(type));
  const servedBy = servedByOf(input.problems, facets);
  const podControllers =
    input.problems.length > 0 ? undefined : facets.find((f) => f.podControllers)?.podControllers;
  const status: ComposedStatus = {
    ...(input.generation === undefined ? {} : { observedGeneration: input.generation }),
    conditions: [ready, ...conditions, ...carried.filter((c) => !owned(c.type))],
    ...(servedBy ? { servedBy } : {}),
    ...(podControllers ? { podControllers } : {}),
  };
  return ctx.recheckAt === undefined ? { status } : { status, recheckAt: ctx.recheckAt };
}

const SAME_FIELDS = ['type', 'status', 'reason', 'message', 'observedGeneration'] as const;

/** True when the rule's status already says what `want` says (lastTransitionTime aside). */
export function statusUpToDate(current: JsonObject, want: ComposedStatus): boolean {
  const have = conditionsOf(current);
  return (
    // A merge patch's null removes the field: absent either way.
    (current.observedGeneration ?? undefined) === want.observedGeneration &&
    (current.servedBy ?? undefined) === want.servedBy &&
    sameList(current.podControllers, want.podControllers) &&
    have.length === want.conditions.length &&
    want.conditions.every((c, i) => SAME_FIELDS.every((f) => (c as JsonObject)[f] === have[i][f]))
  );
}

/** The merge patch for the status subresource; each condition keeps lastTransitionTime while its status stays. */
export function statusPatch(current: JsonObject, want: ComposedStatus, now: Date): JsonObject {
  const have = conditionsOf(current);
  const conditions = want.conditions.map((c): JsonObject => {
    if ('lastTransitionTime' in c) return c as JsonObject;
    const before = have.find((h) => h.type === c.type);
    const lastTransitionTime =
      before && before.status === c.status && typeof before.lastTransitionTime === 'string'
        ? before.lastTransitionTime
        : isoSeconds(now.getTime());
    return { ...c, lastTransitionTime };
  });
  return {
    status: {
      observedGeneration: want.observedGeneration ?? null,
      conditions,
      servedBy: want.servedBy ?? null,
      podControllers: want.podControllers ? [...want.podControllers] : null,
    },
  };
}

// status.podControllers as carried (absent or null: none) against the list wanted.
function sameList(have: unknown, want: readonly string[] | undefined): boolean {
  if (!Array.isArray(have) || have.length === 0) return want === undefined;
  return want !== undefined && have.length === want.length && have.every((k, i) => k === want[i]);
}
