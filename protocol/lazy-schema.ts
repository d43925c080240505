// A zod schema built the first time it is used. The runner bundle's build (scripts/lazy-schemas.mjs) wraps
// every module-level schema in it, so a command that validates nothing does not build the hundreds of schemas
// its imports declare, and an idle daemon does not run zod's shared constructor often enough for V8 to
// optimise it (docs/performance.md, "Schemas built when first used").
//
// The stand-in is an empty object whose prototype is a proxy; its first property read (or `in` test) builds
// the schema and puts it in the proxy's place as the stand-in's prototype, so every later read — `parse`,
// `_zod` from inside zod, a method of a schema composed with it — is a plain prototype lookup, and zod's
// closures, bound to the built schema, work unchanged. `instanceof` against a zod class reads `_zod` too.
export function lazySchema<T extends object>(build: () => T): T {
  let built: T | undefined;
  const load = (): T => (built ??= build());
  const stub: object = new Proxy(
    {},
    {
      get(_, key, receiver) {
        const schema = load();
        if (Object.getPrototypeOf(receiver) === stub) Object.setPrototypeOf(receiver, schema);
        return Reflect.get(schema, key, receiver);
      },
      has: (_, key) => key in load(),
    },
  );
  return Object.create(stub) as T;
}
