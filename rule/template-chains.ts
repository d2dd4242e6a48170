import type { ArgNode, Node, PipeNode, TemplateTree } from '../template/ast';

/*
 * What a template reads of .Target, as chains of member names from the object's root: `.Target.metadata.labels.app`,
 * `$.Target.spec`, `index .Target.metadata.labels "app"`. rule/reads.ts (syntheticRefs.owner) and
 * rule/pod-templates.ts (what a pod template lacks) both read templates through it.
 */

/** Marks a chain whose value becomes the dot (with, range): everything below it may be read. */
export const WHOLE = -1;

/** One chain: member names from .Target, WHOLE last when everything below is read. */
export type Chain = ReadonlyArray<string | typeof WHOLE>;

/**
 * Calls `visit` with every chain the template reads from .Target, its defined templates included. `rootUses`: the
 * data passed whole (`{{ toJson $ }}`, a bare dot outside with/range) counts as .Target read whole (an empty chain).
 */
export function forEachTargetChain(
  tree: TemplateTree,
  visit: (chain: Chain) => void,
  rootUses = false,
): void {
  const walker = new Walker(visit, rootUses);
  walker.nodes(tree.root, true);
  for (const body of tree.defines.values()) walker.nodes(body, false);
}

class Walker {
  constructor(
    private readonly visit: (chain: Chain) => void,
    private readonly rootUses: boolean,
  ) {}

  nodes(nodes: readonly Node[], top: boolean): void {
    for (const n of nodes) {
      if (n.type === 'text' || n.type === 'break' || n.type === 'continue') continue;
      if (n.type === 'template') {
        if (n.pipe) this.pipe(n.pipe, false, top);
        continue;
      }
      // with/range over a chain make it the dot: everything below counts.
      this.pipe(n.pipe, n.type === 'with' || n.type === 'range', top);
      if (n.type !== 'action') {
        const inner = top && n.type === 'if';
        this.nodes(n.list, inner);
        this.nodes(n.elseList ?? [], inner);
      }
    }
  }

  private pipe(pipe: PipeNode, whole: boolean, top: boolean): void {
    for (const cmd of pipe.cmds) {
      const [head, ...rest] = cmd.args;
      // index X "a" "b" reads X.a.b
      const isIndex = head?.type === 'identifier' && head.name === 'index';
      if (isIndex && rest.length > 0) {
        const base = chainOf(rest[0]);
        const keys = rest.slice(1);
        if (base && keys.every((k) => k.type === 'string')) {
          this.visit([...base, ...keys.map((k) => (k.type === 'string' ? k.value : ''))]);
          continue;
        }
      }
      // A chain as the last word of the last command is what the pipeline yields (a whole owner in `with`).
      cmd.args.forEach((a, i) =>
        this.arg(a, whole && cmd === pipe.cmds[pipe.cmds.length - 1] && i === 0, top),
      );
    }
  }

  private arg(a: ArgNode, whole: boolean, top: boolean): void {
    if (a.type === 'pipe') return this.pipe(a, false, top);
    if (a.type === 'chain') this.arg(a.node, false, top);
    if (
      this.rootUses &&
      ((a.type === 'dot' && top) || (a.type === 'variable' && a.ident.length === 1 && a.ident[0] === '$'))
    )
      return this.visit([]);
    const chain = chainOf(a);
    if (chain) this.visit(whole ? [...chain, WHOLE] : chain);
  }
}

/** The fields a field or variable node names from .Target ($.Target...), or undefined. */
function chainOf(a: ArgNode): string[] | undefined {
  if (a.type === 'field') return a.ident[0] === 'Target' ? a.ident.slice(1) : undefined;
  if (a.type === 'variable')
    return a.ident[0] === '$' && a.ident[1] === 'Target' ? a.ident.slice(2) : undefined;
  return undefined;
}
