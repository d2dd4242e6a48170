import { readdir, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join, relative } from 'node:path';
import { stringify } from 'yaml';
import { admit, AdmissionOutcome } from '../engine/admit';
import { AdmissionExplanation, explainAdmission } from '../engine/explain';
import { isJsonObject, JsonObject, JsonValue } from '../util/json';
import { ManifestSyntaxError, parseYamlDocuments } from '../util/yaml';
import { compileModRule } from '../modrule/compile';
import { AdmissionOperation, ModRule } from '../modrule/types';
import { RuleStore } from '../store/rules';
import {
  admissionInput,
  identity,
  loadPaths,
  loadRules,
  nameOf,
  parseDocuments,
  resultObject,
  restoreNamespace,
  scope,
  withNamespace,
} from './apply';
import { diffLines, firstMismatch, projectOnto, withContext } from './diff';
import { formatExplanation, palette, Palette, shortValue, wantColor } from './explain';
import { parsePathArgs } from './args';
import { Command, CommandIO, readInput, UsageError } from './io';
import { Expectation, parseTestSpec, ResultSpec, TEST_FILE_PATTERN, TestSpec } from './testfile';

const USAGE = `usage: modrule test PATH... [--output text|json] [--junit FILE] [--explain]

Runs ModRule test suites: files named modrule-test.yaml (or NAME.modrule-test.yaml), found recursively under
each PATH (a file PATH is read whatever its name). Each names its ModRules, the objects to admit, optional
Namespaces and Nodes, and the expected result per object: patched, rejected, unchanged or error.

  --output text|json   text (default): one row per case, then each failure with a diff and the explanation
  --junit FILE         also write a JUnit XML report (for CI systems)
  --explain            explain every case, not only the failing ones
  -h, --help           show this help

Exit status: 0 all cases pass, 1 at least one fails, 2 bad input (a test file, rule or object that does not load).
`;

/** One case's result. */
export interface CaseReport {
  test: string;
  file: string;
  resource: string;
  operation: AdmissionOperation;
  /** The ModRules the case ran with, when the test names them (otherwise all of the test's rules). */
  rules?: string[];
  expected: string;
  got: string;
  pass: boolean;
  /** Why it failed. */
  reason?: string;
  /** Unified YAML diff, expected (-) against got (+), for failed patched expectations. */
  diff?: string;
  explanation?: AdmissionExplanation;
}

interface Candidate {
  object: JsonObject;
  operation: AdmissionOperation;
  old: JsonObject | null;
  kind: string;
  namespace: string | null;
  name: string;
}

interface Prepared {
  spec: TestSpec;
  rules: JsonObject[];
  cluster: JsonObject[];
  cases: Array<{ result: ResultSpec; candidate: Candidate; ruleKeys: string[] }>;
}

/** `modrule test`: runs rule test suites and reports one row per case. */
export const run: Command = async (args, io) => {
  const parsed = parsePathArgs('test', USAGE, args, io, {
    junit: { type: 'string' },
    explain: { type: 'boolean', default: false },
  });
  if (typeof parsed === 'number') return parsed;
  const { values, output, paths: positionals } = parsed;
  let reports: CaseReport[];
  try {
    const files = await findTestFiles(positionals);
    const prepared: Prepared[] = [];
    for (const file of files) prepared.push(...(await prepareFile(file, io)));
    reports = prepared.flatMap((p) => runSuite(p, values.explain === true));
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.stderr(`modrule test: ${err.message}\n`);
    return 2;
  }
  const failed = reports.filter((r) => !r.pass).length;
  if (output === 'json') {
    io.stdout(JSON.stringify({ passed: reports.length - failed, failed, cases: reports }, null, 2) + '\n');
  } else {
    io.stdout(formatReport(reports, palette(wantColor(io.stdoutIsTTY))));
  }
  const junit = values.junit;
  if (typeof junit === 'string') {
    try {
      await writeFile(junit, junitXml(reports));
    } catch (err) {
      io.stderr(`modrule test: cannot write ${junit}: ${(err as Error).message}\n`);
      return 2;
    }
  }
  return failed > 0 ? 1 : 0;
};

