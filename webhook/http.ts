import { IncomingMessage, ServerResponse } from 'node:http';
import { BadRequestError } from './review';

/** Reads the whole body as UTF-8; rejects with a 413 BadRequestError as soon as it passes maxBytes. */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<string> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) {
    return Promise.reject(tooLarge(maxBytes));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        finish();
        chunks.length = 0;
        req.resume(); // discard the rest without keeping it
        reject(tooLarge(maxBytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      finish();
      resolve(Buffer.concat(chunks, size).toString('utf8'));
    };
    const onError = (err: Error) => {
      finish();
      reject(new BadRequestError(`error reading request body: ${err.message}`));
    };
    const onAborted = () => onError(new Error('client aborted the request'));
    function finish() {
      if (done) return;
      done = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onAborted);
    }
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onAborted);
  });
}

function tooLarge(maxBytes: number): BadRequestError {
  return new BadRequestError(`request body exceeds the limit of ${maxBytes} bytes`, 413);
}

/** True for `application/json`, with or without parameters (charset). */
export function isJsonContentType(header: string | undefined): boolean {
  if (!header) return false;
  return header.split(';')[0].trim().toLowerCase() === 'application/json';
}

/** Sends a plain-text answer (errors, health). */
export function sendText(
  res: ServerResponse,
  status: number,
  text: string,
  headers: Record<string, string> = {},
): void {
  const body = Buffer.from(text.endsWith('\n') ? text : `${text}\n`, 'utf8');
  res.writeHead(status, {
    'Content-Type': 'text/plain; charset=utf-8',
    'Content-Length': String(body.length),
    ...headers,
  });
  res.end(body);
}

/** Sends a JSON answer already encoded. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: Buffer,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': String(body.length),
    ...headers,
  });
  res.end(body);
}
