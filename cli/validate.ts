import { isJsonObject, JsonObject } from '../util/json';
import { excerpt } from '../util/excerpt';
import { LocatedDocument, parseLocatedDocuments } from '../util/yaml';
import { analyzeModRule, CompiledRule } from '../rule/compile';
import { findShadowedRules, lintModRule } from '../rule/lint';
import { findConflicts } from '../conflict/find';
import { DEFAULT_CLUSTER_NAMESPACE, MODRULE_KIND } from '../rule/types';
import { validateModRule } from '../rule/validate';
import { DEFAULT_REFERENCE_POLICY, ReferencePolicy } from '../rule/references';
import { ResourceCatalog } from '../scope/catalog';
import { describeUnserved, kindField, unservedKindsOf } from '../scope/unserved';
import { allowSecretsHelp } from './cluster';
import { idempotenceWarning } from '../engine/idempotence';
import { expandPath } from './load';
import { duplicateKeyProblem } from '../util/yaml-duplicates';
import { parsePathCommand } from './args';
import { EXIT, exitHelp } from './exit';
import { Command, CommandIO, displayName, readInput } from './io';
import { messageOf } from '../util/errors';

const USAGE = `usage: modrule validate PATH... [--output text|json] [--strict] [--cluster-namespace NS]

Checks ModRule files offline exactly as the admission webhook does, and reports every problem with its file,
line, document, field and message. Folders are searched recursively for .yaml, .yml and .json files ("-" reads
standard input); documents of other kinds are skipped. Suitable for pre-commit hooks and CI.

Also warns (without failing) about rules that are valid but probably wrong: #N placeholders never used, a
select that can never match its matchValue, matchFor: All with negate over a select that drops missing values,
a Patch rule repeating the patch of an earlier tier, a Patch rule that changes its own result again (run on the
other objects found under PATH, its test objects, else on built-in samples), the same ModRule name in two
places, a kind that is neither
built into Kubernetes 1.37 nor declared by a CustomResourceDefinition found under PATH (as \`modrule scope\` maps
kinds; give the folder of your CRDs as another PATH), with the kind it is likely a misspelling of.

Also reports conflicts between the rules given (docs/conflicts.md), each once with both rules and the path: two
rules of one tier that can match the same object writing different values to one path, a path written as a list
by one and as an object by another, a rule not idempotent on its own output, a Reject rule rejecting what a Patch
rule produces. Rules without a namespace are taken as applied to one namespace together.

  -o, --output text|json  text (default): one line per finding; json: one array of findings
  --strict                warnings fail too
  --cluster-namespace NS  namespace of cluster-wide rules, for the conflicts (default ${DEFAULT_CLUSTER_NAMESPACE})
${allowSecretsHelp(26)}
  -h, --help              show this help

${exitHelp('at least one problem or conflict (broken YAML included; warnings too with --strict)', 'a PATH that cannot be read')}`;

/** One finding of `modrule validate`. */
export interface Finding {
  /** error: the rule is refused; conflict: two rules (or one with itself) in conflict; warning: probably wrong. */
  severity: 'error' | 'conflict' | 'warning';
  file: string;
  /** 1-based document in the file (empty documents counted). */
  document: number;
  line: number;
  /** 1-based column, for YAML syntax errors. */
  column?: number;
  /** The offending line with a caret under the column, for YAML syntax errors. */
  excerpt?: string;
  /** "namespace/name" or "name" of the ModRule, when it has one. */
  rule: string | null;
  field: string;
  message: string;
}

const API_GROUP = 'api.kubemod.io/';

