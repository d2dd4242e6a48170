import { isJsonObject, JsonValue } from '../util/json';

/** A `metav1.LabelSelectorRequirement`. */
export interface LabelSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  values?: string[];
}

/** A `metav1.LabelSelector`: every matchLabels pair and every matchExpressions requirement must hold. */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

/** A label selector checked once; `matches` is a pure function of a label map. */
export interface CompiledLabelSelector {
  matches(labels: Readonly<Record<string, string>>): boolean;
}

type Requirement = (labels: Readonly<Record<string, string>>) => boolean;

const SELECTOR_FIELDS = new Set(['matchLabels', 'matchExpressions']);
const REQUIREMENT_FIELDS = new Set(['key', 'operator', 'values']);
const OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'];
const hasOwn = Object.prototype.hasOwnProperty;

// k8s.io/apimachinery/pkg/util/validation: qualified names and label values.
const NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const NAME_MESSAGE =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/** IsQualifiedName: `[prefix/]name`, name at most 63 characters, prefix a DNS subdomain. Returns the problems. */
export function labelKeyProblems(key: string): string[] {
  const slash = key.split('/');
  let name = key;
  const out: string[] = [];
  if (slash.length === 2) {
    const prefix = slash[0];
    name = slash[1];
    if (prefix.length === 0) out.push('prefix part must be non-empty');
    else if (prefix.length > 253) out.push('prefix part must be no more than 253 characters');
    else if (!DNS1123_SUBDOMAIN.test(prefix))
      out.push(
        "prefix part must be a lowercase DNS subdomain (alphanumerics, '-' and '.', starting and ending with an alphanumeric)",
      );
  } else if (slash.length > 2) {
    return [
      `a qualified name ${NAME_MESSAGE}, with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
    ];
  }
  if (name.length === 0) out.push('name part must be non-empty');
  else if (name.length > 63) out.push('name part must be no more than 63 characters');
  else if (!NAME_PART.test(name)) out.push(`name part ${NAME_MESSAGE}`);
  return out;
}

/** IsValidLabelValue: empty, or at most 63 characters of alphanumerics, '-', '_', '.', alphanumeric at both ends. */
export function labelValueProblems(value: string): string[] {
  const out: string[] = [];
  if (value.length > 63) out.push('must be no more than 63 characters');
  if (!LABEL_VALUE.test(value)) out.push(`a valid label value must be an empty string or ${NAME_MESSAGE}`);
  return out;
}

/**
 * Checks a metav1.LabelSelector the way the API server does (ValidateLabelSelector), reporting each problem with
 * its field path under `at`, and compiles it. Returns undefined when there were problems.
 */
export function compileLabelSelector(
  raw: JsonValue,
  at: string,
  problem: (field: string, message: string) => void,
): CompiledLabelSelector | undefined {
  if (!isJsonObject(raw)) {
    problem(at, 'must be a label selector: an object with matchLabels and/or matchExpressions');
    return undefined;
  }
  let ok = true;
  const report = (field: string, message: string): void => {
    ok = false;
    problem(field, message);
  };
  for (const key of Object.keys(raw)) {
    if (!SELECTOR_FIELDS.has(key))
      report(`${at}.${key}`, `unknown field, expected one of: ${[...SELECTOR_FIELDS].join(', ')}`);
  }
  const requirements: Requirement[] = [];

  const matchLabels = raw.matchLabels;
  if (matchLabels !== undefined && matchLabels !== null) {
    const field = `${at}.matchLabels`;
    if (!isJsonObject(matchLabels)) {
      report(field, 'must be a map of label keys to values');
    } else {
      for (const [key, value] of Object.entries(matchLabels)) {
        for (const m of labelKeyProblems(key)) report(field, `Invalid value: ${JSON.stringify(key)}: ${m}`);
        if (typeof value !== 'string') {
          report(
            field,
            `Invalid value: ${JSON.stringify(value)}: the value of ${JSON.stringify(key)} must be a string`,
          );
          continue;
        }
        for (const m of labelValueProblems(value))
          report(field, `Invalid value: ${JSON.stringify(value)}: ${m}`);
        requirements.push((labels) => hasOwn.call(labels, key) && labels[key] === value);
      }
    }
  }

  const expressions = raw.matchExpressions;
  if (expressions !== undefined && expressions !== null) {
    if (!Array.isArray(expressions)) {
      report(`${at}.matchExpressions`, 'must be a list of {key, operator, values}');
    } else {
      expressions.forEach((e, i) => {
        const r = compileRequirement(e, `${at}.matchExpressions[${i}]`, report);
        if (r) requirements.push(r);
      });
    }
  }
  if (!ok) return undefined;
  return { matches: (labels) => requirements.every((r) => r(labels)) };
}

function compileRequirement(
  raw: JsonValue,
  at: string,
  report: (field: string, message: string) => void,
): Requirement | undefined {
  if (!isJsonObject(raw)) {
    report(at, 'must be an object with key, operator and values');
    return undefined;
  }
  let ok = true;
  const fail = (field: string, message: string): void => {
    ok = false;
    report(field, message);
  };
  for (const k of Object.keys(raw)) {
    if (!REQUIREMENT_FIELDS.has(k))
      fail(`${at}.${k}`, `unknown field, expected one of: ${[...REQUIREMENT_FIELDS].join(', ')}`);
  }
  const { key, operator, values } = raw;
  const list: string[] = [];
  if (values !== undefined && values !== null) {
    if (!Array.isArray(values)) fail(`${at}.values`, 'must be a list of strings');
    else
      values.forEach((v, j) => {
        if (typeof v !== 'string') fail(`${at}.values[${j}]`, `must be a string, got ${JSON.stringify(v)}`);
        else {
          for (const m of labelValueProblems(v))
            fail(`${at}.values[${j}]`, `Invalid value: ${JSON.stringify(v)}: ${m}`);
          list.push(v);
        }
      });
  }
  if (typeof operator !== 'string' || !OPERATORS.includes(operator)) {
    fail(
      `${at}.operator`,
      `Unsupported value: ${JSON.stringify(operator ?? null)}: not a valid selector operator (In, NotIn, Exists, DoesNotExist)`,
    );
  } else if ((operator === 'In' || operator === 'NotIn') && (!Array.isArray(values) || values.length === 0)) {
    fail(`${at}.values`, "Required value: must be specified when `operator` is 'In' or 'NotIn'");
  } else if (
    (operator === 'Exists' || operator === 'DoesNotExist') &&
    Array.isArray(values) &&
    values.length > 0
  ) {
    fail(`${at}.values`, "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'");
  }
  if (typeof key !== 'string') fail(`${at}.key`, 'Required value: a label key');
  else
    for (const m of labelKeyProblems(key)) fail(`${at}.key`, `Invalid value: ${JSON.stringify(key)}: ${m}`);
  if (!ok || typeof key !== 'string') return undefined;

  const set = new Set(list);
  switch (operator) {
    case 'In':
      return (labels) => hasOwn.call(labels, key) && set.has(labels[key]);
    case 'NotIn':
      // labels.Selector: NotIn also matches when the key is absent.
      return (labels) => !hasOwn.call(labels, key) || !set.has(labels[key]);
    case 'Exists':
      return (labels) => hasOwn.call(labels, key);
    default:
      return (labels) => !hasOwn.call(labels, key);
  }
}
