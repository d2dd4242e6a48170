// The `modrule test` file format (kind ModRuleTest), read strictly: an unknown or misspelt field is an error that
// names the file and the field, so a typo cannot silently turn a check off.
import { dirname, resolve } from 'node:path';
import { isJsonObject, JsonObject, JsonValue } from '../util/json';
import { AdmissionOperation } from '../rule/types';
import type { ListMatch } from './diff';

/** apiVersion and kind of a test file. */
export const TEST_API_VERSION = 'modrule.io/v1alpha1';
export const TEST_KIND = 'ModRuleTest';
/** File names `modrule test DIR` picks up. */
export const TEST_FILE_PATTERN = /(^|\.)modrule-test\.ya?ml$/;

/** Objects to admit: a file, with the operation and (for UPDATE) the previous versions. */
export interface ResourceSpec {
  file: string;
  operation: AdmissionOperation;
  old?: string;
}

/** What a case expects. */
export type Expectation =
  | { kind: 'patched'; object: JsonObject; source: string; lists: ListMatch }
  | { kind: 'rejected'; message: string }
  | { kind: 'unchanged' }
  | { kind: 'error'; message: string };

/** One expected result: an object of the resources, optionally with only some of the rules. */
export interface ResultSpec {
  /** Where it is in the test file, e.g. "results[2]". */
  at: string;
  resource: string;
  operation?: AdmissionOperation;
  /** Names (name or namespace/name) of the ModRules that take part; all when absent. */
  rules?: string[];
  expect: Expectation;
}

/** A parsed test file; paths are absolute. */
export interface TestSpec {
  file: string;
  name: string;
  namespace: string;
  clusterNamespace?: string;
  rules: string[];
  resources: ResourceSpec[];
  cluster: string[];
  /** Whether the rules may reference Secrets (as the operator's --allow-secret-references). */
  allowSecretReferences: boolean;
  /** `patched: FILE` expectations carry the file in `source`; the caller reads it (parsing does no I/O). */
  results: ResultSpec[];
}

/** A problem with a test file: the field and what is wrong. */
export interface TestFileProblem {
  field: string;
  message: string;
}

const TOP_FIELDS = [
  'apiVersion',
  'kind',
  'metadata',
  'namespace',
  'clusterNamespace',
  'rules',
  'resources',
  'cluster',
  'allowSecretReferences',
  'results',
];
const RESOURCE_FIELDS = ['file', 'operation', 'old'];
const RESULT_FIELDS = [
  'resource',
  'operation',
  'rules',
  'patched',
  'lists',
  'rejected',
  'unchanged',
  'error',
];
const LIST_MATCHES: readonly string[] = ['contains', 'exact'];
const EXPECTATIONS = ['patched', 'rejected', 'unchanged', 'error'] as const;
const OPERATIONS: readonly string[] = ['CREATE', 'UPDATE', 'DELETE'];

/**
 * Checks one test document and turns it into a TestSpec; `patched` given as a file name is returned as
 * { kind: 'patched', source: path } with an empty object for the caller to fill. Never throws.
 */
export function parseTestSpec(
  doc: JsonValue,
  file: string,
  fallbackName: string,
): { spec?: TestSpec; problems: TestFileProblem[] } {
  const problems: TestFileProblem[] = [];
  const problem = (field: string, message: string): void => {
    problems.push({ field, message });
  };
  if (!isJsonObject(doc)) {
    problem('', `a ${TEST_KIND} must be an object`);
    return { problems };
  }
  unknownFields(doc, TOP_FIELDS, '', problem);
  if (doc.apiVersion !== TEST_API_VERSION)
    problem('apiVersion', `must be ${TEST_API_VERSION}, got ${describe(doc.apiVersion)}`);
  if (doc.kind !== TEST_KIND) problem('kind', `must be ${TEST_KIND}, got ${describe(doc.kind)}`);
  let name = fallbackName;
  if (doc.metadata !== undefined) {
    if (!isJsonObject(doc.metadata)) problem('metadata', 'must be an object');
    else {
      unknownFields(doc.metadata, ['name'], 'metadata', problem);
      if (doc.metadata.name !== undefined) {
        if (typeof doc.metadata.name !== 'string' || doc.metadata.name === '')
          problem('metadata.name', 'must be a non-empty string');
        else name = doc.metadata.name;
      }
    }
  }
  const base = dirname(file);
  const path = (p: string): string => resolve(base, p);
  const namespace = optionalString(doc, 'namespace', problem) ?? 'default';
  const clusterNamespace = optionalString(doc, 'clusterNamespace', problem);
  const rules = pathList(doc.rules, 'rules', true, problem).map(path);
  const cluster = pathList(doc.cluster, 'cluster', false, problem).map(path);
  const allowSecrets = doc.allowSecretReferences ?? false;
  if (typeof allowSecrets !== 'boolean') problem('allowSecretReferences', 'must be true or false');

  const resources: ResourceSpec[] = [];
  if (!Array.isArray(doc.resources) || doc.resources.length === 0) {
    problem('resources', 'required: a list of files holding the objects to admit');
  } else {
    doc.resources.forEach((r, i) => {
      const at = `resources[${i}]`;
      if (typeof r === 'string' && r !== '') {
        resources.push({ file: path(r), operation: 'CREATE' });
        return;
      }
      if (!isJsonObject(r)) {
        problem(at, 'must be a file name or an object with file, operation, old');
        return;
      }
      unknownFields(r, RESOURCE_FIELDS, at, problem);
      if (typeof r.file !== 'string' || r.file === '') problem(`${at}.file`, 'required: a file name');
      const operation = operationOf(r.operation, `${at}.operation`, problem) ?? 'CREATE';
      let old: string | undefined;
      if (r.old !== undefined) {
        if (typeof r.old !== 'string' || r.old === '') problem(`${at}.old`, 'must be a file name');
        else if (operation !== 'UPDATE') problem(`${at}.old`, 'only for operation UPDATE');
        else old = path(r.old);
      }
      if (typeof r.file === 'string' && r.file !== '') resources.push({ file: path(r.file), operation, old });
    });
  }

  const results: ResultSpec[] = [];
  if (!Array.isArray(doc.results) || doc.results.length === 0) {
    problem('results', 'required: a list of expected results');
  } else {
    doc.results.forEach((r, i) => {
      const at = `results[${i}]`;
      if (!isJsonObject(r)) {
        problem(at, 'must be an object with resource and one of patched, rejected, unchanged, error');
        return;
      }
      const before = problems.length;
      unknownFields(r, RESULT_FIELDS, at, problem);
      if (typeof r.resource !== 'string' || r.resource === '')
        problem(`${at}.resource`, 'required: Kind/namespace/name, Kind/name or name');
      const operation = operationOf(r.operation, `${at}.operation`, problem);
      let ruleNames: string[] | undefined;
      if (r.rules !== undefined) {
        if (
          !Array.isArray(r.rules) ||
          r.rules.length === 0 ||
          r.rules.some((n) => typeof n !== 'string' || !n)
        )
          problem(`${at}.rules`, 'must be a non-empty list of ModRule names (name or namespace/name)');
        else ruleNames = r.rules as string[];
      }
      const given = EXPECTATIONS.filter((k) => r[k] !== undefined);
      if (given.length !== 1) {
        problem(
          at,
          given.length === 0
            ? 'expects nothing: give one of patched, rejected, unchanged, error'
            : `give only one of ${given.join(', ')}`,
        );
      }
      const expect = expectationOf(r, at, path, problem);
      if (problems.length === before && expect)
        results.push({ at, resource: r.resource as string, operation, rules: ruleNames, expect });
    });
  }
  if (problems.length > 0) return { problems };
  return {
    problems,
    spec: {
      file,
      name,
      namespace,
      clusterNamespace,
      rules,
      resources,
      cluster,
      allowSecretReferences: allowSecrets === true,
      results,
    },
  };
}

