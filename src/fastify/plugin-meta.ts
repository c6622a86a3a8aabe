// How onceflow's Fastify plugins declare themselves to Fastify without the fastify-plugin package.
import type { RouteOptions } from 'fastify';

/**
 * Marks a plugin as fastify-plugin does: `skip-override` makes its hooks (onRoute above all)
 * apply to the context it is registered in, so the routes declared beside it are covered, not
 * only those inside it. No `name` in its meta: registering it twice (two layers of limits, in
 * two contexts) is allowed.
 */
export function siblingPlugin<F extends (...args: never[]) => unknown>(name: string, fn: F): F {
  const marked = fn as unknown as Record<symbol, unknown>;
  marked[Symbol.for('skip-override')] = true;
  marked[Symbol.for('fastify.display-name')] = name;
  marked[Symbol.for('plugin-meta')] = { fastify: '5.x' };
  return fn;
}

/** The hook kinds a route can carry that the plugins add to. */
type RouteHookName = 'onRequest' | 'preHandler' | 'onSend' | 'onError';

/**
 * Appends `hook` to a route's own hooks in the onRoute hook: route-level hooks run after the
 * instance's, so an authentication hook has run before (a key function can read the user) and
 * an onSend hook sees the payload as the other hooks left it.
 */
export function appendRouteHook(route: RouteOptions, name: RouteHookName, hook: unknown): void {
  const slot = route as unknown as Record<RouteHookName, unknown>;
  const existing = slot[name];
  slot[name] = existing === undefined || existing === null ? [hook] : [...[existing].flat(), hook];
}

/** Fastify's own register options, passed along with a plugin's: not the plugin's to validate. */
export function withoutRegisterOptions(options: object): Record<string, unknown> {
  const { prefix: _p, logLevel: _l, logSerializers: _s, ...own } = options as Record<string, unknown>;
  return own;
}
