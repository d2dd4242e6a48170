import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ManifestSyntaxError, parseManifestEntries } from '../util/yaml';
import { DuplicateKey, duplicateKeyProblem } from '../util/yaml-duplicates';
import { cloneJson, isJsonObject, JsonObject } from '../util/json';
import { MODRULE_KIND } from '../rule/types';
import { RuleStore } from '../store/rules';
import { ReadObject } from './duplicates';
import { nameOf, namespaceOf } from './objects';
import { CommandIO, readInput, UsageError, yamlErrorText } from './io';
import { messageOf } from '../util/errors';

// What every offline command reads: files, folders (recursive) or standard input, as object documents, and the
// ModRules among them loaded into a store with every problem named by file, rule and field.

/** One object document and the file it came from. */
export interface Loaded extends ReadObject {
  file: string;
  object: JsonObject;
  /** 1-based position of its document in the file (a List's items share theirs). */
  document: number;
  /** Keys its document gives twice (the object holds the last of each). */
  duplicates: DuplicateKey[];
}

/**
 * Loads ModRules from files and folders into the store (rules without a namespace get `defaultNamespace`) and
 * returns them as loaded; throws a UsageError naming file, rule and field for every invalid one.
 */
export async function loadRules(
  store: RuleStore,
  paths: readonly string[],
  defaultNamespace: string,
  io: CommandIO,
): Promise<JsonObject[]> {
  return (await loadRuleFiles(store, paths, defaultNamespace, io)).rules;
}

/** loadRules, and the other objects the files hold (CustomResourceDefinitions beside the rules, ...). */
export async function loadRuleFiles(
  store: RuleStore,
  paths: readonly string[],
  defaultNamespace: string,
  io: CommandIO,
): Promise<{ rules: JsonObject[]; others: JsonObject[] }> {
  const invalid: string[] = [];
  const seen = new Map<string, string>();
  const accepted: JsonObject[] = [];
  const others: JsonObject[] = [];
  for (const { file, object, duplicates } of await loadPaths(paths, io)) {
    if (object.kind !== MODRULE_KIND) {
      others.push(object); // other documents in rule folders are not ours
      continue;
    }
    const rule = cloneJson(object);
    if (isJsonObject(rule.metadata) && !rule.metadata.namespace) rule.metadata.namespace = defaultNamespace;
    const id = `${namespaceOf(rule) ?? defaultNamespace}/${nameOf(rule) || '<unnamed>'}`;
    const problems = duplicates.length > 0 ? duplicates.map(duplicateKeyProblem) : store.upsertRule(rule);
    for (const p of problems)
      invalid.push(`${file}: ModRule ${id}: ${p.field ? `${p.field}: ` : ''}${p.message}`);
    if (problems.length === 0) {
      const before = seen.get(id);
      if (before) io.stderr(`warning: ModRule ${id} in ${file} replaces the one in ${before}\n`);
      seen.set(id, file);
      accepted.push(rule);
    }
  }
  if (invalid.length > 0) throw new UsageError(`invalid ModRules:\n  ${invalid.join('\n  ')}`);
  return { rules: accepted, others };
}

/** Reads files, folders (recursive .yaml/.yml/.json, sorted) or `-`, and returns every object document. */
export async function loadPaths(paths: readonly string[], io: CommandIO): Promise<Loaded[]> {
  const out: Loaded[] = [];
  for (const path of paths) {
    for (const file of await expandPath(path)) {
      const text = await readInput(file, io);
      out.push(...parseDocuments(text, file === '-' ? '<stdin>' : file));
    }
  }
  return out;
}

/** A path as files: itself, or a folder's .yaml/.yml/.json files (recursive, sorted); throws UsageError. */
export async function expandPath(path: string): Promise<string[]> {
  if (path === '-') return ['-'];
  let info;
  try {
    info = await stat(path);
  } catch (err) {
    throw new UsageError(`cannot read ${path}: ${messageOf(err)}`);
  }
  if (!info.isDirectory()) return [path];
  const files: string[] = [];
  const entries = await readdir(path, { withFileTypes: true });
  for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const full = join(path, e.name);
    if (e.isDirectory()) files.push(...(await expandPath(full)));
    else if (/\.(ya?ml|json)$/i.test(e.name)) files.push(full);
  }
  return files;
}

/** Splits multi-document YAML (or JSON) into objects; `kind: ...List` documents contribute their items. */
export function parseDocuments(text: string, file: string): Loaded[] {
  try {
    return parseManifestEntries(text).map(({ object, document, duplicates }) => ({
      file,
      object,
      document,
      duplicates,
    }));
  } catch (err) {
    if (err instanceof ManifestSyntaxError) throw new UsageError(yamlErrorText(file, text, err));
    throw err;
  }
}
