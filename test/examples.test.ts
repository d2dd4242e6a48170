import { runProcess } from './cli';

// The shipped suites go through the real command line, as a CI job would run them.
describe('modrule test on the shipped examples', () => {
  it('passes every case of examples/ (exit 0)', async () => {
    const r = await runProcess('modrule', ['test', 'examples/', '--output', 'json']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout) as { passed: number; failed: number; cases: Array<{ test: string }> };
    expect(report.failed).toBe(0);
    // One case per KubeMod README example, plus the examples/testing suite.
    expect(new Set(report.cases.map((c) => c.test)).size).toBeGreaterThanOrEqual(17);
    expect(report.passed).toBe(report.cases.length);
  });
});
