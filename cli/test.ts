import { writeFile } from 'node:fs/promises';
import { palette, wantColor } from './explain';
import { parsePathArgs } from './args';
import { Command, UsageError } from './io';
import { CaseReport, runSuite } from './testcase';
import { findTestFiles, prepareFile, Prepared } from './testsuite';
import { formatReport, junitXml } from './testreport';

const USAGE = `usage: modrule test PATH... [--output text|json] [--junit FILE] [--explain]

Runs ModRule test suites: files named modrule-test.yaml (or NAME.modrule-test.yaml), found recursively under
each PATH (a file PATH is read whatever its name). Each names its ModRules, the objects to admit, optional
Namespaces and Nodes, and the expected result per object: patched, rejected, unchanged or error.

  --output text|json   text (default): one row per case, then each failure with a diff and the explanation
  --junit FILE         also write a JUnit XML report (for CI systems)
  --explain            explain every case, not only the failing ones
  -h, --help           show this help

Exit status: 0 all cases pass, 1 at least one fails, 2 bad input (a test file, rule or object that does not load).
`;

/** `modrule test`: runs rule test suites and reports one row per case. */
export const run: Command = async (args, io) => {
  const parsed = parsePathArgs('test', USAGE, args, io, {
    junit: { type: 'string' },
    explain: { type: 'boolean', default: false },
  });
  if (typeof parsed === 'number') return parsed;
  const { values, output, paths: positionals } = parsed;
  let reports: CaseReport[];
  try {
    const files = await findTestFiles(positionals);
    const prepared: Prepared[] = [];
    for (const file of files) prepared.push(...(await prepareFile(file, io)));
    reports = prepared.flatMap((p) => runSuite(p, values.explain === true));
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.stderr(`modrule test: ${err.message}\n`);
    return 2;
  }
  const failed = reports.filter((r) => !r.pass).length;
  if (output === 'json') {
    io.stdout(JSON.stringify({ passed: reports.length - failed, failed, cases: reports }, null, 2) + '\n');
  } else {
    io.stdout(formatReport(reports, palette(wantColor(io.stdoutIsTTY))));
  }
  const junit = values.junit;
  if (typeof junit === 'string') {
    try {
      await writeFile(junit, junitXml(reports));
    } catch (err) {
      io.stderr(`modrule test: cannot write ${junit}: ${(err as Error).message}\n`);
      return 2;
    }
  }
  return failed > 0 ? 1 : 0;
};
