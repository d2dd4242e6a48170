import { TemplateRuntimeError, TemplateSyntaxError } from './errors';
import { FUNCTIONS, TEMPLATE_FUNCTIONS } from './functions';
import { parse } from './parser';
import { DEFAULT_LIMITS, execute, RenderLimits } from './render';
import { GoValue } from './values';

/** A parsed template, ready to render many times. */
export interface CompiledTemplate {
  readonly source: string;
  /** Renders with the given data (e.g. { Target, Namespace, SelectedItem, SelectKeyParts }); throws TemplateRuntimeError. */
  render(data: Record<string, unknown>): string;
}

const hasFunction = (name: string): boolean => FUNCTIONS.has(name);

/** Parses Go text/template source with Sprig functions; throws TemplateSyntaxError. */
export function compileTemplate(
  source: string,
  name = 'template',
  limits: RenderLimits = DEFAULT_LIMITS,
): CompiledTemplate {
  const tree = parse(source, name, hasFunction);
  // Plain text needs no evaluation: the common ModRule value is a literal.
  if (tree.root.length === 0) return { source, render: () => '' };
  if (tree.root.length === 1 && tree.root[0].type === 'text') {
    const text = tree.root[0].text;
    return { source, render: () => text };
  }
  return {
    source,
    render: (data) => execute(tree, data as unknown as GoValue, limits),
  };
}

export { TemplateRuntimeError, TemplateSyntaxError, TEMPLATE_FUNCTIONS, DEFAULT_LIMITS };
export type { RenderLimits };