/** `modrule validate`: checks ModRule files as the webhook would. */
export const run: Command = async (args, io) => {
  const parsed = parsePathCommand(args, USAGE, {
    strict: { type: 'boolean', default: false },
    'allow-secret-references': { type: 'boolean', default: false },
    'cluster-namespace': { type: 'string', default: DEFAULT_CLUSTER_NAMESPACE },
  });
  if (parsed === 'help') {
    io.stdout(USAGE);
    return EXIT.ok;
  }
  const { values, output, paths: positionals } = parsed;
  const policy = { ...DEFAULT_REFERENCE_POLICY, allowSecrets: values['allow-secret-references'] === true };
  const clusterNamespace = String(values['cluster-namespace']);
  const { findings, files, rules, unreadable } = await validatePaths(
    positionals,
    io,
    policy,
    clusterNamespace,
  );
  const errors = findings.filter((f) => f.severity === 'error').length;
  const conflicts = findings.filter((f) => f.severity === 'conflict').length;
  const warnings = findings.length - errors - conflicts;
  if (output === 'json') io.stdout(JSON.stringify(findings, null, 2) + '\n');
  else {
    for (const f of findings) io.stdout(formatFinding(f) + '\n');
    const count = (n: number, what: string): string => `${n} ${what}${n === 1 ? '' : 's'}`;
    io.stderr(
      `${count(rules, 'ModRule')} in ${count(files, 'file')}: ${count(errors, 'problem')}, ` +
        `${conflicts > 0 ? `${count(conflicts, 'conflict')}, ` : ''}${count(warnings, 'warning')}\n`,
    );
  }
  if (unreadable > 0) return EXIT.error;
  return errors + conflicts > 0 || (values.strict === true && warnings > 0) ? EXIT.finding : EXIT.ok;
};

/**
 * "file:line: document N: ModRule x: field: message", with "warning: " in front of warnings; a YAML syntax error
 * as "file:line:column: ..." and its line with a caret below.
 */
export function formatFinding(f: Finding): string {
  const line = `${f.line}${f.column ? `:${f.column}` : ''}`;
  const at = f.document === 0 ? `${f.file}: ` : `${f.file}:${line}: document ${f.document}: `;
  const where = `${at}${f.rule ? `ModRule ${f.rule}: ` : ''}`;
  const text = `${f.severity === 'error' ? '' : `${f.severity}: `}${where}${f.field ? `${f.field}: ` : ''}${f.message}`;
  return f.excerpt ? `${text}\n${f.excerpt.replace(/\n$/, '')}` : text;
}

/**
 * Validates every ModRule document under the paths (`-`: standard input); unreadable paths
 * and broken YAML are findings too, and `unreadable` counts the paths and files that could not be read.
 */
export async function validatePaths(
  paths: readonly string[],
  io: CommandIO,
  policy: ReferencePolicy = DEFAULT_REFERENCE_POLICY,
  clusterNamespace?: string,
): Promise<{ findings: Finding[]; files: number; rules: number; unreadable: number }> {
  const findings: Finding[] = [];
  let fileCount = 0;
  let ruleCount = 0;
  let unreadable = 0;
  const valid: Array<{ rule: CompiledRule; file: string; doc: LocatedDocument }> = [];
  const crds: JsonObject[] = [];
  // Other objects under the paths (a rule's test objects): what the idempotence check runs the rules on.
  const objects: JsonObject[] = [];
  const names = new Names();
  for (const path of paths) {
    let files: string[];
    try {
      files = await expandPath(path);
    } catch (err) {
      unreadable++;
      findings.push(finding('error', path, 0, 0, null, '', messageOf(err)));
      continue;
    }
    if (files.length === 0)
      findings.push(finding('warning', path, 0, 0, null, '', 'no .yaml, .yml or .json files'));
    for (const source of files) {
      const file = displayName(source);
      let text: string;
      try {
        text = await readInput(source, io);
      } catch (err) {
        unreadable++;
        findings.push(finding('error', file, 0, 0, null, '', messageOf(err)));
        continue;
      }
      fileCount++;
      let count = 0;
      const crdsBefore = crds.length;
      for (const doc of parseLocatedDocuments(text)) {
        if (doc.error) {
          findings.push(yamlFinding(file, text, doc, doc.error));
          continue;
        }
        const value = doc.value;
        if (isJsonObject(value) && value.kind === 'CustomResourceDefinition') crds.push(value);
        else if (isJsonObject(value) && isObject(value) && !isModRuleLike(value)) objects.push(value);
        if (!isJsonObject(value) || !isModRuleLike(value)) continue;
        count++;
        ruleCount++;
        const rule = ruleName(value);
        const again = names.add(value, file, doc);
        if (again)
          findings.push(
            finding(
              'warning',
              file,
              doc.index,
              doc.lineOf(['metadata', 'name']),
              rule,
              'metadata.name',
              again,
            ),
          );
        // A key given twice: kubectl would store the last silently (cli/duplicates.ts says why it is an error).
        for (const d of doc.duplicates) {
          const p = duplicateKeyProblem(d);
          findings.push(finding('error', file, doc.index, d.line, rule, p.field, p.message));
        }
        // The same function the validating webhook calls (webhook/modrule.ts).
        const problems = validateModRule(value, policy);
        for (const p of problems)
          findings.push(
            finding('error', file, doc.index, doc.lineOf(fieldPath(p.field)), rule, p.field, p.message),
          );
        if (problems.length > 0) continue;
        const compiled = analyzeModRule(value, { references: policy }).rule;
        if (!compiled) continue;
        valid.push({ rule: compiled, file, doc });
        for (const w of lintModRule(compiled))
          findings.push(
            finding('warning', file, doc.index, doc.lineOf(fieldPath(w.field)), rule, w.field, w.message),
          );
      }
      // A file of CRDs given on its own declares kinds for the check below.
      if (count === 0 && crds.length === crdsBefore && files.length === 1 && files[0] === path)
        findings.push(finding('warning', file, 0, 0, null, '', 'no ModRule in this file'));
    }
  }
  findings.push(...togetherFindings(valid, crds, objects, clusterNamespace));
  return { findings, files: fileCount, rules: ruleCount, unreadable };
}

