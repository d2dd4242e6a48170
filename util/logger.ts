import { Writable } from 'node:stream';
import winston from 'winston';

/** The levels a user can pick with --log-level. */
export type LogLevel = 'error' | 'warn' | 'info' | 'debug';

// Where winston transports read the finished line (triple-beam's MESSAGE).
const MESSAGE = Symbol.for('message');
const safeJson = winston.format.json();

// winston's json() format sorts keys through a replacer (safe-stable-stringify): 2/3 of the cost of a dragnet log
// line. Our fields are plain data, so the native writer does; anything it refuses (a cycle, a BigInt) falls back.
const jsonLine = winston.format((info) => {
  const timestamp = new Date().toISOString();
  try {
    // level, message and time first, for people reading the lines.
    const line = Object.assign({ level: info.level, message: info.message, timestamp }, info);
    (info as unknown as Record<symbol, string>)[MESSAGE] = JSON.stringify(line);
    return info;
  } catch {
    info.timestamp = timestamp;
    return safeJson.transform(info, safeJson.options);
  }
});

/** The format of every log line: one JSON object (level, message, timestamp, fields), errors with their stack. */
export function lineFormat(): winston.Logform.Format {
  return winston.format.combine(winston.format.errors({ stack: true }), jsonLine());
}

// winston's Console transport schedules a 'logged' event per line (a setImmediate each); nothing here listens.
class StderrTransport extends winston.transports.Console {
  override log(info: winston.Logform.TransformableInfo, next: () => void): void {
    process.stderr.write(`${(info as unknown as Record<symbol, string>)[MESSAGE]}\n`);
    next();
  }
}

/** The process logger: one JSON object per line on stderr, so stdout stays free for command output. */
export function createLogger(level: LogLevel = 'info'): winston.Logger {
  return winston.createLogger({
    level,
    format: lineFormat(),
    transports: [new StderrTransport()],
  });
}

/** A logger that drops everything: for library use and tests that do not look at logs. */
export function silentLogger(): winston.Logger {
  return winston.createLogger({ silent: true, transports: [new winston.transports.Console()] });
}

export type Logger = winston.Logger;

/** One structured log line, as a memory logger keeps it. */
export type LogLine = Record<string, unknown> & { level: string; message: string };

/** A logger that keeps every line it is given, debug included (tests that look at logs). */
export function memoryLogger(): { logger: winston.Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString('utf8')) as LogLine);
      done();
    },
  });
  const logger = winston.createLogger({
    level: 'debug',
    format: winston.format.json(),
    transports: [new winston.transports.Stream({ stream })],
  });
  return { logger, lines };
}
