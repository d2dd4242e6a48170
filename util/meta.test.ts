import { runInNewContext } from 'node:vm';
import { JsonObject } from './json';
import {
  annotationsOf,
  generationOf,
  keyOf,
  labelsOf,
  metadataOf,
  metaString,
  namespaceOf,
  nameOf,
  objectKey,
  splitKey,
} from './meta';
import { messageOf } from './errors';

const pod: JsonObject = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name: 'web-0',
    namespace: 'shop',
    uid: 'u-1',
    generation: 3,
    labels: { app: 'web', bad: 7 },
    annotations: { 'a.io/x': 'y' },
  },
};

describe('util/meta', () => {
  it('reads metadata fields of a namespaced object', () => {
    expect(nameOf(pod)).toBe('web-0');
    expect(namespaceOf(pod)).toBe('shop');
    expect(metaString(pod, 'uid')).toBe('u-1');
    expect(generationOf(pod)).toBe(3);
    expect(labelsOf(pod)).toEqual({ app: 'web' });
    expect(annotationsOf(pod)).toEqual({ 'a.io/x': 'y' });
    expect(keyOf(pod)).toBe('shop/web-0');
  });

  it('answers empty values for objects without metadata, or with metadata of the wrong type', () => {
    for (const obj of [
      {},
      { metadata: 'x' },
      { metadata: [] },
      null,
      undefined,
    ] as Array<JsonObject | null>) {
      expect(metadataOf(obj)).toEqual({});
      expect(nameOf(obj)).toBe('');
      expect(namespaceOf(obj)).toBe('');
      expect(labelsOf(obj)).toEqual({});
      expect(generationOf(obj)).toBeUndefined();
    }
    expect(() => {
      (metadataOf({}) as JsonObject).x = 1;
    }).toThrow();
  });

  it('keys cluster-scoped objects by name alone, and splits keys back', () => {
    expect(keyOf({ metadata: { name: 'node-1' } })).toBe('node-1');
    expect(objectKey('', 'n')).toBe('n');
    expect(splitKey('shop/web-0')).toEqual({ namespace: 'shop', name: 'web-0' });
    expect(splitKey('node-1')).toEqual({ namespace: '', name: 'node-1' });
  });
});

describe('util/errors messageOf', () => {
  it('reads the message of errors and the text of anything else thrown', () => {
    expect(messageOf(new TypeError('bad'))).toBe('bad');
    expect(messageOf('plain')).toBe('plain');
    expect(messageOf(42)).toBe('42');
    expect(messageOf(Object.create(null))).toBe('unknown error');
  });

  it('reads the message of an Error made in another realm', () => {
    const foreign: unknown = runInNewContext('new Error("from a vm context")');
    expect(foreign instanceof Error).toBe(false);
    expect(messageOf(foreign)).toBe('from a vm context');
  });
});
