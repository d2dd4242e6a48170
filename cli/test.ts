import { writeFile } from 'node:fs/promises';
import { palette, wantColor } from './explain';
import { parsePathCommand } from './args';
import { EXIT, exitHelp } from './exit';
import { Command, CommandIO, displayName, UsageError } from './io';
import { runSuite } from './testcase';
import { failureLine, ON_ERROR_OPTION, onErrorHelp, parseOnError } from './failures';
import { findTestFiles, prepareFile, Prepared } from './testsuite';
import { formatReport, junitLoadFailuresXml, junitXml, LoadFailure } from './testreport';
import { messageOf } from '../util/errors';

const USAGE = `usage: modrule test PATH... [--output text|json] [--junit FILE] [--explain]

Runs ModRule test suites: files named modrule-test.yaml (or NAME.modrule-test.yaml), found recursively under
each PATH (a file PATH is read whatever its name; "-" reads one from standard input, and its relative paths are
then taken from the current folder). Each names its ModRules, the objects to admit, optional cluster
objects (Namespaces, Nodes, owners, referenced objects), and the expected result per object: patched, rejected, unchanged or error.

  -o, --output text|json  text (default): one row per case, then each failure with a diff and the explanation
  --junit FILE            also write a JUnit XML report (for CI systems), even when suites do not load
  --explain               explain every case, not only the failing ones
${onErrorHelp(26, 'the case fails', 'the case is judged on the object as the webhook admits it')}
                          (a failure a case expects with error: is neither; one line on stderr sums them up)
  -h, --help              show this help

${exitHelp('at least one case fails')}`;

const FAILURE_CONSEQUENCE = {
  fail: "their cases fail (--on-error=warn judges them on the objects as the webhook admits them, without the failing rules' changes)",
  warn: "their cases are judged on the objects as the webhook admits them, without the failing rules' changes",
};

/** `modrule test`: runs rule test suites and reports one row per case. */
export const run: Command = async (args, io) => {
  const parsed = parsePathCommand(args, USAGE, {
    junit: { type: 'string' },
    explain: { type: 'boolean', default: false },
    ...ON_ERROR_OPTION,
  });
  if (parsed === 'help') {
    io.stdout(USAGE);
    return EXIT.ok;
  }
  const { values, output, paths } = parsed;
  const junit = typeof values.junit === 'string' ? values.junit : undefined;
  const onError = parseOnError(String(values['on-error']));
  const { prepared, failures } = await loadSuites(paths, io);
  if (failures.length > 0) {
    for (const f of failures) io.stderr(`modrule test: ${f.message}\n`);
    if (junit !== undefined) await writeReport(junit, junitLoadFailuresXml(failures), io);
    return EXIT.error;
  }
  const reports = prepared.flatMap((p) => runSuite(p, values.explain === true, onError));
  const runTime = reports.flatMap((r) =>
    (r.unexpectedFailures ?? []).map((f) => ({ ...f, object: r.resource })),
  );
  io.stderr(failureLine('test', runTime, onError, FAILURE_CONSEQUENCE));
  const failed = reports.filter((r) => !r.pass).length;
  if (output === 'json') {
    io.stdout(JSON.stringify({ passed: reports.length - failed, failed, cases: reports }, null, 2) + '\n');
  } else {
    io.stdout(formatReport(reports, palette(wantColor(io.stdoutIsTTY))));
  }
  if (junit !== undefined && !(await writeReport(junit, junitXml(reports), io))) return EXIT.error;
  return failed > 0 ? EXIT.finding : EXIT.ok;
};

// Every path and file is tried, so one run reports every suite that does not load.
async function loadSuites(
  paths: readonly string[],
  io: CommandIO,
): Promise<{ prepared: Prepared[]; failures: LoadFailure[] }> {
  const prepared: Prepared[] = [];
  const failures: LoadFailure[] = [];
  const attempt = async (file: string, load: () => Promise<void>): Promise<void> => {
    try {
      await load();
    } catch (err) {
      if (!(err instanceof UsageError)) throw err;
      failures.push({ file: displayName(file), message: err.message });
    }
  };
  for (const path of paths) {
    let files: string[] = [];
    await attempt(path, async () => {
      files = await findTestFiles([path]);
    });
    for (const file of files)
      await attempt(file, async () => void prepared.push(...(await prepareFile(file, io))));
  }
  return { prepared, failures };
}

async function writeReport(file: string, text: string, io: CommandIO): Promise<boolean> {
  try {
    await writeFile(file, text);
    return true;
  } catch (err) {
    io.stderr(`modrule test: cannot write ${file}: ${messageOf(err)}\n`);
    return false;
  }
}
