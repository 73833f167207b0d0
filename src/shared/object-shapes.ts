// Plain objects of a fixed set of keys, built the way V8 keeps them fast. An object filled by
// computed keys (`out[key] = value`) past a dozen properties is turned into a dictionary:
// spreading one then costs ≈ 9× and JSON.stringify ≈ 1.7× a literal's (measured on Node 24),
// and rows and API objects are spread and serialised into every event and response. An
// object literal with the keys written out gets one shape, shared by every object it builds.
// The builders below write that literal once per key list: the keys are the code's own
// (schema properties, SQL column names), each quoted by JSON.stringify, so no value is ever
// part of the generated text.

/** Builds `{ [keys[0]]: source[keys[0]], … }`: exactly `keys`, in order (absent ones undefined). */
export type KeyPicker = (source: Readonly<Record<string, unknown>>) => Record<string, unknown>;

/** Builds `{ [keys[0]]: values[0], … }` (a repeated key keeps its last value). */
export type ArrayToObject = (values: readonly unknown[]) => Record<string, unknown>;

/** `__proto__` as a literal's key would set the prototype: such key lists are refused. */
function checkKeys(keys: readonly string[]): void {
  if (keys.includes('__proto__')) throw new Error('object-shapes: a key named __proto__');
}

/**
 * A KeyPicker for `keys` (e.g. a schema's property names). Throws for a key `__proto__`.
 * Source: V8's fast and dictionary properties (v8.dev/blog/fast-properties).
 */
export function keyPicker(keys: readonly string[]): KeyPicker {
  checkKeys(keys);
  const body = keys.map((key) => `${JSON.stringify(key)}: source[${JSON.stringify(key)}]`).join(', ');
  return new Function('source', `return { ${body} };`) as KeyPicker;
}

/**
 * An ArrayToObject for `keys` (e.g. a statement's column names, values read as an array).
 * Throws for a key `__proto__`.
 */
export function arrayToObject(keys: readonly string[]): ArrayToObject {
  checkKeys(keys);
  const body = keys.map((key, i) => `${JSON.stringify(key)}: values[${i}]`).join(', ');
  return new Function('values', `return { ${body} };`) as ArrayToObject;
}
