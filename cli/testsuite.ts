// Loading a ModRuleTest suite: finding test files, then reading and checking everything they refer to.
import { readdir, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { JsonObject, JsonValue } from '../util/json';
import { ManifestSyntaxError, parseYamlDocuments } from '../util/yaml';
import { DuplicateKey, duplicateKeyProblem } from '../util/yaml-duplicates';
import { AdmissionOperation } from '../rule/types';
import { RuleStore } from '../store/rules';
import { loadPaths, loadRules, parseDocuments } from './load';
import { identity, nameOf, scope } from './objects';
import { warnDuplicateKeys } from './duplicates';
import { CommandIO, displayName, readInput, STDIN, UsageError, yamlErrorText } from './io';
import { parseTestSpec, ResultSpec, TEST_FILE_PATTERN, TestSpec } from './testfile';
import { messageOf } from '../util/errors';
import { metadataOf } from '../util/meta';

/** One object a suite admits, with the operation and the old version it is admitted with. */
export interface Candidate {
  object: JsonObject;
  operation: AdmissionOperation;
  old: JsonObject | null;
  kind: string;
  namespace: string | null;
  name: string;
}

/** A suite read and checked: its rules, cluster objects and the cases to run. */
export interface Prepared {
  spec: TestSpec;
  rules: JsonObject[];
  cluster: JsonObject[];
  cases: Array<{ result: ResultSpec; candidate: Candidate; ruleKeys: string[] }>;
}

/**
 * Test files under the paths: files as given (`-`: standard input), folders searched recursively for
 * modrule-test.yaml files.
 */
export async function findTestFiles(paths: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  for (const path of paths) {
    if (path === STDIN) {
      out.push(path);
      continue;
    }
    let info;
    try {
      info = await stat(path);
    } catch (err) {
      throw new UsageError(`cannot read ${path}: ${messageOf(err)}`);
    }
    if (!info.isDirectory()) {
      out.push(path);
      continue;
    }
    const found = await walk(path);
    if (found.length === 0) throw new UsageError(`${path}: no test files (modrule-test.yaml) found`);
    out.push(...found);
  }
  return out;
}

async function walk(dir: string): Promise<string[]> {
  const out: string[] = [];
  const entries = await readdir(dir, { withFileTypes: true });
  for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    if (e.name === 'node_modules' || e.name.startsWith('.')) continue;
    const full = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await walk(full)));
    else if (TEST_FILE_PATTERN.test(e.name)) out.push(full);
  }
  return out;
}

/**
 * Reads one test file: a Prepared suite per document; throws a UsageError naming file and field. Everything a
 * test file refers to is read and checked before any case runs, so bad input is exit 2, not a FAIL.
 */
export async function prepareFile(file: string, io: CommandIO): Promise<Prepared[]> {
  let docs: JsonValue[];
  const text = await readInput(file, io);
  const duplicates: DuplicateKey[] = [];
  try {
    docs = parseYamlDocuments(text, duplicates);
  } catch (err) {
    if (err instanceof ManifestSyntaxError) throw new UsageError(yamlErrorText(file, text, err));
    throw err;
  }
  const name = displayName(file);
  if (duplicates.length > 0)
    throw new UsageError(
      duplicates
        .map((d) => ({ d, p: duplicateKeyProblem(d) }))
        .map(({ d, p }) => `${name}:${d.line}: document ${d.document}: ${p.field}: ${p.message}`)
        .join('\n'),
    );
  if (docs.length === 0) throw new UsageError(`${name}: no ModRuleTest document`);
  const out: Prepared[] = [];
  // A suite without metadata.name is named after its folder (read from standard input: "stdin").
  const fallback = file === STDIN ? 'stdin' : basename(dirname(file));
  for (const [i, doc] of docs.entries()) {
    const where = docs.length > 1 ? `${name} (document ${i + 1})` : name;
    const { spec, problems } = parseTestSpec(doc, file, fallback);
    if (!spec) {
      throw new UsageError(
        problems.map((p) => `${where}: ${p.field ? `${p.field}: ` : ''}${p.message}`).join('\n'),
      );
    }
    out.push(await prepareSpec(spec, where, io));
  }
  return out;
}

