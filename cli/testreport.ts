// The reports of `modrule test`: the text table with failure details, and JUnit XML for CI systems.
import { formatExplanation, palette, Palette } from './explain';
import { CaseReport } from './testcase';

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
