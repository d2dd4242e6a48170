import { compileRegex, RegexSyntaxError } from './compile';

describe('compileRegex (Go RE2 semantics)', () => {
  it.each([
    ['nginx:1\\.14\\..*', 'nginx:1.14.2', true],
    ['nginx:1\\.14\\..*', 'nginx:1.15.0', false],
    ['(?i)NGINX', 'docker.io/nginx:latest', true],
    ['^abc$', 'xabc', false],
    ['123\\.45\\.67\\.*', '123.45.67.10', true],
    ['their-repo/.+', 'their-repo/log-shipper:2.1', true],
  ])('%s against %s is %s (unanchored search)', (pattern, input, expected) => {
    expect(compileRegex(pattern).test(input)).toBe(expected);
  });

  it('rejects patterns RE2 cannot run with a reason', () => {
    expect(() => compileRegex('(abc')).toThrow(RegexSyntaxError);
    expect(() => compileRegex('(abc')).toThrow(/invalid regex: .*missing \)/);
    // Backreferences and lookaround need backtracking: RE2 refuses them instead of risking blow-ups.
    expect(() => compileRegex('(a)\\1')).toThrow(RegexSyntaxError);
    expect(() => compileRegex('a(?=b)')).toThrow(RegexSyntaxError);
  });

  it('runs the classic catastrophic pattern in linear time', () => {
    const re = compileRegex('(a+)+$');
    expect(re.test('a'.repeat(50_000) + '!')).toBe(false);
  });

  it('expands Go replacement references', () => {
    const re = compileRegex('(.+)/(.*)');
    expect(re.replaceAll('their-repo/nginx:1.25', 'my-repo/${2}')).toBe('my-repo/nginx:1.25');
    expect(re.replaceAll('a/b', '$2-$1-$$')).toBe('b-a-$');
    expect(compileRegex('(?P<repo>[^/]+)/(?P<img>.*)').replaceAll('x/y', '${img}@${repo}')).toBe('y@x');
  });

  it('finds all matches with submatches', () => {
    expect(compileRegex('(\\d+)').findAll('a1b22c333')).toEqual([
      ['1', '1'],
      ['22', '22'],
      ['333', '333'],
    ]);
    expect(compileRegex('\\d').findAll('123', 2)).toHaveLength(2);
  });
});