function expectationOf(
  r: JsonObject,
  at: string,
  path: (p: string) => string,
  problem: (field: string, message: string) => void,
): Expectation | undefined {
  if (r.lists !== undefined && r.patched === undefined)
    problem(`${at}.lists`, 'only with patched: how its lists compare');
  if (r.patched !== undefined) {
    const lists = r.lists ?? 'contains';
    if (typeof lists !== 'string' || !LIST_MATCHES.includes(lists)) {
      problem(`${at}.lists`, `must be contains or exact, got ${JSON.stringify(lists)}`);
      return undefined;
    }
    const how = lists as ListMatch;
    if (typeof r.patched === 'string' && r.patched !== '')
      return { kind: 'patched', object: {}, source: path(r.patched), lists: how };
    if (isJsonObject(r.patched)) return { kind: 'patched', object: r.patched, source: '', lists: how };
    problem(`${at}.patched`, 'must be an object (the expected result, or part of it) or a file name');
    return undefined;
  }
  if (r.rejected !== undefined) {
    if (typeof r.rejected === 'string') return { kind: 'rejected', message: r.rejected };
    if (r.rejected === true) return { kind: 'rejected', message: '' };
    problem(`${at}.rejected`, 'must be a message substring ("" or true: any message)');
    return undefined;
  }
  if (r.unchanged !== undefined) {
    if (r.unchanged === true) return { kind: 'unchanged' };
    problem(`${at}.unchanged`, 'must be true');
    return undefined;
  }
  if (r.error !== undefined) {
    if (typeof r.error === 'string') return { kind: 'error', message: r.error };
    if (r.error === true) return { kind: 'error', message: '' };
    problem(`${at}.error`, 'must be a message substring ("" or true: any error)');
  }
  return undefined;
}

function operationOf(
  v: JsonValue | undefined,
  field: string,
  problem: (field: string, message: string) => void,
): AdmissionOperation | undefined {
  if (v === undefined) return undefined;
  if (typeof v === 'string' && OPERATIONS.includes(v.toUpperCase()))
    return v.toUpperCase() as AdmissionOperation;
  problem(field, `must be CREATE, UPDATE or DELETE, got ${describe(v)}`);
  return undefined;
}

function optionalString(
  doc: JsonObject,
  key: string,
  problem: (field: string, message: string) => void,
): string | undefined {
  const v = doc[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || v === '') {
    problem(key, 'must be a non-empty string');
    return undefined;
  }
  return v;
}

function pathList(
  v: JsonValue | undefined,
  field: string,
  required: boolean,
  problem: (field: string, message: string) => void,
): string[] {
  if (v === undefined && !required) return [];
  if (!Array.isArray(v) || (required && v.length === 0)) {
    problem(field, `${required ? 'required: ' : 'must be '}a list of files or folders`);
    return [];
  }
  const out: string[] = [];
  v.forEach((p, i) => {
    if (typeof p === 'string' && p !== '') out.push(p);
    else problem(`${field}[${i}]`, 'must be a file or folder name');
  });
  return out;
}

function unknownFields(
  obj: JsonObject,
  known: readonly string[],
  at: string,
  problem: (field: string, message: string) => void,
): void {
  for (const key of Object.keys(obj)) {
    if (!known.includes(key))
      problem(at ? `${at}.${key}` : key, `unknown field, expected one of: ${known.join(', ')}`);
  }
}

function describe(v: JsonValue | undefined): string {
  return v === undefined ? 'nothing' : JSON.stringify(v);
}