/** The findings across rules, then the conflicts; a rule not idempotent among the conflicts is not warned of again. */
function togetherFindings(
  valid: ReadonlyArray<{ rule: CompiledRule; file: string; doc: LocatedDocument }>,
  crds: JsonObject[],
  objects: JsonObject[],
  clusterNamespace = DEFAULT_CLUSTER_NAMESPACE,
): Finding[] {
  const conflicts = conflictFindings(valid, clusterNamespace);
  const notIdempotent = new Set(conflicts.filter((c) => c.message.startsWith('idempotence:')).map(keyOf));
  const warnings = acrossRules(valid, crds, objects).filter(
    (f) => !(isIdempotenceWarning(f) && notIdempotent.has(keyOf(f))),
  );
  return [...warnings, ...conflicts];
}

/** Findings about the valid rules together: shadowed patches, kinds not served, changes a rule makes again. */
function acrossRules(
  valid: ReadonlyArray<{ rule: CompiledRule; file: string; doc: LocatedDocument }>,
  crds: JsonObject[],
  objects: JsonObject[],
): Finding[] {
  const findings: Finding[] = [];
  // Rules without a namespace are applied with `kubectl apply -n NS`: compare them among themselves.
  for (const { rule, warning } of findShadowedRules(valid.map((v) => v.rule))) {
    const at = valid.find((v) => v.rule === rule);
    if (!at) continue;
    findings.push(
      finding(
        'warning',
        at.file,
        at.doc.index,
        at.doc.lineOf(fieldPath(warning.field)),
        ruleName((rule.source ?? {}) as unknown as JsonObject),
        warning.field,
        warning.message,
      ),
    );
  }
  findings.push(...kindFindings(valid, ResourceCatalog.builtin(crds)));
  for (const { rule, file, doc } of valid) {
    const warning = idempotenceWarning(rule, objects.length > 0 ? objects : undefined);
    if (warning)
      findings.push(
        finding(
          'warning',
          file,
          doc.index,
          doc.lineOf(['spec', 'patch']),
          ruleName(doc.value as JsonObject),
          'spec.patch',
          warning,
        ),
      );
  }
  return findings;
}

/** Warnings for kinds neither built in nor declared by a CRD under the paths (what `modrule scope` maps). */
function kindFindings(
  valid: ReadonlyArray<{ rule: CompiledRule; file: string; doc: LocatedDocument }>,
  catalog: ResourceCatalog,
): Finding[] {
  return valid.flatMap(({ rule, file, doc }) =>
    unservedKindsOf(rule, catalog, DEFAULT_CLUSTER_NAMESPACE).map((u) => {
      const field = kindField(rule, u.kind);
      const message =
        `${describeUnserved(u, 'built into Kubernetes 1.37 nor declared by a CustomResourceDefinition under the given paths')}: ` +
        `in a cluster that does not serve it the rule matches none of its objects, and the dragnet's scope fails wide for it`;
      const name = ruleName((rule.source ?? {}) as unknown as JsonObject);
      return finding('warning', file, doc.index, doc.lineOf(fieldPath(field)), name, field, message);
    }),
  );
}