async function prepareSpec(spec: TestSpec, where: string, io: CommandIO): Promise<Prepared> {
  const inTest = (message: string): UsageError => new UsageError(`${where}: ${message}`);
  const store = new RuleStore({
    clusterNamespace: spec.clusterNamespace,
    references: { allowSecrets: spec.allowSecretReferences },
  });
  const rules = await loadRules(store, spec.rules, spec.namespace, io).catch(rethrowIn(inTest));
  // Namespaces, Nodes, owners and objects the rules reference.
  const clusterFiles = await loadPaths(spec.cluster, io).catch(rethrowIn(inTest));
  warnDuplicateKeys(clusterFiles, io);
  const cluster = clusterFiles.map((l) => l.object);

  const candidates: Candidate[] = [];
  for (const r of spec.resources) {
    const olds = new Map<string, JsonObject>();
    if (r.old) {
      const old = await loadPaths([r.old], io).catch(rethrowIn(inTest));
      warnDuplicateKeys(old, io);
      for (const { object } of old) olds.set(identity(object, scope(object, spec.namespace)), object);
    }
    const resources = await loadPaths([r.file], io).catch(rethrowIn(inTest));
    warnDuplicateKeys(resources, io);
    for (const { object } of resources) {
      const namespace = scope(object, spec.namespace);
      candidates.push({
        object,
        operation: r.operation,
        old: olds.get(identity(object, namespace)) ?? null,
        kind: typeof object.kind === 'string' ? object.kind : '',
        namespace,
        name: nameOf(object),
      });
    }
  }

  const cases: Prepared['cases'] = [];
  const problems: string[] = [];
  for (const result of spec.results) {
    const matches = candidates.filter((c) => selects(result, c));
    if (matches.length !== 1) {
      const known = candidates.map((c) => `${label(c)} (${c.operation})`).join(', ');
      problems.push(
        `${result.at}.resource: ${matches.length === 0 ? 'matches no resource' : `matches ${matches.length} resources (name the Kind/namespace or the operation)`}: "${result.resource}"; resources: ${known || 'none'}`,
      );
      continue;
    }
    if (matches[0].operation === 'DELETE' && result.expect.kind === 'patched') {
      problems.push(
        `${result.at}.patched: nothing is patched on DELETE (Patch rules only feed Reject rules there)`,
      );
      continue;
    }
    const ruleKeys: string[] = [];
    for (const name of result.rules ?? []) {
      const found = rules.filter((r) => ruleKeyOf(r) === name || nameOf(r) === name);
      if (found.length !== 1)
        problems.push(
          `${result.at}.rules: ${found.length === 0 ? 'no' : 'more than one'} ModRule named "${name}" (loaded: ${rules.map(ruleKeyOf).join(', ')})`,
        );
      else ruleKeys.push(ruleKeyOf(found[0]));
    }
    if (result.expect.kind === 'patched' && result.expect.source) {
      const source = result.expect.source;
      const objects = await readInput(source, io)
        .then((text) => parseDocuments(text, source))
        .catch(rethrowIn(inTest));
      warnDuplicateKeys(objects, io);
      if (objects.length !== 1) {
        problems.push(
          `${result.at}.patched: ${result.expect.source} must hold one object, found ${objects.length}`,
        );
        continue;
      }
      result.expect = { ...result.expect, object: objects[0].object };
    }
    cases.push({ result, candidate: matches[0], ruleKeys });
  }
  if (problems.length > 0) throw inTest(problems.join(`\n${where}: `));
  return { spec, rules, cluster, cases };
}

function rethrowIn(wrap: (message: string) => UsageError): (err: unknown) => never {
  return (err) => {
    if (err instanceof UsageError) throw wrap(err.message);
    throw err;
  };
}

export function ruleKeyOf(rule: JsonObject): string {
  const meta = metadataOf(rule);
  return `${String(meta.namespace)}/${nameOf(rule)}`;
}

// "name", "Kind/name" or "Kind/namespace/name".
function selects(result: ResultSpec, c: Candidate): boolean {
  if (result.operation && result.operation !== c.operation) return false;
  const parts = result.resource.split('/');
  if (parts.length === 1) return parts[0] === c.name;
  if (parts.length === 2) return parts[0] === c.kind && parts[1] === c.name;
  return parts[0] === c.kind && parts[1] === (c.namespace ?? '') && parts.slice(2).join('/') === c.name;
}

export function label(c: Candidate): string {
  return `${c.kind}/${c.namespace ? `${c.namespace}/` : ''}${c.name}`;
}
