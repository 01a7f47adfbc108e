/**
 * PostGraphile 5 (grafast, @dataplan/pg, grafserv) declares node >= 22 and
 * calls Promise.withResolvers (ES2024, Node 22+). On Node 20 without it every
 * database read resolves to nothing ("Cannot read properties of undefined
 * (reading 'items')"). That is the only Node 22 API those packages use;
 * this standard-conforming polyfill closes the gap until Node 20 is dropped.
 */
interface Resolvers<T> {
  promise: Promise<T>;
  resolve(value: T | PromiseLike<T>): void;
  reject(reason?: unknown): void;
}

if (typeof (Promise as { withResolvers?: unknown }).withResolvers !== 'function') {
  Object.defineProperty(Promise, 'withResolvers', {
    configurable: true,
    writable: true,
    value: function withResolvers<T>(this: PromiseConstructor): Resolvers<T> {
      let resolve!: Resolvers<T>['resolve'];
      let reject!: Resolvers<T>['reject'];
      const promise = new this<T>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      return { promise, resolve, reject };
    },
  });
}

export {};
