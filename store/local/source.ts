import { FSWatcher, watch } from 'node:fs';
import { stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { isJsonObject, JsonObject, JsonValue } from '../../util/json';
import { setOwn } from '../../patch/object';
import { Logger } from '../../util/logger';
import { withDefaults } from '../../rule/defaults';
import { MODRULE_API_VERSION, MODRULE_KIND } from '../../rule/types';
import { formatProblems } from '../../rule/problems';
import type { CompiledRule } from '../../rule/compile';
import { RuleStore } from '../rules';
import { ManifestEntry } from '../../util/yaml';
import { DuplicateKey, duplicateKeyMessage, duplicateKeyProblem } from '../../util/yaml-duplicates';
import { fingerprintFiles, listManifestFiles, loadManifestEntries, ManifestError } from './load';
import type { ReferenceObjects } from '../references';
import { messageOf } from '../../util/errors';
import { keyOf, objectKey } from '../../util/meta';

export interface LocalSourceOptions {
  /** Files and folders of ModRules, Namespaces, Nodes and objects rules read (YAML, multi-document, recursive). */
  paths: readonly string[];
  store: RuleStore;
  /** Where the objects rules read (owners, spec.references) go; every object that is not a ModRule. */
  references?: ReferenceObjects;
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
  /** Other objects (owners and referenced objects), rules may read them. */
  objects: number;
  /** Every problem found: unreadable files, YAML errors, invalid ModRules (each kept at its last good version). */
  errors: string[];
}

/**
 * What is kept of a file until the next reload, for when it stops parsing: the ModRules it had in force, compiled
 * (the store holds the same objects), and its Namespaces and Nodes. No parsed rule document is kept.
 */
interface FileHoldings {
  readonly rules: CompiledRule[];
  readonly others: readonly JsonObject[];
}

/** A ModRule definition of this load: compiled, or what is wrong with it. */
interface RuleEntry {
  readonly file: string;
  readonly compiled?: CompiledRule;
  readonly problems?: string;
}

function compile(store: RuleStore, rule: JsonObject): { compiled?: CompiledRule; problems?: string } {
  try {
    const { rule: compiled, problems } = store.compileRule(rule);
    return compiled && problems.length === 0 ? { compiled } : { problems: formatProblems(problems) };
  } catch (err) {
    return { problems: `validation failed: ${messageOf(err)}` };
  }
}

/** The problems of a ModRule that gives keys twice, as its field paths. */
function duplicateKeysText(duplicates: readonly DuplicateKey[]): string {
  return duplicates
    .map(duplicateKeyProblem)
    .map((p) => `${p.field}: ${p.message}`)
    .join('; ');
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
  private lastFiles = new Map<string, FileHoldings>();
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
        this.options.logger.warn('cannot watch folder; polling only', { dir, error: messageOf(err) });
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
    const { logger, store } = this.options;
    // Reported in this order: unreadable files, duplicate definitions, invalid rules.
    const errors: string[] = [];
    const duplicates: string[] = [];
    // The last definition of each ModRule (in file order), compiled as it is read: no parsed document outlives
    // its file's turn in this loop.
    const rules = new Map<string, RuleEntry>();
    const namespaces = new Map<string, JsonObject>();
    const nodes = new Map<string, JsonObject>();
    const others = new Map<string, JsonObject[]>();
    const define = (key: string, entry: RuleEntry) => {
      if (rules.has(key))
        duplicates.push(`${entry.file}: ModRule ${key} is defined more than once; the last one wins`);
      rules.set(key, entry);
    };
    const objects: JsonObject[] = [];
    const take = (file: string, docs: readonly JsonObject[]) => {
      for (const doc of docs) {
        const kind = kindOf(doc);
        const core = (doc.apiVersion ?? 'v1') === 'v1';
        if (kind === 'Namespace' && core) namespaces.set(nameOf(doc), doc);
        else if (kind === 'Node' && core) nodes.set(nameOf(doc), doc);
        else objects.push(doc);
      }
      others.set(file, docs as JsonObject[]);
    };
    // A file that cannot be read or parsed: the rules it had in force stay, compiled as they were.
    const keep = (file: string) => {
      const previous = this.lastFiles.get(file);
      if (!previous) return;
      for (const rule of previous.rules)
        define(objectKey(rule.namespace, rule.name), { compiled: rule, file });
      take(file, previous.others);
    };
    // One copy of each string across every file of this load (selects, kinds, apiVersions repeat in every rule).
    const strings = new Map<string, string>();
    try {
      const listed = await listManifestFiles(this.options.paths);
      this.fingerprint = await fingerprintFiles(listed);
      for (const file of listed) {
        let docs: ManifestEntry[];
        try {
          docs = await loadManifestEntries(file);
        } catch (err) {
          errors.push(messageOf(err));
          keep(file);
          continue;
        }
        const kept: JsonObject[] = [];
        for (const { object: doc, duplicates: twice } of docs) {
          const kind = kindOf(doc);
          if (kind === MODRULE_KIND && doc.apiVersion === MODRULE_API_VERSION) {
            const rule = shareStrings(this.prepareRule(doc), strings);
            // A key given twice makes a ModRule invalid here as in `modrule validate` (cli/duplicates.ts).
            const entry = twice.length > 0 ? { problems: duplicateKeysText(twice) } : compile(store, rule);
            define(keyOf(rule), { ...entry, file });
          } else if (
            nameOf(doc) &&
            ((kind === 'Namespace' || kind === 'Node') && (doc.apiVersion ?? 'v1') === 'v1'
              ? true
              : kind !== '' && typeof doc.apiVersion === 'string')
          ) {
            for (const d of twice)
              logger.warn('local manifest: duplicate key', {
                file,
                line: d.line,
                message: duplicateKeyMessage(d),
              });
            kept.push(doc);
          } else {
            logger.debug('local manifest ignored', { file, kind, name: nameOf(doc) });
          }
        }
        take(file, kept);
      }
    } catch (err) {
      // A path vanished or cannot be listed: keep everything we had.
      errors.push(err instanceof ManifestError ? err.message : String(err));
      this.fingerprint = 'error';
      for (const file of this.lastFiles.keys()) keep(file);
    }

    errors.push(...duplicates);
    // An invalid rule keeps the version in force now (the store's), if any.
    let inForce: Map<string, CompiledRule> | undefined;
    const accepted: CompiledRule[] = [];
    const files = new Map<string, FileHoldings>();
    const holdings = (file: string): FileHoldings => {
      let h = files.get(file);
      if (!h) files.set(file, (h = { rules: [], others: others.get(file) ?? [] }));
      return h;
    };
    for (const [key, entry] of rules) {
      let rule = entry.compiled;
      if (!rule) {
        inForce ??= new Map(
          store
            .allRules()
            .filter((r) => !r.podController) // a Pod rule stands for its variants
            .map((r) => [objectKey(r.namespace, r.name), r]),
        );
        rule = inForce.get(key);
        errors.push(
          `${entry.file}: ModRule ${key} is invalid (${rule ? 'previous version stays in force' : 'not loaded'}): ${entry.problems}`,
        );
      }
      if (!rule) continue;
      accepted.push(rule);
      holdings(entry.file).rules.push(rule);
    }
    for (const file of others.keys()) holdings(file);

    store.replaceRules([], accepted);
    store.replaceNamespaces([...namespaces.values()]);
    store.replaceNodes([...nodes.values()]);
    // Namespaces and Nodes may be referenced too.
    this.options.references?.replaceFeeder('files', [...objects, ...namespaces.values(), ...nodes.values()]);
    this.lastFiles = files;

    const report: LoadReport = {
      files: files.size,
      rules: accepted.length,
      namespaces: namespaces.size,
      nodes: nodes.size,
      objects: objects.length,
      errors,
    };
    for (const e of errors) logger.error('local rules: problem', { error: e });
    logger.info('local rules loaded', {
      files: report.files,
      rules: report.rules,
      namespaces: report.namespaces,
      nodes: report.nodes,
      objects: report.objects,
      problems: errors.length,
    });
    for (const l of [...this.listeners]) l(report);
    return report;
  }

  /** Defaults as the mutating webhook would fill them, and the namespace kubectl would give it. */
  private prepareRule(doc: JsonObject): JsonObject {
    // The parsed document is this load's own and dropped once compiled: its namespace is set in place.
    const meta = isJsonObject(doc.metadata) ? doc.metadata : (doc.metadata = {});
    if (typeof meta.namespace !== 'string' || meta.namespace === '') {
      meta.namespace = this.options.defaultNamespace ?? 'default';
    }
    try {
      return withDefaults(doc);
    } catch {
      return doc; // validation reports what is wrong with it
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
