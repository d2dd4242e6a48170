// The reports of `modrule test`: the text table with failure details, and JUnit XML for CI systems.
import { formatExplanation, palette, Palette } from './explain';
import { CaseReport } from './testcase';
import { fitColumns, wrapLine, wrapText } from './wrap';

/** The width the text report fits in, wrapping what would not fit (nothing is cut). */
export const REPORT_WIDTH = 100;

const HEADER = ['TEST', 'RESOURCE', 'EXPECTED', 'GOT', 'RESULT'];
const GAP = 2;

/** The table of cases: one row per case, cells wrapped within their column, the whole at most REPORT_WIDTH wide. */
function caseTable(reports: readonly CaseReport[], p: Palette): string[] {
  const rows = reports.map((r) => [
    r.test,
    `${r.resource}${r.operation === 'CREATE' ? '' : ` (${r.operation})`}${r.rules ? ` [${r.rules.join(', ')}]` : ''}`,
    r.expected,
    r.got,
    r.pass ? 'PASS' : 'FAIL',
  ]);
  const natural = HEADER.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  // Messages wrap first, then the resource, then the test's name.
  const widths = fitColumns(natural, REPORT_WIDTH, GAP, [[2, 3], [1], [0]], 16);
  const lines: string[] = [];
  for (const row of [HEADER, ...rows]) {
    const cells = row.map((text, i) => wrapLine(text, widths[i], ''));
    const height = Math.max(...cells.map((c) => c.length));
    for (let k = 0; k < height; k++) {
      const line = cells
        .map((c, i) => (i === cells.length - 1 ? (c[k] ?? '') : (c[k] ?? '').padEnd(widths[i])))
        .join(' '.repeat(GAP))
        .trimEnd();
      lines.push(
        k > 0 || row === HEADER
          ? line
          : line.replace(/(PASS|FAIL)$/, (w) => (w === 'PASS' ? p.green(w) : p.red(w))),
      );
    }
  }
  return lines;
}

/** The text report: a table of cases, then the details of every failure and the summary line; REPORT_WIDTH wide. */
export function formatReport(reports: readonly CaseReport[], p: Palette): string {
  const wrap = (line: string, colour: (s: string) => string = (s) => s): string =>
    wrapLine(line, REPORT_WIDTH)
      .map((l) => colour(l))
      .join('\n') + '\n';
  let out = caseTable(reports, p).join('\n') + '\n';
  for (const r of reports) {
    if (r.pass && !r.explanation) continue;
    const title = `${r.pass ? 'PASS' : 'FAIL'} ${r.test}: ${r.resource} (${r.operation})`;
    out += '\n' + wrap(title, (s) => (r.pass ? p.bold(s) : p.red(p.bold(s))));
    out += wrap(`  expected ${r.expected}, got ${r.got}`);
    if (r.reason) out += wrap(`  ${r.reason}`);
    if (r.diff) {
      out += `  ${p.red('- expected')}  ${p.green('+ got')}\n`;
      for (const line of r.diff.replace(/\n$/, '').split('\n')) {
        const colour = line.startsWith('-') ? p.red : line.startsWith('+') ? p.green : undefined;
        out += wrap(`  ${line}`, colour);
      }
    }
    if (r.explanation)
      out += wrapText(
        formatExplanation(`  explanation: ${r.resource}`, r.explanation, p).replace(/\n(?=.)/g, '\n  '),
        REPORT_WIDTH,
      );
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

/** A test file (or PATH) that could not be loaded, and why. */
export interface LoadFailure {
  file: string;
  message: string;
}

/**
 * The JUnit XML report when suites cannot be loaded: a testsuite per file with one failing "load" testcase
 * carrying the error, so a CI system that reads only the report still shows why nothing ran.
 */
export function junitLoadFailuresXml(failures: readonly LoadFailure[]): string {
  let out = `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="modrule test" tests="${failures.length}" failures="${failures.length}">\n`;
  for (const { file, message } of failures) {
    out += `  <testsuite name="${xml(file)}" file="${xml(file)}" tests="1" failures="1">\n`;
    out += `    <testcase classname="${xml(file)}" name="load">\n`;
    out += `      <failure message="${xml(`cannot load ${file}`)}">${xml(message)}</failure>\n    </testcase>\n  </testsuite>\n`;
  }
  return out + '</testsuites>\n';
}
