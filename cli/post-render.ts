import { isJsonObject, JsonObject, JsonValue } from '../util/json';
import { ManifestSyntaxError } from '../util/yaml';
import { SourceDocument, splitYamlStream } from '../util/yaml-stream';
import { duplicateKeyMessage } from '../util/yaml-duplicates';
import { rewriteDocument } from '../patch/yaml-document';
import { ApplyVerdict, runApply } from './apply';
import { formatExplanation, palette } from './explain';
import { EXIT, exitHelp } from './exit';
import { CommandIO, readInput, STDIN, UsageError, yamlErrorText } from './io';
import { metadataOf } from '../util/meta';

const USAGE = `usage: modrule post-render --rules PATH... [options of modrule apply]

A Helm post-renderer: the manifests Helm rendered on standard input, the same manifests patched by the
ModRules on standard output. Helm 3 and Helm 4 take the same arguments (docs/helm.md):

  helm install web ./chart --post-renderer modrule --post-renderer-args --rules=rules/   # Helm 4 plugin
  helm install web ./chart --post-renderer modrule-post-renderer --post-renderer-args --rules=rules/   # Helm 3

Options: those of modrule apply (--rules, --namespace, --cluster, --cluster-namespace, --operation, --old,
--explain, --on-error), except --file and --output: it always reads standard input and writes YAML.

Output: every document in its place. A document no rule changed comes out byte for byte as it came
(comments included); a changed one is edited in place, keeping its comments. Comment-only documents stay,
kind: List documents stay Lists (their items are admitted one by one).

It fails, so that Helm stops before installing anything, when:
  - a Reject rule rejects an object (exit 2; the rule's message on stderr);
  - a ModRule fails at run time on an object (exit 1, one line sums the failures up; --on-error=warn installs
    the object without that rule's changes, as the webhook admits it, with that line as a warning);
  - the input holds no Kubernetes object: the chart rendered nothing (exit 1; Helm 4 refuses this too);
  - a document does not parse, or is not a Kubernetes object (no kind or apiVersion) (exit 1);
  - the rules cannot be read or are invalid (exit 1).

${exitHelp('an object rejected', 'a ModRule failing at run time (--on-error fail)')}`;

const AS_THE_WEBHOOK = "without the failing rules' changes, as the webhook admits them";
const FAILURE_CONSEQUENCE = {
  fail: `nothing is installed (--on-error=warn installs them ${AS_THE_WEBHOOK}; --explain shows each)`,
  warn: `they are installed ${AS_THE_WEBHOOK}`,
};

/** The annotation Helm 4 adds to every document it hands a post-renderer, to map the result back to its files. */
export const HELM_FILENAME_ANNOTATION = 'postrenderer.helm.sh/postrender-filename';

const REFUSED = /^(--file|--output|-o)(=.*)?$|^-o./;

/** One object to admit: where it sits in the stream and what the rules see. */
interface Entry {
  doc: number;
  /** Its index in a List document's items; -1 for a document of its own. */
  item: number;
  object: JsonObject;
  /** Helm 4's filename annotation, taken off while the rules run (the API server never sees it). */
  filename?: string;
}

/** modrule post-render: a Helm post-renderer that refuses to let anything through unpatched. */
export async function run(args: string[], io: CommandIO): Promise<number> {
  if (args.includes('--help') || args.includes('-h')) {
    io.stdout(USAGE);
    return EXIT.ok;
  }
  const refused = args.find((a) => REFUSED.test(a));
  if (refused)
    throw new UsageError(`${refused}: a post-renderer reads standard input and writes YAML\n\n${USAGE}`);
  if (args.includes(STDIN))
    throw new UsageError('standard input holds the manifests Helm rendered: "-" cannot name another input');

  const docs = parse(await readInput(STDIN, io));
  const entries = docs.flatMap((d) => objectsOf(d));
  // As Helm and kubectl read a template that gives a key twice: the last one wins (the rules see that one).
  for (const d of docs)
    for (const dup of d.duplicates)
      io.stderr(`warning: document ${d.index}${sourceOf(d)}: ${duplicateKeyMessage(dup)}\n`);

  // Runs even with no objects, so that bad options and unreadable rules are reported first.
  let json = '';
  const code = await runApply(
    [...args, '--file', '-', '--output', 'json'],
    {
      ...io,
      stdout: (t) => (json += t),
      readStdin: async () => entries.map((e) => JSON.stringify(e.object)).join('\n---\n'),
      stdinIsTTY: false,
    },
    { command: 'post-render', consequence: FAILURE_CONSEQUENCE },
  );
  if (entries.length === 0)
    throw new UsageError(
      'the chart rendered no Kubernetes object: nothing to patch or check (Helm 4 refuses empty post-renderer output as well)',
    );
  const verdicts = JSON.parse(json) as ApplyVerdict[];
  if (verdicts.length !== entries.length)
    throw new Error(`modrule apply gave ${verdicts.length} verdicts for ${entries.length} objects`);

  for (const v of verdicts) {
    if (v.explanation) io.stderr(formatExplanation(labelOf(v), v.explanation, palette(false)));
  }
  // Run-time failures: modrule apply has said so in one line, and returned EXIT.error unless --on-error=warn.
  const rejected = verdicts.filter((v) => !v.allowed);
  if (rejected.length > 0)
    io.stderr(`modrule post-render: ${count(rejected.length, 'object')} rejected: nothing is installed\n`);
  if (code !== EXIT.ok) return code;

  io.stdout(render(docs, entries, verdicts));
  return EXIT.ok;
}