/** One finding per conflict among the valid rules, at the first rule's field, naming where the other one is. */
function conflictFindings(
  valid: ReadonlyArray<{ rule: CompiledRule; file: string; doc: LocatedDocument }>,
  clusterNamespace: string,
): Finding[] {
  const at = new Map(valid.map((v) => [v.rule, v]));
  return findConflicts(
    valid.map((v) => v.rule),
    { clusterNamespace },
  ).conflicts.map((c) => {
    const here = at.get(c.rule)!;
    const there = c.other ? at.get(c.other) : undefined;
    const where = there ? ` (${there.file}:${there.doc.lineOf(fieldPath(c.otherField ?? ''))})` : '';
    const name = ruleName((c.rule.source ?? {}) as unknown as JsonObject);
    const line = here.doc.lineOf(fieldPath(c.field));
    return finding(
      'conflict',
      here.file,
      here.doc.index,
      line,
      name,
      c.field,
      `${c.kind}: ${c.message}${where}`,
    );
  });
}

/** One rule in one document of one file. */
function keyOf(f: Finding): string {
  return `${f.file}\n${f.document}\n${f.rule ?? ''}`;
}

function isIdempotenceWarning(f: Finding): boolean {
  return f.severity === 'warning' && f.field === 'spec.patch' && f.message.startsWith('not idempotent');
}

function finding(
  severity: Finding['severity'],
  file: string,
  document: number,
  line: number,
  rule: string | null,
  field: string,
  message: string,
): Finding {
  return { severity, file, document, line, rule, field, message };
}

// The line and column of the prefix are those the caret points at.
function yamlFinding(file: string, text: string, doc: LocatedDocument, error: string): Finding {
  const message = `invalid YAML: ${error}`;
  if (!doc.errorAt) return finding('error', file, doc.index, doc.line, null, '', message);
  const { line, column } = doc.errorAt;
  return {
    ...finding('error', file, doc.index, line, null, '', message),
    column,
    excerpt: excerpt(text, doc.errorAt),
  };
}

// kind ModRule, or anything in KubeMod's API group (so `kind: Modrule` is reported, not skipped).
/** A Kubernetes object (apiVersion, kind and metadata), as a rule's test objects are. */
function isObject(doc: JsonObject): boolean {
  return typeof doc.apiVersion === 'string' && typeof doc.kind === 'string' && isJsonObject(doc.metadata);
}

function isModRuleLike(doc: JsonObject): boolean {
  return (
    doc.kind === MODRULE_KIND || (typeof doc.apiVersion === 'string' && doc.apiVersion.startsWith(API_GROUP))
  );
}

function ruleName(doc: JsonObject): string | null {
  const meta = doc.metadata;
  if (!isJsonObject(meta) || typeof meta.name !== 'string' || meta.name === '') return null;
  return typeof meta.namespace === 'string' && meta.namespace ? `${meta.namespace}/${meta.name}` : meta.name;
}

/** 'spec.match[0].select' -> ['spec', 'match', 0, 'select']. */
export function fieldPath(field: string): Array<string | number> {
  const out: Array<string | number> = [];
  for (const m of field.matchAll(/([^.[\]]+)|\[(\d+)\]/g)) out.push(m[2] !== undefined ? Number(m[2]) : m[1]);
  return out;
}

// The same namespace/name twice: applied together, the later one replaces the earlier (as `modrule apply` warns).
class Names {
  private readonly seen = new Map<string, string>();

  /** Records a rule's name; returns the warning when the name was seen before. */
  add(doc: JsonObject, file: string, at: LocatedDocument): string | undefined {
    const meta = doc.metadata;
    if (!isJsonObject(meta) || typeof meta.name !== 'string' || meta.name === '') return undefined;
    const key = `${typeof meta.namespace === 'string' ? meta.namespace : ''}/${meta.name}`;
    const before = this.seen.get(key);
    if (before === undefined) {
      this.seen.set(key, `${file}:${at.lineOf(['metadata', 'name'])} (document ${at.index})`);
      return undefined;
    }
    return `the same ModRule as at ${before}: applied together, this one replaces that one`;
  }
}
