import { FSWatcher, watch } from 'node:fs';
import { stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { cloneJson, isJsonObject, JsonObject, JsonValue } from '../../json/value';
import { setOwn } from '../../patch/object';
import { Logger } from '../../log/logger';
import { withDefaults } from '../../modrule/defaults';
import { MODRULE_API_VERSION, MODRULE_KIND } from '../../modrule/types';
import { formatProblems, validateModRule } from '../../modrule/validate';
import { RuleStore } from '../../store/rules';
import { fingerprintFiles, listManifestFiles, loadManifestFile, ManifestError } from './load';

export interface LocalSourceOptions {
  /** Files and folders of ModRules, Namespaces and Nodes (YAML, multi-document, folders recursive). */
  paths: readonly string[];
  store: RuleStore;
  logger: Logger;
  /** Namespace for ModRules that name none, as kubectl would apply them; default "default". */
  defaultNamespace?: string;
  /** Quiet time after a change before reloading; default 200 ms. */
  debounceMs?: number;
  /** Fallback stat poll for missed watch events; default 1000 ms. */
  pollMs?: number;
}

/** What one (re)load did. */
export interface LoadReport {
  files: number;
  rules: number;
  namespaces: number;
  nodes: number;
  /** Every problem found: unreadable files, YAML errors, invalid ModRules (each kept at its last good version). */
  errors: string[];
}

function ruleKey(rule: JsonObject): string {
  const meta = rule.metadata as JsonObject;
  return `${meta.namespace as string}/${meta.name as string}`;
}

function kindOf(doc: JsonObject): string {
  return typeof doc.kind === 'string' ? doc.kind : '';
}

function nameOf(doc: JsonObject): string {
  const meta = doc.metadata;
  return isJsonObject(meta) && typeof meta.name === 'string' ? meta.name : '';
}

/**
 * Feeds a RuleStore from local files and keeps it in step with them. Bad input never empties the store:
 * a file that does not parse keeps its previous contents in force, and an invalid ModRule keeps its
 * previous valid version (a new invalid rule is left out); everything else in the same reload applies.
 */
export class LocalRuleSource {
  private lastFiles = new Map<string, JsonObject[]>();
  private lastGoodRules = new Map<string, JsonObject>();
  private watchers: FSWatcher[] = [];
  private timer: NodeJS.Timeout | null = null;
  private debounce: NodeJS.Timeout | null = null;
  private fingerprint = '';
  private running: Promise<LoadReport> | null = null;
  private again = false;
  private closed = false;
  private readonly listeners = new Set<(report: LoadReport) => void>();

  constructor(private readonly options: LocalSourceOptions) {}

  /** Reads everything now and updates the store; concurrent calls share one run, and a call during a run queues one more. */
  reload(): Promise<LoadReport> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.load().finally(() => {
      this.running = null;
      if (this.again && !this.closed) {
        this.again = false;
        void this.reload();
      }
    });
    return this.running;
  }

  /** Starts watching the paths (directory watches plus a stat poll); call after the first reload. */
  watch(): void {
    if (this.closed || this.timer) return;
    const dirs = new Set<string>();
    void Promise.all(
      this.options.paths.map(async (p) => {
        try {
          dirs.add((await stat(p)).isDirectory() ? p : dirname(p));
        } catch {
          dirs.add(dirname(p));
        }
      }),
    ).then(() => {
      if (this.closed) return;
      for (const dir of dirs) this.watchDir(dir);
    });
    this.timer = setInterval(() => void this.poll(), this.options.pollMs ?? 1000);
    this.timer.unref();
  }

  /** Called after every reload (for tests and the CLI's messages). */
  onReload(listener: (report: LoadReport) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Stops watching. */
  close(): void {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    if (this.debounce) clearTimeout(this.debounce);
    for (const w of this.watchers) w.close();
    this.watchers = [];
    this.listeners.clear();
  }

  private watchDir(dir: string): void {
    const onEvent = () => this.schedule();
    try {
      // Recursive watching is native on Linux since Node 20; the poll covers platforms where it is not.
      this.watchers.push(watch(dir, { recursive: true }, onEvent).on('error', () => undefined));
    } catch {
      try {
        this.watchers.push(watch(dir, onEvent).on('error', () => undefined));
      } catch (err) {
        this.options.logger.warn('cannot watch folder; polling only', { dir, error: (err as Error).message });
      }
    }
  }

  private schedule(): void {
    if (this.closed) return;
    if (this.debounce) clearTimeout(this.debounce);
    this.debounce = setTimeout(() => {
      this.debounce = null;
      void this.reload();
    }, this.options.debounceMs ?? 200);
    this.debounce.unref();
  }

  private async poll(): Promise<void> {
    if (this.closed || this.running || this.debounce) return;
    try {
      const files = await listManifestFiles(this.options.paths);
      if ((await fingerprintFiles(files)) !== this.fingerprint) this.schedule();
    } catch {
      if (this.fingerprint !== 'error') this.schedule();
    }
  }

  private async load(): Promise<LoadReport> {
    const { logger } = this.options;
    const errors: string[] = [];
    const files = new Map<string, JsonObject[]>();
    // One copy of each string across every file of this load (selects, kinds, apiVersions repeat in every rule).
    const strings = new Map<string, string>();
    try {
      const listed = await listManifestFiles(this.options.paths);
      this.fingerprint = await fingerprintFiles(listed);
      for (const file of listed) {
        try {
          files.set(file, this.holdings(await loadManifestFile(file), file, strings));
        } catch (err) {
          errors.push((err as Error).message);
          const previous = this.lastFiles.get(file);
          if (previous) files.set(file, previous);
        }
      }
    } catch (err) {
      // A path vanished or cannot be listed: keep everything we had.
      errors.push(err instanceof ManifestError ? err.message : String(err));
      this.fingerprint = 'error';
      for (const [file, docs] of this.lastFiles) files.set(file, docs);
    }

    const rules = new Map<string, { rule: JsonObject; file: string }>();
    const namespaces = new Map<string, JsonObject>();
    const nodes = new Map<string, JsonObject>();
    for (const [file, docs] of files) {
      for (const doc of docs) {
        const kind = kindOf(doc);
        if (kind === MODRULE_KIND && doc.apiVersion === MODRULE_API_VERSION) {
          const rule = doc; // prepared by holdings()
          const key = ruleKey(rule);
          if (rules.has(key))
            errors.push(`${file}: ModRule ${key} is defined more than once; the last one wins`);
          rules.set(key, { rule, file });
        } else if (kind === 'Namespace' && (doc.apiVersion ?? 'v1') === 'v1' && nameOf(doc)) {
          namespaces.set(nameOf(doc), doc);
        } else if (kind === 'Node' && (doc.apiVersion ?? 'v1') === 'v1' && nameOf(doc)) {
          nodes.set(nameOf(doc), doc);
        }
      }
    }

    const accepted: JsonObject[] = [];
    const acceptedKeys = new Map<string, JsonObject>();
    for (const [key, { rule, file }] of rules) {
      let problems: string;
      try {
        const found = validateModRule(rule);
        problems = found.length > 0 ? formatProblems(found) : '';
      } catch (err) {
        problems = `validation failed: ${(err as Error).message}`;
      }
      if (problems === '') {
        accepted.push(rule);
        acceptedKeys.set(key, rule);
        continue;
      }
      const previous = this.lastGoodRules.get(key);
      errors.push(
        `${file}: ModRule ${key} is invalid (${previous ? 'previous version stays in force' : 'not loaded'}): ${problems}`,
      );
      if (previous) {
        accepted.push(previous);
        acceptedKeys.set(key, previous);
      }
    }

    const rejected = this.options.store.replaceRules(accepted);
    for (const r of rejected) {
      acceptedKeys.delete(`${r.namespace}/${r.name}`);
      errors.push(`ModRule ${r.namespace}/${r.name} was refused by the store: ${formatProblems(r.problems)}`);
    }
    this.options.store.replaceNamespaces([...namespaces.values()]);
    this.options.store.replaceNodes([...nodes.values()]);
    this.lastFiles = files;
    this.lastGoodRules = acceptedKeys;

    const report: LoadReport = {
      files: files.size,
      rules: acceptedKeys.size,
      namespaces: namespaces.size,
      nodes: nodes.size,
      errors,
    };
    for (const e of errors) logger.error('local rules: problem', { error: e });
    logger.info('local rules loaded', {
      files: report.files,
      rules: report.rules,
      namespaces: report.namespaces,
      nodes: report.nodes,
      problems: errors.length,
    });
    for (const l of [...this.listeners]) l(report);
    return report;
  }

  /**
   * What is kept of a file until the next reload: its ModRules (prepared, the very objects that stay in force when
   * a later version is invalid), Namespaces and Nodes. Everything else is let go right after parsing.
   */
  private holdings(docs: JsonObject[], file: string, strings: Map<string, string>): JsonObject[] {
    const out: JsonObject[] = [];
    for (const doc of docs) {
      const kind = kindOf(doc);
      if (kind === MODRULE_KIND && doc.apiVersion === MODRULE_API_VERSION)
        out.push(shareStrings(this.prepareRule(doc), strings));
      else if ((kind === 'Namespace' || kind === 'Node') && (doc.apiVersion ?? 'v1') === 'v1' && nameOf(doc))
        out.push(doc);
      else this.options.logger.debug('local manifest ignored', { file, kind, name: nameOf(doc) });
    }
    return out;
  }

  /** Defaults as the mutating webhook would fill them, and the namespace kubectl would give it. */
  private prepareRule(doc: JsonObject): JsonObject {
    const copy = cloneJson(doc);
    const meta = isJsonObject(copy.metadata) ? copy.metadata : (copy.metadata = {});
    if (typeof meta.namespace !== 'string' || meta.namespace === '') {
      meta.namespace = this.options.defaultNamespace ?? 'default';
    }
    try {
      return withDefaults(copy);
    } catch {
      return copy; // validation reports what is wrong with it
    }
  }
}

/** Replaces every string value of a parsed document (mutated in place) by its first copy in `strings`. */
function shareStrings<T extends JsonValue>(v: T, strings: Map<string, string>): T {
  if (typeof v === 'string') {
    const seen = strings.get(v);
    if (seen !== undefined) return seen as T;
    strings.set(v, v);
    return v;
  }
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) v[i] = shareStrings(v[i], strings);
  } else if (isJsonObject(v)) {
    for (const k of Object.keys(v)) {
      const x = v[k];
      if (typeof x === 'object' || typeof x === 'string') setOwn(v, k, shareStrings(x, strings));
    }
  }
  return v;
}
