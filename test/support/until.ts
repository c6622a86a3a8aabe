import { expect } from 'vitest';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `done` every `every` ms until it holds or `ms` have passed, then expects it to hold. */
export async function pollUntil(
  done: () => boolean | Promise<boolean>,
  ms: number,
  every: number,
): Promise<void> {
  const end = Date.now() + ms;
  while (!(await done()) && Date.now() < end) await sleep(every);
  expect(await done()).toBe(true);
}
