/** Position of a node in the template source (1-based). */
export interface Pos {
  line: number;
  col: number;
}

/** A node that evaluates to a value inside an action. */
export type ArgNode =
  | { type: 'dot'; pos: Pos }
  | { type: 'nil'; pos: Pos }
  | { type: 'bool'; pos: Pos; value: boolean }
  | { type: 'string'; pos: Pos; value: string; text: string }
  | NumberNode
  | { type: 'field'; pos: Pos; ident: string[] }
  | { type: 'variable'; pos: Pos; ident: string[] /* ['$x', 'Field', ...] */ }
  | IdentifierNode
  | { type: 'chain'; pos: Pos; node: ArgNode; field: string[] }
  | PipeNode;

/** A numeric literal: `isInt` when it denotes an integer (Go's NumberNode.IsInt). */
export interface NumberNode {
  type: 'number';
  pos: Pos;
  text: string;
  isInt: boolean;
  isFloat: boolean;
  int: bigint;
  float: number;
  /** True when Go would type the constant as float64 in an interface{} argument. */
  floatTyped: boolean;
}

/** A function name; `cache` holds per-call-site data such as compiled literal regexes. */
export interface IdentifierNode {
  type: 'identifier';
  pos: Pos;
  name: string;
}

/** One command of a pipeline: a function call, field access or constant with its arguments. */
export interface CommandNode {
  pos: Pos;
  args: ArgNode[];
  text: string;
  cache?: Map<string, unknown>;
}

/** A pipeline with optional variable declaration/assignment. */
export interface PipeNode {
  type: 'pipe';
  pos: Pos;
  decl: string[];
  isAssign: boolean;
  cmds: CommandNode[];
  text: string;
}

/** A node of the template body. */
export type Node =
  | { type: 'text'; text: string }
  | { type: 'action'; pos: Pos; pipe: PipeNode; text: string }
  | BranchNode
  | { type: 'template'; pos: Pos; name: string; pipe: PipeNode | null; text: string }
  | { type: 'break'; pos: Pos }
  | { type: 'continue'; pos: Pos };

/** if / with / range: a pipeline, a body and an optional else body. */
export interface BranchNode {
  type: 'if' | 'with' | 'range';
  pos: Pos;
  pipe: PipeNode;
  list: Node[];
  elseList: Node[] | null;
  text: string;
}

/** A parsed template: its main body and the templates it defines. */
export interface TemplateTree {
  name: string;
  root: Node[];
  defines: Map<string, Node[]>;
  /** Names of the functions the template calls. */
  functions: Set<string>;
}