/** Test files under the paths: files as given, folders searched recursively for modrule-test.yaml files. */
export async function findTestFiles(paths: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  for (const path of paths) {
    let info;
    try {
      info = await stat(path);
    } catch (err) {
      throw new UsageError(`cannot read ${path}: ${(err as Error).message}`);
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

// Everything a test file refers to is read and checked before any case runs, so bad input is exit 2, not a FAIL.
async function prepareFile(file: string, io: CommandIO): Promise<Prepared[]> {
  let docs: JsonValue[];
  try {
    docs = parseYamlDocuments(await readInput(file, io));
  } catch (err) {
    if (err instanceof ManifestSyntaxError) throw new UsageError(`${file}: ${err.message}`);
    throw err;
  }
  if (docs.length === 0) throw new UsageError(`${file}: no ModRuleTest document`);
  const out: Prepared[] = [];
  const fallback = basename(dirname(file));
  for (const [i, doc] of docs.entries()) {
    const where = docs.length > 1 ? `${file} (document ${i + 1})` : file;
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
  const store = new RuleStore({ clusterNamespace: spec.clusterNamespace });
  const rules = await loadRules(store, spec.rules, spec.namespace, io).catch(rethrowIn(inTest));
  const cluster = (await loadPaths(spec.cluster, io).catch(rethrowIn(inTest))).map((l) => l.object);
  for (const o of cluster)
    if (o.kind !== 'Namespace' && o.kind !== 'Node')
      throw inTest(`cluster: only Namespaces and Nodes stand in for the cluster, found ${String(o.kind)}`);

  const candidates: Candidate[] = [];
  for (const r of spec.resources) {
    const olds = new Map<string, JsonObject>();
    if (r.old) {
      for (const { object } of await loadPaths([r.old], io).catch(rethrowIn(inTest)))
        olds.set(identity(object, scope(object, spec.namespace)), object);
    }
    for (const { object } of await loadPaths([r.file], io).catch(rethrowIn(inTest))) {
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

function ruleKeyOf(rule: JsonObject): string {
  const meta = isJsonObject(rule.metadata) ? rule.metadata : {};
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

function label(c: Candidate): string {
  return `${c.kind}/${c.namespace ? `${c.namespace}/` : ''}${c.name}`;
}

function runSuite(p: Prepared, explainAll: boolean): CaseReport[] {
  const stores = new Map<string, { store: RuleStore; rules: JsonObject[] }>();
  const storeFor = (keys: string[]): { store: RuleStore; rules: JsonObject[] } => {
    const id = keys.length === 0 ? '*' : [...keys].sort().join(',');
    let entry = stores.get(id);
    if (!entry) {
      const store = new RuleStore({ clusterNamespace: p.spec.clusterNamespace });
      const rules = keys.length === 0 ? p.rules : p.rules.filter((r) => keys.includes(ruleKeyOf(r)));
      for (const r of rules) store.upsertRule(r);
      for (const o of p.cluster) {
        if (o.kind === 'Namespace') store.upsertNamespace(o);
        else store.upsertNode(o);
      }
      entry = { store, rules };
      stores.set(id, entry);
    }
    return entry;
  };
  return p.cases.map(({ result, candidate, ruleKeys }) => {
    const { store, rules } = storeFor(ruleKeys);
    const snapshot = store.snapshot();
    const subject = withNamespace(candidate.object, candidate.namespace);
    const input = admissionInput(candidate.operation, subject, candidate.old, candidate.namespace);
    const outcome = admit(input, snapshot);
    const object = restoreNamespace(resultObject(outcome, subject), candidate.object);
    const verdict = check(result.expect, outcome, object);
    const report: CaseReport = {
      test: p.spec.name,
      file: displayPath(p.spec.file),
      resource: label(candidate),
      operation: candidate.operation,
      ...(ruleKeys.length > 0 ? { rules: ruleKeys } : {}),
      expected: describeExpectation(result.expect),
      got: describeOutcome(outcome),
      pass: verdict.pass,
      ...(verdict.reason ? { reason: verdict.reason } : {}),
      ...(verdict.diff ? { diff: verdict.diff } : {}),
    };
    if (!verdict.pass || explainAll) {
      const compiled = rules.map((r) => compileModRule(r as unknown as ModRule));
      report.explanation = explainAdmission(input, snapshot, compiled);
    }
    return report;
  });
}

function displayPath(file: string): string {
  const rel = relative(process.cwd(), file);
  return rel === '' || rel.startsWith('..') ? file : rel;
}

function ruleText(r: { rule: { namespace: string; name: string }; message: string }): string {
  return `${r.rule.namespace}/${r.rule.name}${r.message ? `: ${r.message}` : ''}`;
}

function describeExpectation(e: Expectation): string {
  switch (e.kind) {
    case 'patched':
      return 'patched';
    case 'unchanged':
      return 'unchanged';
    case 'rejected':
      return e.message ? `rejected "${e.message}"` : 'rejected';
    case 'error':
      return e.message ? `error "${e.message}"` : 'error';
  }
}

function describeOutcome(o: AdmissionOutcome): string {
  const parts: string[] = [];
  if (!o.allowed) parts.push(`rejected: ${o.rejections.map(ruleText).join('; ')}`);
  else if (o.patch.length > 0) parts.push(`patched (${o.patch.length} op${o.patch.length === 1 ? '' : 's'})`);
  else parts.push('unchanged');
  if (o.failures.length > 0) parts.push(`error: ${o.failures.map(ruleText).join('; ')}`);
  return parts.join(', ');
}

function check(
  e: Expectation,
  o: AdmissionOutcome,
  object: JsonObject,
): { pass: boolean; reason?: string; diff?: string } {
  const errors = o.failures.map(ruleText);
  if (e.kind === 'error') {
    if (errors.some((m) => m.includes(e.message))) return { pass: true };
    return {
      pass: false,
      reason:
        errors.length === 0 ? 'no rule failed at run time' : `no failure message contains "${e.message}"`,
    };
  }
  if (errors.length > 0) return { pass: false, reason: `a rule failed at run time: ${errors.join('; ')}` };
  if (e.kind === 'rejected') {
    if (o.allowed) return { pass: false, reason: 'the object was admitted' };
    if (o.rejections.map(ruleText).some((m) => m.includes(e.message))) return { pass: true };
    return { pass: false, reason: `no rejection message contains "${e.message}"` };
  }
  if (!o.allowed) return { pass: false, reason: 'the object was rejected' };
  if (e.kind === 'unchanged') {
    if (o.patch.length === 0) return { pass: true };
    return {
      pass: false,
      reason: 'the rules changed the object',
      diff: yamlDiff(o.patch as unknown as JsonValue, []),
    };
  }
  const mismatch = firstMismatch(object, e.object);
  const diff = mismatch ? yamlDiff(e.object, projectOnto(object, e.object) ?? null) : undefined;
  if (mismatch) {
    const got = mismatch.actual === undefined ? 'nothing' : shortValue(mismatch.actual);
    return {
      pass: false,
      reason: `at ${mismatch.path}: expected ${shortValue(mismatch.expected)}, got ${got}`,
      diff,
    };
  }
  if (o.patch.length === 0)
    return { pass: false, reason: 'no rule changed the object (it already looked like that)' };
  return { pass: true };
}

function yamlDiff(expected: JsonValue, actual: JsonValue): string {
  const lines = withContext(diffLines(toYaml(expected), toYaml(actual)));
  return lines.map((l) => `${l.kind} ${l.text}`).join('\n') + '\n';
}

function toYaml(v: JsonValue): string {
  return stringify(v, { lineWidth: 0, aliasDuplicateObjects: false });
}

/** The text report: a table of cases, then the details of every failure and the summary line. */
export function formatReport(reports: readonly CaseReport[], p: Palette): string {
  const header = ['TEST', 'RESOURCE', 'EXPECTED', 'GOT', 'RESULT'];
  const rows = reports.map((r) => [
    r.test,
    `${r.resource}${r.operation === 'CREATE' ? '' : ` (${r.operation})`}${r.rules ? ` [${r.rules.join(', ')}]` : ''}`,
    r.expected,
    r.got,
    r.pass ? 'PASS' : 'FAIL',
  ]);
  // EXPECTED and GOT are cut to keep rows on a line; the failure details below give them in full.
  const limits = [Infinity, Infinity, 60, 60, Infinity];
  const widths = header.map((h, i) =>
    Math.min(limits[i], Math.max(h.length, ...rows.map((row) => row[i].length))),
  );
  const cell = (text: string, i: number): string =>
    i === header.length - 1
      ? text
      : (text.length > widths[i] ? `${text.slice(0, widths[i] - 1)}…` : text).padEnd(widths[i]);
  const lines = [header.map(cell).join('  ')];
  for (const row of rows) {
    const text = row.map(cell).join('  ');
    lines.push(
      row[4] === 'PASS' ? text.replace(/PASS$/, p.green('PASS')) : text.replace(/FAIL$/, p.red('FAIL')),
    );
  }
  let out = lines.join('\n') + '\n';
  for (const r of reports) {
    if (r.pass && !r.explanation) continue;
    const title = `${r.pass ? 'PASS' : 'FAIL'} ${r.test}: ${r.resource} (${r.operation})`;
    out += `\n${r.pass ? p.bold(title) : p.red(p.bold(title))}\n`;
    out += `  expected ${r.expected}, got ${r.got}\n`;
    if (r.reason) out += `  ${r.reason}\n`;
    if (r.diff) {
      out += `  ${p.red('- expected')}  ${p.green('+ got')}\n`;
      for (const line of r.diff.replace(/\n$/, '').split('\n')) {
        const colour = line.startsWith('-')
          ? p.red
          : line.startsWith('+')
            ? p.green
            : (s: string): string => s;
        out += `  ${colour(line)}\n`;
      }
    }
    if (r.explanation)
      out += formatExplanation(`  explanation: ${r.resource}`, r.explanation, p).replace(/\n(?=.)/g, '\n  ');
  }
  const failed = reports.filter((r) => !r.pass).length;
  const summary = `\n${reports.length - failed} passed, ${failed} failed\n`;
  return out + (failed > 0 ? p.red(summary) : p.green(summary));
}

function xml(text: string): string {
  return (
    text
      .replace(/&/g, '&amp;')
      .replace(/</g, '&lt;')
      .replace(/>/g, '&gt;')
      .replace(/"/g, '&quot;')
      // Characters XML 1.0 cannot carry at all.
      // eslint-disable-next-line no-control-regex
      .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, '')
  );
}

/** A JUnit XML report: a testsuite per test, a testcase per case, failures with reason, diff and explanation. */
export function junitXml(reports: readonly CaseReport[]): string {
  const suites = new Map<string, CaseReport[]>();
  for (const r of reports) {
    const key = `${r.file}\u0000${r.test}`;
    suites.set(key, [...(suites.get(key) ?? []), r]);
  }
  const failed = reports.filter((r) => !r.pass).length;
  let out = `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="modrule test" tests="${reports.length}" failures="${failed}">\n`;
  for (const cases of suites.values()) {
    const { test, file } = cases[0];
    const f = cases.filter((c) => !c.pass).length;
    out += `  <testsuite name="${xml(test)}" file="${xml(file)}" tests="${cases.length}" failures="${f}">\n`;
    for (const c of cases) {
      const name = `${c.resource} ${c.operation}: ${c.expected}`;
      out += `    <testcase classname="${xml(test)}" name="${xml(name)}"`;
      if (c.pass) {
        out += ' />\n';
        continue;
      }
      const body = [
        `got ${c.got}`,
        c.reason ?? '',
        c.diff ?? '',
        c.explanation ? formatExplanation(c.resource, c.explanation, palette(false)) : '',
      ]
        .filter(Boolean)
        .join('\n');
      out += `>\n      <failure message="${xml(`expected ${c.expected}, got ${c.got}`)}">${xml(body)}</failure>\n    </testcase>\n`;
    }
    out += '  </testsuite>\n';
  }
  return out + '</testsuites>\n';
}