function parse(text: string): SourceDocument[] {
  try {
    return splitYamlStream(text);
  } catch (err) {
    if (err instanceof ManifestSyntaxError) throw new UsageError(yamlErrorText(STDIN, text, err));
    throw err;
  }
}

/** The objects a document holds (none for an empty or comment-only one); throws for anything else. */
function objectsOf(d: SourceDocument): Entry[] {
  if (d.value === null) return [];
  const where = `document ${d.index} (line ${d.line}${sourceOf(d)})`;
  const list = isJsonObject(d.value) && isList(d.value) ? (d.value.items as JsonValue[]) : null;
  const values = list ?? [d.value];
  return values.map((value, i) => {
    const at = list ? `${where} items[${i}]` : where;
    if (!isJsonObject(value)) throw new UsageError(`${at}: not a Kubernetes object (a mapping with kind)`);
    for (const field of ['apiVersion', 'kind'])
      if (typeof value[field] !== 'string' || value[field] === '')
        throw new UsageError(`${at}: not a Kubernetes object: ${field} is missing`);
    return { doc: d.index - 1, item: list ? i : -1, ...withoutFilename(value) };
  });
}

const isList = (v: JsonObject): boolean =>
  typeof v.kind === 'string' && v.kind.endsWith('List') && Array.isArray(v.items);

// Helm 3 names each template in a `# Source:` comment, Helm 4 in an annotation.
function sourceOf(d: SourceDocument): string {
  const comment = /^# Source: (.+)$/m.exec(d.text)?.[1];
  const meta = metadataOf(isJsonObject(d.value) ? d.value : null);
  const annotation = isJsonObject(meta.annotations) ? meta.annotations[HELM_FILENAME_ANNOTATION] : undefined;
  const source = comment ?? (typeof annotation === 'string' ? annotation : undefined);
  return source ? `, ${source}` : '';
}

function withoutFilename(object: JsonObject): { object: JsonObject; filename?: string } {
  const meta = object.metadata;
  if (!isJsonObject(meta) || !isJsonObject(meta.annotations)) return { object };
  const { [HELM_FILENAME_ANNOTATION]: filename, ...annotations } = meta.annotations;
  if (typeof filename !== 'string') return { object };
  const { annotations: _all, ...rest } = meta;
  const metadata = Object.keys(annotations).length > 0 ? { ...rest, annotations } : rest;
  return { object: { ...object, metadata }, filename };
}

function withFilename(object: JsonObject, filename: string | undefined): JsonObject {
  if (filename === undefined) return object;
  const meta = metadataOf(object);
  const annotations = isJsonObject(meta.annotations) ? meta.annotations : {};
  return {
    ...object,
    metadata: { ...meta, annotations: { ...annotations, [HELM_FILENAME_ANNOTATION]: filename } },
  };
}

/** Every document in its place: the source text where nothing changed, else the document edited in place. */
function render(docs: SourceDocument[], entries: Entry[], verdicts: ApplyVerdict[]): string {
  const results = docs.map((d) => d.value);
  entries.forEach((e, i) => {
    const object = withFilename(verdicts[i].object, e.filename);
    if (e.item < 0) results[e.doc] = object;
    else {
      const list = results[e.doc] as JsonObject;
      const items = [...(list.items as JsonValue[])];
      items[e.item] = object;
      results[e.doc] = { ...list, items };
    }
  });
  return docs.map((d, i) => rewriteDocument(d, results[i])).join('');
}

function labelOf(v: ApplyVerdict): string {
  return `${v.kind || '<no kind>'} ${v.namespace ? `${v.namespace}/` : ''}${v.name}`;
}

const count = (n: number, noun: string): string => `${n} ${noun}${n === 1 ? '' : 's'}`;
