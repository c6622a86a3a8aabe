import { InvalidArgumentError } from '../../core/errors.js';

/**
 * A take's cost, checked wherever a take enters (the limiter, and each store for its direct
 * callers): a non-negative safe integer, or a typed error naming `cost`.
 */
export function limiterCost(cost: unknown): number {
  if (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 0) {
    throw new InvalidArgumentError('cost', 'a non-negative safe integer', cost);
  }
  return cost;
}
