import winston from 'winston';

/** The levels a user can pick with --log-level. */
export type LogLevel = 'error' | 'warn' | 'info' | 'debug';

/** The process logger: one JSON object per line on stderr, so stdout stays free for command output. */
export function createLogger(level: LogLevel = 'info'): winston.Logger {
  return winston.createLogger({
    level,
    format: winston.format.combine(
      winston.format.timestamp(),
      winston.format.errors({ stack: true }),
      winston.format.json(),
    ),
    transports: [new winston.transports.Console({ stderrLevels: ['error', 'warn', 'info', 'debug'] })],
  });
}

/** A logger that drops everything: for library use and tests that do not look at logs. */
export function silentLogger(): winston.Logger {
  return winston.createLogger({ silent: true, transports: [new winston.transports.Console()] });
}

export type Logger = winston.Logger;
