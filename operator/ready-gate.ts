import { isJsonObject, JsonObject } from '../util/json';
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
  ) {
    this.unsubscribe = coverage.onChange(() => this.release());
  }

  report(rule: JsonObject, problems: readonly ValidationProblem[]): void {
    const key = keyOf(rule);
    const version = versionOf(rule);
    if (problems.length > 0 || this.coverage.covers(version)) {
      this.held.delete(key);
      this.inner.report(rule, problems);
      return;
    }
    this.held.set(key, { rule, problems, version });
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
