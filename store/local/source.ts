import { FSWatcher, watch } from 'node:fs';
import { stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Logger } from '../../util/logger';
import { RuleStore } from '../rules';
import { ManifestEntry } from '../../util/yaml';
import { fingerprintFiles, listManifestFiles, loadManifestEntries, ManifestError } from './load';
import { FileHoldings, GatheredManifests } from './gathered';
import type { ReferenceObjects } from '../references';
import { messageOf } from '../../util/errors';

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
    const gathered = new GatheredManifests(store, logger, this.options.defaultNamespace ?? 'default');
    try {
      const listed = await listManifestFiles(this.options.paths);
      this.fingerprint = await fingerprintFiles(listed);
      for (const file of listed) {
        let docs: ManifestEntry[];
        try {
          docs = await loadManifestEntries(file);
        } catch (err) {
          gathered.errors.push(messageOf(err));
          gathered.keep(file, this.lastFiles.get(file));
          continue;
        }
        gathered.addFile(file, docs);
      }
    } catch (err) {
      // A path vanished or cannot be listed: keep everything we had.
      gathered.errors.push(err instanceof ManifestError ? err.message : String(err));
      this.fingerprint = 'error';
      for (const [file, previous] of this.lastFiles) gathered.keep(file, previous);
    }

    const { accepted, files, errors } = gathered.settle();
    const { namespaces, nodes, objects } = gathered;
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
}
