import { CommandIO } from './io';
import { main } from './main';

// Every subcommand's --help, read as a terminal reader does: options in one column, descriptions in another,
// wrapped lines under the description they continue.

const COMMANDS = [
  'select',
  'apply',
  'post-render',
  'test',
  'audit',
  'export',
  'explain',
  'validate',
  'scope',
  'serve',
  'operator',
  'webhooks',
];

async function help(command: string): Promise<string> {
  let out = '';
  const io: CommandIO = { stdout: (t) => (out += t), stderr: (t) => (out += t), readStdin: async () => '' };
  await main([command, '--help'], io);
  return out;
}

/** Misaligned lines of one help text, as "line N: why". */
export function alignmentProblems(text: string): string[] {
  const problems: string[] = [];
  const lines = text.split('\n');
  // The description column: where the text after an option's name starts, on the option lines that have one.
  const option = /^( {2}-\S.*?)( {2,})(\S.*)?$/;
  const columns = new Set<number>();
  for (const l of lines) {
    const m = option.exec(l);
    if (m?.[3] !== undefined) columns.add(m[1].length + m[2].length);
  }
  if (columns.size > 1) problems.push(`option descriptions start in columns ${[...columns].join(', ')}`);
  const column = Math.min(...columns);
  let inOption = false;
  lines.forEach((l, i) => {
    if (/^ {2}-\S/.test(l)) {
      inOption = true;
      // An option too long for the column stands alone, its description on the next line.
      if (!option.test(l) && !/^ {2}(?:-\w, )?--?[\w-]+(?: \S+)?$/.test(l))
        problems.push(`line ${i + 1}: the option runs into its description: ${l}`);
      return;
    }
    if (inOption && /^ {3,}\S/.test(l)) {
      const indent = l.length - l.trimStart().length;
      if (indent !== column)
        problems.push(`line ${i + 1}: continues at column ${indent}, not ${column}: ${l}`);
      return;
    }
    inOption = false;
  });
  return problems;
}

describe('--help of every command', () => {
  it.each(COMMANDS)('modrule %s --help: options and descriptions in two columns', async (c) => {
    const text = await help(c);
    expect(text).toMatch(new RegExp(`^usage: modrule ${c}`));
    expect(alignmentProblems(text)).toEqual([]);
  });

  it('finds a misaligned description and a wrapped line out of place', () => {
    const text =
      'usage: x\n\n  --a N      one\n  --bb N       two\n             more\n  --c    three\n         more\n' +
      '  --a-long-one N\n         alone\n  --d N two\n';
    expect(alignmentProblems(text)).toEqual([
      'option descriptions start in columns 13, 15, 9',
      'line 5: continues at column 13, not 9:              more',
      'line 10: the option runs into its description:   --d N two',
    ]);
  });
});
