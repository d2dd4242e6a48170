import { JsonObject } from '../../util/json';
import { generationOf, keyOf, metaString } from '../../util/meta';
import { ValidationProblem } from '../../rule/problems';
import { ScopeStatus } from './status';
import { StatusSink } from '../status/reporter';

interface Held {
  rule: JsonObject;
  problems: readonly ValidationProblem[];
  version: string;
  /** When it started waiting, and why its status says NotInForce (null: it does not yet). */
  since: number;
  shown: string | null;
}

/** Whether a held rule's status says NotInForce now. */
const isShown = (h: Held | undefined): boolean => (h?.shown ?? null) !== null;

/** Where the gate says that a rule waits too long: the registration facet, and why it waits. */
export interface NotInForceReporting {
  status: Pick<ScopeStatus, 'setNotInForce'>;
  why(): string;
  /** A rule waiting longer than this is shown Ready False (NotInForce); default 2 s. */
  afterMs?: number;
}

/** What the gate asks before a valid rule may be reported Ready. */
export interface Coverage {
  /** Whether the API servers send the objects of a rule at this resourceVersion. */
  covers(ruleVersion: string): boolean;
  /** Called whenever covers() may answer differently. */
  onChange(listener: () => void): () => void;
}

/** Rule versions (uid, generation) whose objects the API server was confirmed to send when they were admitted. */
export class ConfirmedRules {
  private readonly entries = new Map<string, number>();

  constructor(
    private readonly ttlMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  add(uid: string, generation: number): void {
    if (this.entries.size >= 10_000) this.prune();
    this.entries.set(`${uid}/${generation}`, this.now() + this.ttlMs);
  }

  has(uid: string, generation: number): boolean {
    return (this.entries.get(`${uid}/${generation}`) ?? 0) > this.now();
  }

  private prune(): void {
    const now = this.now();
    for (const [k, until] of this.entries) if (until <= now) this.entries.delete(k);
    if (this.entries.size >= 10_000) this.entries.clear();
  }
}

/**
 * Holds back the Ready report of a valid rule until the dragnet registration sends its objects (a new or widened rule
 * is in force only from then on). Invalid rules are reported at once: they are not Ready either way.
 */
export class ReadyGate implements StatusSink {
  private readonly held = new Map<string, Held>();
  // The spec (uid/generation) of each rule last let through in force: a status write changes the resourceVersion
  // but not what the registration must send, so it is not held again (after an API server restart the scope may
  // be backing off, and a native rule's status write was shown NotInForce).
  private readonly inForce = new Map<string, string>();
  // Each rule's spec and the first resourceVersion it was seen at: what the registration must cover. Coverage is
  // asked for that version, not the latest: another replica's status writes move the resourceVersion faster than
  // this replica's computation follows, and waiting for the latest one never ended (two replicas wrote each other's
  // Ready back and forth).
  private readonly specs = new Map<string, { spec: string; version: string }>();
  private readonly unsubscribe: () => void;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly inner: StatusSink,
    private readonly coverage: Coverage,
    /** Rules confirmed in force when admitted (operator/admission/rule-admission.ts): Ready at once, no settle time. */
    private readonly confirmed?: ConfirmedRules,
    /** Rules that wait too long are shown not in force (Ready False, NotInForce), with why. */
    private readonly notInForce?: NotInForceReporting,
  ) {
    this.unsubscribe = coverage.onChange(() => this.release());
  }

  report(rule: JsonObject, problems: readonly ValidationProblem[]): void {
    const key = keyOf(rule);
    // Without a generation (an API server that sets none) every version may be a new spec.
    const generation = generationOf(rule);
    const spec = generation === undefined ? null : `${metaString(rule, 'uid')}/${generation}`;
    const seen = this.specs.get(key);
    const version = spec !== null && seen?.spec === spec ? seen.version : metaString(rule, 'resourceVersion');
    if (spec !== null) this.specs.set(key, { spec, version });
    const before = this.held.get(key);
    const covered =
      (spec !== null && this.inForce.get(key) === spec) ||
      this.coverage.covers(version) ||
      this.confirmedAtAdmission(rule);
    if (problems.length > 0 || covered) {
      if (covered && spec !== null) this.inForce.set(key, spec);
      else this.inForce.delete(key);
      this.let(key, before);
      this.inner.report(rule, problems);
      return;
    }
    const since = before?.since ?? Date.now();
    this.held.set(key, { rule, problems, version, since, shown: before?.shown ?? null });
    // Already shown not in force: the new version shows it too.
    if (isShown(before)) this.inner.report(rule, problems);
    if (!this.timer && this.notInForce) {
      this.timer = setInterval(() => this.overdue(), 250);
      this.timer.unref();
    }
  }

  /** Stops holding a rule; a NotInForce it showed is cleared. */
  private let(key: string, held: Held | undefined): void {
    this.held.delete(key);
    if (isShown(held)) {
      const [namespace, ...name] = key.split('/');
      this.notInForce?.status.setNotInForce(namespace, name.join('/'), null);
    }
  }

  /**
   * Shows the rules that waited too long as not in force, and keeps why up to date: the reason of the moment it was
   * first shown (the API server down) may be over while the rule still waits (the registration not proven yet).
   */
  private overdue(): void {
    const after = this.notInForce?.afterMs ?? 2000;
    for (const [key, h] of this.held) {
      if (!this.notInForce || (h.shown === null && Date.now() - h.since < after)) continue;
      const why = this.notInForce.why();
      if (h.shown === why) continue;
      const [namespace, ...name] = key.split('/');
      const first = h.shown === null;
      h.shown = why;
      this.notInForce.status.setNotInForce(namespace, name.join('/'), why);
      if (first) this.inner.report(h.rule, h.problems);
    }
    if (this.held.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  private confirmedAtAdmission(rule: JsonObject): boolean {
    const uid = metaString(rule, 'uid');
    const generation = generationOf(rule);
    return !!this.confirmed && !!uid && generation !== undefined && this.confirmed.has(uid, generation);
  }

  forget(namespace: string, name: string): void {
    this.inForce.delete(`${namespace}/${name}`);
    this.specs.delete(`${namespace}/${name}`);
    this.let(`${namespace}/${name}`, this.held.get(`${namespace}/${name}`));
    this.inner.forget(namespace, name);
  }

  /** Rules waiting for the registration (tests, metrics). */
  get waiting(): number {
    return this.held.size;
  }

  stop(): void {
    this.unsubscribe();
    if (this.timer) clearInterval(this.timer);
    this.held.clear();
    this.inForce.clear();
    this.specs.clear();
  }

  private release(): void {
    for (const [key, h] of this.held)
      if (this.coverage.covers(h.version)) {
        const generation = generationOf(h.rule);
        if (generation !== undefined) this.inForce.set(key, `${metaString(h.rule, 'uid')}/${generation}`);
        this.let(key, h);
        this.inner.report(h.rule, h.problems);
      }
  }
}
