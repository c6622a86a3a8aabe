/**
 * An expected way for a demo run to fail (a server that cannot be reached, a worker process that
 * died): the CLI prints its message, not a stack trace, and exits with 1.
 */
export class DemoFailure extends Error {
  override readonly name = 'DemoFailure';
}
