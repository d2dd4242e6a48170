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
import { messageOf } from '../../util/errors';
import { keyOf, objectKey } from '../../util/meta';

/**
 * What is kept of a file until the next reload, for when it stops parsing: the ModRules it had in force, compiled
 * (the store holds the same objects), and its Namespaces and Nodes. No parsed rule document is kept.
 */
export interface FileHoldings {
  readonly rules: CompiledRule[];
  readonly others: readonly JsonObject[];
}

/** A ModRule definition of this load: compiled, or what is wrong with it. */
interface RuleEntry {
  readonly file: string;
  readonly compiled?: CompiledRule;
  readonly problems?: string;
}

/** What a load puts in force: the rules accepted, what each file holds, every problem met (in report order). */
export interface Settled {
  readonly accepted: CompiledRule[];
  readonly files: Map<string, FileHoldings>;
  readonly errors: string[];
}

/**
 * What one load of the local files gathered, file by file: the last definition of each ModRule (in file order),
 * compiled as it is read, so no parsed document outlives its file's turn; the Namespaces, Nodes and other objects;
 * and the problems, reported in this order: unreadable files, duplicate definitions, invalid rules.
 */
export class GatheredManifests {
  /** The problems met reading files, and then the others (settle). */
  readonly errors: string[] = [];
  readonly namespaces = new Map<string, JsonObject>();
  readonly nodes = new Map<string, JsonObject>();
  /** Every object that is neither a ModRule, nor a Namespace or a Node: rules may read them. */
  readonly objects: JsonObject[] = [];
  private readonly duplicates: string[] = [];
  private readonly rules = new Map<string, RuleEntry>();
  private readonly others = new Map<string, JsonObject[]>();
  // One copy of each string across every file of this load (selects, kinds, apiVersions repeat in every rule).
  private readonly strings = new Map<string, string>();

  constructor(
    private readonly store: RuleStore,
    private readonly logger: Logger,
    /** Namespace for ModRules that name none, as kubectl would apply them. */
    private readonly defaultNamespace: string,
  ) {}

  /** The documents of one file read: its ModRules compiled, its other objects kept, anything else logged. */
  addFile(file: string, docs: readonly ManifestEntry[]): void {
    const kept: JsonObject[] = [];
    for (const { object: doc, duplicates: twice } of docs) {
      const kind = kindOf(doc);
      if (kind === MODRULE_KIND && doc.apiVersion === MODRULE_API_VERSION) {
        const rule = shareStrings(prepareRule(doc, this.defaultNamespace), this.strings);
        // A key given twice makes a ModRule invalid here as in `modrule validate` (cli/duplicates.ts).
        const entry = twice.length > 0 ? { problems: duplicateKeysText(twice) } : compile(this.store, rule);
        this.define(keyOf(rule), { ...entry, file });
      } else if (isObject(doc, kind)) {
        for (const d of twice)
          this.logger.warn('local manifest: duplicate key', {
            file,
            line: d.line,
            message: duplicateKeyMessage(d),
          });
        kept.push(doc);
      } else {
        this.logger.debug('local manifest ignored', { file, kind, name: nameOf(doc) });
      }
    }
    this.take(file, kept);
  }

  /** A file that cannot be read or parsed: what it held at the last load stays, its rules compiled as they were. */
  keep(file: string, previous: FileHoldings | undefined): void {
    if (!previous) return;
    for (const rule of previous.rules)
      this.define(objectKey(rule.namespace, rule.name), { compiled: rule, file });
    this.take(file, previous.others);
  }

  /** The rules to put in force: each valid one, and for an invalid one the version in force now (the store's). */
  settle(): Settled {
    const errors = [...this.errors, ...this.duplicates];
    let inForce: Map<string, CompiledRule> | undefined;
    const accepted: CompiledRule[] = [];
    const files = new Map<string, FileHoldings>();
    const holdings = (file: string): FileHoldings => {
      let h = files.get(file);
      if (!h) files.set(file, (h = { rules: [], others: this.others.get(file) ?? [] }));
      return h;
    };
    for (const [key, entry] of this.rules) {
      let rule = entry.compiled;
      if (!rule) {
        inForce ??= new Map(
          this.store
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
    for (const file of this.others.keys()) holdings(file);
    return { accepted, files, errors };
  }

  private define(key: string, entry: RuleEntry): void {
    if (this.rules.has(key))
      this.duplicates.push(`${entry.file}: ModRule ${key} is defined more than once; the last one wins`);
    this.rules.set(key, entry);
  }

  private take(file: string, docs: readonly JsonObject[]): void {
    for (const doc of docs) {
      const kind = kindOf(doc);
      const core = (doc.apiVersion ?? 'v1') === 'v1';
      if (kind === 'Namespace' && core) this.namespaces.set(nameOf(doc), doc);
      else if (kind === 'Node' && core) this.nodes.set(nameOf(doc), doc);
      else this.objects.push(doc);
    }
    this.others.set(file, docs as JsonObject[]);
  }
}

/** Whether a document other than a ModRule is kept: a named core Namespace or Node, or any named object with a kind. */
function isObject(doc: JsonObject, kind: string): boolean {
  if (!nameOf(doc)) return false;
  if ((kind === 'Namespace' || kind === 'Node') && (doc.apiVersion ?? 'v1') === 'v1') return true;
  return kind !== '' && typeof doc.apiVersion === 'string';
}

/** Defaults as the mutating webhook would fill them, and the namespace kubectl would give it. */
function prepareRule(doc: JsonObject, defaultNamespace: string): JsonObject {
  // The parsed document is this load's own and dropped once compiled: its namespace is set in place.
  const meta = isJsonObject(doc.metadata) ? doc.metadata : (doc.metadata = {});
  if (typeof meta.namespace !== 'string' || meta.namespace === '') meta.namespace = defaultNamespace;
  try {
    return withDefaults(doc);
  } catch {
    return doc; // validation reports what is wrong with it
  }
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
