import { isJsonObject, JsonObject } from '../util/json';
import { generationOf, metaString } from '../util/meta';
import { ValidationProblem } from '../modrule/problems';
import { StatusSink } from './sync';

interface Held {
  rule: JsonObject;
  problems: readonly ValidationProblem[];
  version: string;
}

/** What the gate asks before a valid rule may be reported Ready. */
export interface Coverage {
  /** Whether the API servers send the objects of a rule at this resourceVersion. */
  covers(ruleVersion: string): boolean;
  /** Called whenever covers() may answer differently. */
  onChange(listener: () => void): () => void;
}

function versionOf(rule: JsonObject): string {
  const meta = isJsonObject(rule.metadata) ? rule.metadata : {};
  return typeof meta.resourceVersion === 'string' ? meta.resourceVersion : '';
}

function keyOf(rule: JsonObject): string {
  const meta = isJsonObject(rule.metadata) ? rule.metadata : {};
  return `${String(meta.namespace ?? '')}/${String(meta.name ?? '')}`;
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
  private readonly unsubscribe: () => void;

  constructor(
    private readonly inner: StatusSink,
    private readonly coverage: Coverage,
    /** Rules confirmed in force when admitted (operator/rule-admission.ts): Ready at once, no settle time. */
    private readonly confirmed?: ConfirmedRules,
  ) {
    this.unsubscribe = coverage.onChange(() => this.release());
  }

  report(rule: JsonObject, problems: readonly ValidationProblem[]): void {
    const key = keyOf(rule);
    const version = versionOf(rule);
    if (problems.length > 0 || this.coverage.covers(version) || this.confirmedAtAdmission(rule)) {
      this.held.delete(key);
      this.inner.report(rule, problems);
      return;
    }
    this.held.set(key, { rule, problems, version });
  }

  private confirmedAtAdmission(rule: JsonObject): boolean {
    const uid = metaString(rule, 'uid');
    const generation = generationOf(rule);
    return !!this.confirmed && !!uid && generation !== undefined && this.confirmed.has(uid, generation);
  }

  forget(namespace: string, name: string): void {
    this.held.delete(`${namespace}/${name}`);
    this.inner.forget(namespace, name);
  }

  /** Rules waiting for the registration (tests, metrics). */
  get waiting(): number {
    return this.held.size;
  }

  stop(): void {
    this.unsubscribe();
    this.held.clear();
  }

  private release(): void {
    for (const [key, h] of this.held)
      if (this.coverage.covers(h.version)) {
        this.held.delete(key);
        this.inner.report(h.rule, h.problems);
      }
  }
}
