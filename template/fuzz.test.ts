import fc from 'fast-check';
import { loadFixture } from '../fixtures/load';
import { compileTemplate, TEMPLATE_FUNCTIONS, TemplateRuntimeError, TemplateSyntaxError } from './index';

// Template-ish fragments: random combinations must only ever produce our two error types, never a crash.
const FRAGMENTS = [
  '{{',
  '}}',
  '{{-',
  '-}}',
  ' ',
  '.',
  '.Target',
  '.metadata',
  '.name',
  '.spec',
  '$',
  '$x',
  ':=',
  '=',
  '|',
  '(',
  ')',
  '"a"',
  '`b`',
  "'c'",
  '1',
  '-2',
  '3.5',
  'nil',
  'true',
  'if',
  'else',
  'end',
  'range',
  'with',
  'define',
  'template',
  'break',
  'continue',
  '/*',
  '*/',
  ',',
  'text',
  '\n',
  ...TEMPLATE_FUNCTIONS.filter((f) => f !== 'shuffle' && f !== 'uuidv4'),
];

describe('robustness', () => {
  const data = {
    Target: loadFixture('deployment'),
    Namespace: 'default',
    SelectedItem: 'x',
    SelectKeyParts: [0],
  };

  test('any input either compiles or throws TemplateSyntaxError; rendering only throws TemplateRuntimeError', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...FRAGMENTS), { maxLength: 25 }), (parts) => {
        const src = parts.join(' ');
        let t;
        try {
          t = compileTemplate(src);
        } catch (e) {
          expect(e).toBeInstanceOf(TemplateSyntaxError);
          return;
        }
        try {
          expect(typeof t.render(data)).toBe('string');
        } catch (e) {
          expect(e).toBeInstanceOf(TemplateRuntimeError);
        }
      }),
      { numRuns: 3000 },
    );
  });

  test('well-formed random actions over the fixture never crash', () => {
    const fns = [
      'upper',
      'quote',
      'toJson',
      'len',
      'first',
      'keys',
      'toString',
      'b64enc',
      'default "d"',
      'typeOf',
    ];
    const fields = [
      '.Target',
      '.Target.metadata',
      '.Target.metadata.name',
      '.Target.spec.replicas',
      '.Target.spec.template.spec.containers',
      '.Nope',
      '.Namespace',
    ];
    fc.assert(
      fc.property(
        fc.constantFrom(...fields),
        fc.array(fc.constantFrom(...fns), { maxLength: 4 }),
        (field, chain) => {
          const src = `{{ ${[field, ...chain].join(' | ')} }}`;
          try {
            compileTemplate(src).render(data);
          } catch (e) {
            expect(e).toBeInstanceOf(TemplateRuntimeError);
          }
        },
      ),
    );
  });
});
