import { Document, isMap, isSeq } from 'yaml';
import { ManifestSyntaxError, parseYamlDocuments } from '../util/yaml';
import { DuplicateKey, duplicateKeyMessage } from '../util/yaml-duplicates';
import { caretLines } from '../util/excerpt';
import { JsonValue } from '../util/json';
import {
  compileJsonPath,
  CompiledJsonPath,
  JsonPathLimitError,
  JsonPathSyntaxError,
  SelectResult,
} from '../jsonpath';
import { parseCommand } from './args';
import { EXIT, exitHelp } from './exit';
import { Command, CommandIO, displayName, fileOrStdin, readInput, UsageError, yamlErrorText } from './io';

const USAGE = `usage: modrule select EXPR [--file FILE | -] [--output yaml|json]

Evaluates a ModRule select expression (KubeMod's JSONPath) against an object, as the webhook would.

  EXPR               the select, e.g. '$.spec.template.spec.containers[*].image'
  -f, --file FILE    the object, YAML or JSON ("-", or no --file with input piped in, reads standard
                     input); with several YAML documents the first is used
  -o, --output FMT   yaml (default): a readable list of path, indices and value
                     json: one JSON array of {"value", "path", "indices"}
  -h, --help         show this help

${exitHelp()}`;

interface Options {
  expression: string;
  file: string;
  output: 'yaml' | 'json';
}

function parseOptions(args: string[], io: CommandIO): Options | 'help' {
  const parsed = parseCommand(args, {
    options: {
      file: { type: 'string', short: 'f' },
      output: { type: 'string', short: 'o', default: 'yaml' },
    },
    positionals: true,
    usage: USAGE,
  });
  if (parsed === 'help') return 'help';
  const { values, positionals } = parsed;
  const [expression, ...rest] = positionals;
  if (expression === undefined) throw new UsageError(`missing EXPR\n\n${USAGE}`);
  let file = values.file;
  if (rest.length === 1 && rest[0] === '-' && file === undefined) file = '-';
  else if (rest.length > 0) throw new UsageError(`unexpected argument "${rest[0]}"\n\n${USAGE}`);
  file = fileOrStdin(file, io);
  const output = values.output;
  if (output !== 'yaml' && output !== 'json')
    throw new UsageError(`--output must be yaml or json, not "${output}"`);
  return { expression, file, output };
}

/** Parses the object: YAML (a superset of JSON); with several documents, the first, noted on stderr. */
function parseObject(text: string, file: string, io: CommandIO): JsonValue {
  let docs: JsonValue[];
  const duplicates: DuplicateKey[] = [];
  try {
    docs = parseYamlDocuments(text, duplicates);
  } catch (err) {
    if (err instanceof ManifestSyntaxError)
      throw new UsageError(`invalid YAML/JSON: ${yamlErrorText(file, text, err)}`);
    throw err;
  }
  const name = displayName(file);
  for (const d of duplicates)
    io.stderr(`warning: ${name}:${d.line}: document ${d.document}: ${duplicateKeyMessage(d)}\n`);
  if (docs.length === 0) throw new UsageError(`${name}: no object to evaluate (the input is empty)`);
  if (docs.length > 1) {
    io.stderr(`note: ${name} holds ${docs.length} documents; evaluating the first one only\n`);
  }
  return docs[0];
}

/** The expression with a caret under the failing column, for syntax errors. */
export function caretLine(expression: string, column: number): string {
  const lines = expression.split('\n');
  // Columns count characters across lines; find the line holding the column.
  let offset = column - 1;
  let i = 0;
  while (i < lines.length - 1 && offset > lines[i].length) {
    offset -= lines[i].length + 1;
    i++;
  }
  return caretLines(lines[i], offset + 1);
}

function format(results: SelectResult[], output: 'yaml' | 'json'): string {
  const rows = results.map((r) => ({ path: r.path, indices: r.indices, value: r.value }));
  if (output === 'json')
    return (
      JSON.stringify(
        rows.map((r) => ({ value: r.value, path: r.path, indices: r.indices })),
        null,
        2,
      ) + '\n'
    );
  const doc = new Document(rows, { aliasDuplicateObjects: false });
  // Indices read best on one line: `indices: [1, 0]`.
  if (isSeq(doc.contents)) {
    for (const item of doc.contents.items) {
      const indices = isMap(item) ? item.get('indices', true) : undefined;
      if (isSeq(indices)) indices.flow = true;
    }
  }
  return doc.toString({ lineWidth: 0, flowCollectionPadding: false });
}

/** `modrule select`: evaluates a select against an object file and prints what it yields. */
export const run: Command = async (args, io) => {
  const options = parseOptions(args, io);
  if (options === 'help') {
    io.stdout(USAGE);
    return EXIT.ok;
  }
  let compiled: CompiledJsonPath;
  try {
    compiled = compileJsonPath(options.expression);
  } catch (err) {
    if (!(err instanceof JsonPathSyntaxError)) throw err;
    io.stderr(`modrule select: invalid select: ${err.message}\n${caretLine(options.expression, err.column)}`);
    return EXIT.error;
  }
  const object = parseObject(await readInput(options.file, io), options.file, io);
  let results: SelectResult[];
  try {
    results = compiled.select(object);
  } catch (err) {
    if (!(err instanceof JsonPathLimitError)) throw err;
    io.stderr(`modrule select: ${err.message}\n`);
    return EXIT.error;
  }
  if (results.length === 0 && options.output === 'yaml') {
    io.stderr(
      'no results: the select yields nothing for this object (a missing property is undefined, and undefined values are dropped)\n',
    );
    return EXIT.ok;
  }
  io.stdout(format(results, options.output));
  return EXIT.ok;
};
