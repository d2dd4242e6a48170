// Warnings about templates of valid rules (patch values, rejectMessage): forms that fail at run time on objects
// the rule matches. Offline only (`modrule validate`, through lint.ts).
import { ArgNode, Node, PipeNode } from '../template/ast';
import { FUNCTIONS } from '../template/functions';
import { parse } from '../template/parser';
import { isJsonObject, JsonObject, JsonValue } from '../util/json';
import { CompiledRule } from './compiled';
import { preprocessValueTemplate } from './compile-patch';

/**
 * Templates that `index` a map below `.Target` with a string key: Go's `index` of a missing map fails ("index of
 * untyped nil"), and the rule then changes nothing on that object. Not warned: the map guarded by an `if` or `with`
 * on it, or by a match item that requires it, and maps every object has (`.Target.metadata`).
 */
export function lintTemplates(rule: CompiledRule): Array<{ field: string; message: string }> {
  const spec: JsonObject = isJsonObject(rule.source?.spec) ? (rule.source.spec as JsonObject) : {};
  const required = requiredPaths(rule);
  const sources: Array<{ field: string; text: string }> = [];
  const patch = Array.isArray(spec.patch) ? spec.patch : [];
  patch.forEach((op: JsonValue, i: number) => {
    if (isJsonObject(op) && typeof op.value === 'string' && op.value.includes('{{'))
      sources.push({ field: `spec.patch[${i}].value`, text: preprocessValueTemplate(op.value) });
  });
  if (typeof spec.rejectMessage === 'string')
    sources.push({ field: 'spec.rejectMessage', text: spec.rejectMessage });
  const warnings: Array<{ field: string; message: string }> = [];
  for (const { field, text } of sources) {
    const seen = new Set<string>();
    for (const path of indexedMaps(text)) {
      const dotted = path.join('.');
      if (seen.has(dotted) || required.some((r) => startsWith(r, path))) continue;
      seen.add(dotted);
      warnings.push({ field, message: missingMapMessage(path, indexKeyOf(text, dotted)) });
    }
  }
  return warnings;
}

function missingMapMessage(path: string[], key: string): string {
  const field = `.Target.${path.join('.')}`;
  return (
    `index ${field} ${key} fails at run time ("index of untyped nil") on an object without ${path.join('.')}, ` +
    `and the rule then patches nothing: write index (${field} | default dict) ${key}, or match only objects that ` +
    `have it (select: '$.${path.join('.')}')`
  );
}

// The key as written in the first `index .Target.<path> KEY` of the template, for the message.
function indexKeyOf(text: string, dotted: string): string {
  const escaped = dotted.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return (
    new RegExp(`\\$?\\.Target\\.${escaped}\\s+("(?:[^"\\\\]|\\\\.)*"|\`[^\`]*\`)`).exec(text)?.[1] ?? '"KEY"'
  );
}

/** The member paths below .Target that the template indexes with a string key, outside a guard on them. */
function indexedMaps(text: string): string[][] {
  let tree;
  try {
    tree = parse(text, 'lint', (name) => FUNCTIONS.has(name));
  } catch {
    return []; // the rule is valid: a template that does not parse here is not ours to judge
  }
  const found: string[][] = [];
  const walk = (nodes: readonly Node[], dotIsRoot: boolean, guards: readonly string[]): void => {
    for (const node of nodes) {
      if (node.type === 'action') visitPipe(node.pipe, dotIsRoot, guards, found);
      else if (node.type === 'template' && node.pipe) visitPipe(node.pipe, dotIsRoot, guards, found);
      else if (node.type === 'if' || node.type === 'with' || node.type === 'range') {
        visitPipe(node.pipe, dotIsRoot, guards, found);
        const guarded = node.type === 'range' ? guards : [...guards, ...targetPaths(node.pipe, dotIsRoot)];
        walk(node.list, node.type === 'if' && dotIsRoot, guarded);
        if (node.elseList) walk(node.elseList, dotIsRoot, guards);
      }
    }
  };
  walk(tree.root, true, []);
  for (const body of tree.defines.values()) walk(body, false, []);
  return found;
}

function visitPipe(pipe: PipeNode, dotIsRoot: boolean, guards: readonly string[], found: string[][]): void {
  for (const cmd of pipe.cmds) {
    const [fn, collection, ...keys] = cmd.args;
    if (fn?.type === 'identifier' && fn.name === 'index' && collection && keys.length > 0) {
      const path = targetPath(collection, dotIsRoot);
      const byName = keys.every((k) => k.type === 'string');
      if (path && path.length > 0 && !isAlwaysThere(path) && byName && !guards.includes(path.join('.')))
        found.push(path);
    }
    for (const arg of cmd.args) if (arg.type === 'pipe') visitPipe(arg, dotIsRoot, guards, found);
  }
}

/** The path below .Target an argument names (`.Target.a.b`, `$.Target.a.b`), or undefined. */
function targetPath(arg: ArgNode, dotIsRoot: boolean): string[] | undefined {
  if (arg.type === 'field' && dotIsRoot && arg.ident[0] === 'Target') return arg.ident.slice(1);
  if (arg.type === 'variable' && arg.ident[0] === '$' && arg.ident[1] === 'Target') return arg.ident.slice(2);
  return undefined;
}

// The paths an if/with pipeline tests (`if .Target.metadata.labels`, `with $.Target.spec.nodeSelector`).
function targetPaths(pipe: PipeNode, dotIsRoot: boolean): string[] {
  return pipe.cmds.flatMap((c) =>
    c.args.map((a) => targetPath(a, dotIsRoot)?.join('.')).filter((p): p is string => !!p),
  );
}

const isAlwaysThere = (path: string[]): boolean => path.length === 1 && path[0] === 'metadata';

/** The leading member names of each select a match item requires to be there (not negated, a path from $). */
function requiredPaths(rule: CompiledRule): string[][] {
  const out: string[][] = [];
  for (const item of rule.match) {
    const ast = item.select.ast;
    if (item.negate || ast.kind !== 'path' || ast.root !== '$') continue;
    const names: string[] = [];
    for (const s of ast.segments) {
      if (s.type !== 'name') break;
      names.push(s.name);
    }
    out.push(names);
  }
  return out;
}

const startsWith = (path: string[], prefix: string[]): boolean =>
  prefix.length <= path.length && prefix.every((p, i) => path[i] === p);
