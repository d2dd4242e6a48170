import winston from 'winston';
import { lineFormat } from './logger';

const MESSAGE = Symbol.for('message');

function line(info: winston.Logform.TransformableInfo): Record<string, unknown> {
  const out = lineFormat().transform(info);
  if (!out) throw new Error('format dropped the line');
  const text = (out as unknown as Record<symbol, string>)[MESSAGE];
  expect(text).not.toContain('\n');
  return JSON.parse(text) as Record<string, unknown>;
}

describe('log line format', () => {
  it('writes one JSON object: level, message, timestamp first, then the fields', () => {
    const info = {
      level: 'info',
      message: 'patch applied',
      object: { kind: 'Deployment', namespace: 'shop', name: 'web' },
      rules: ['shop/add-owner'],
    };
    const parsed = line(info);
    expect(Object.keys(parsed).slice(0, 3)).toEqual(['level', 'message', 'timestamp']);
    expect(parsed).toMatchObject({
      level: 'info',
      message: 'patch applied',
      object: { kind: 'Deployment', namespace: 'shop', name: 'web' },
      rules: ['shop/add-owner'],
    });
    expect(Number.isNaN(Date.parse(parsed.timestamp as string))).toBe(false);
  });

  it('still writes a line for fields the native writer refuses (cycles, BigInt)', () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    const parsed = line({ level: 'warn', message: 'odd fields', cyclic, big: BigInt(10) });
    expect(parsed).toMatchObject({
      level: 'warn',
      message: 'odd fields',
      cyclic: { a: 1, self: '[Circular]' },
    });
    expect(typeof parsed.timestamp).toBe('string');
  });

  it('keeps the stack of an Error logged as the message', () => {
    const parsed = line(new Error('boom') as unknown as winston.Logform.TransformableInfo);
    expect(parsed.message).toBe('boom');
    expect(parsed.stack).toMatch(/^Error: boom\n/);
  });
});
