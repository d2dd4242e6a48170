import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ESLint, Linter } from 'eslint';
import { parser } from 'typescript-eslint';

/*
 * The lint ratchet (eslint.limits.json, notYet): every file pinned there breaks its limit by exactly the value pinned.
 * A file that got better fails this test until its pin is lowered (or it leaves the list once it meets the limit),
 * so the list only shrinks; lint itself fails a file that got worse.
 */

const ROOT = join(__dirname, '..');
type RuleEntry = Linter.RuleEntry;
interface Limits {
  limits: Record<string, RuleEntry>;
  testLimits: Record<string, RuleEntry>;
  notYet: Record<string, Record<string, { max: number; where?: string }>>;
}
const LIMITS = JSON.parse(readFileSync(join(ROOT, 'eslint.limits.json'), 'utf8')) as Limits;
const RULES = Object.keys(LIMITS.limits);

/** The value a message of a size rule reports: "(106)", "a complexity of 43". */
export function reported(message: string): number {
  const m = /\((\d+)\)|complexity of (\d+)/.exec(message);
  if (!m) throw new Error(`no value in: ${message}`);
  return Number(m[1] ?? m[2]);
}

/** Each file's largest value per rule: every size rule set to report everything (max 0), options otherwise kept. */
async function measure(files: string[]): Promise<Map<string, Map<string, number>>> {
  const everything = (rule: string): RuleEntry => {
    const base = LIMITS.limits[rule];
    return ['warn', { ...(Array.isArray(base) ? (base[1] as object) : {}), max: 0 }];
  };
  // The project's config is ESM (not loadable here): only the size rules are needed, with the TypeScript parser.
  const eslint = new ESLint({
    cwd: ROOT,
    overrideConfigFile: true,
    overrideConfig: {
      files: ['**/*.ts'],
      languageOptions: { parser },
      rules: Object.fromEntries(RULES.map((r) => [r, everything(r)])),
    },
  });
  const out = new Map<string, Map<string, number>>();
  for (const result of await eslint.lintFiles(files)) {
    const file = result.filePath.slice(ROOT.length + 1);
    const values = new Map<string, number>();
    for (const m of result.messages)
      if (m.ruleId && RULES.includes(m.ruleId))
        values.set(m.ruleId, Math.max(values.get(m.ruleId) ?? 0, reported(m.message)));
    out.set(file, values);
  }
  return out;
}

/** The limit a rule has for a file without a pin. */
function limitOf(rule: string, file: string): number {
  const isTest = file.endsWith('.test.ts') || file.startsWith('test/') || file.startsWith('bench/');
  const entry = (isTest && LIMITS.testLimits[rule]) || LIMITS.limits[rule];
  return Array.isArray(entry) ? Number((entry[1] as { max: number }).max) : Infinity;
}

describe('the lint ratchet', () => {
  it('pins every file of notYet at exactly the value it has, and only files that break the limit', async () => {
    const pins = Object.entries(LIMITS.notYet).flatMap(([rule, files]) =>
      Object.entries(files).map(([file, { max }]) => ({ rule, file, max })),
    );
    const values = await measure([...new Set(pins.map((p) => p.file))]);
    const wrong = pins.flatMap(({ rule, file, max }) => {
      const value = values.get(file)?.get(rule) ?? 0;
      if (value <= limitOf(rule, file))
        return [`${file}: ${rule} meets the limit now (${value}): remove its pin`];
      return value === max ? [] : [`${file}: ${rule} is ${value}, pinned at ${max}: pin it at ${value}`];
    });
    expect(wrong).toEqual([]);
  }, 120_000);

  it('reads the value out of each size rule message', () => {
    expect(reported("Async function 'run' has too many lines (106). Maximum allowed is 100.")).toBe(106);
    expect(reported("Method 'follow' has a complexity of 43. Maximum allowed is 25.")).toBe(43);
    expect(reported('Blocks are nested too deeply (6). Maximum allowed is 5.')).toBe(6);
  });
});
