import { parseOperatorArgs } from './operator';

// --reports and --reports-interval of `modrule operator` (the background audit, issue 21).
describe('modrule operator --reports', () => {
  const parse = (args: string[], env: Record<string, string> = {}) =>
    parseOperatorArgs(args, env, () => undefined);

  it('is off unless asked for', () => {
    expect(parse([])).toMatchObject({ reports: undefined });
    expect(parse(['--reports', 'off'])).toMatchObject({ reports: undefined });
  });

  it('takes the format and interval from flags or the environment, flags first', () => {
    expect(parse(['--reports', 'openreports'])).toMatchObject({
      reports: { format: 'openreports', intervalSeconds: 3600 },
    });
    expect(parse([], { MODRULE_REPORTS: 'wgpolicyk8s', MODRULE_REPORTS_INTERVAL: '600' })).toMatchObject({
      reports: { format: 'wgpolicyk8s', intervalSeconds: 600 },
    });
    expect(parse(['--reports-interval', '60'], { MODRULE_REPORTS: 'openreports' })).toMatchObject({
      reports: { format: 'openreports', intervalSeconds: 60 },
    });
  });

  it('refuses a format or interval it does not know, naming where it came from', () => {
    expect(() => parse(['--reports', 'kyverno'])).toThrow(
      '--reports must be off, openreports or wgpolicyk8s, got "kyverno"',
    );
    expect(() => parse([], { MODRULE_REPORTS: 'openreports', MODRULE_REPORTS_INTERVAL: '0' })).toThrow(
      'MODRULE_REPORTS_INTERVAL must be a whole number of seconds, got "0"',
    );
  });
});
