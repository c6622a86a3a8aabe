// What the framework-neutral HTTP parts (rate limits, Idempotency-Key) read of a request. Each
// adapter (onceflow/express, onceflow/fastify, onceflow/hono) builds one from its framework's
// request; the parts never see the framework's own objects.

/** A request as the HTTP parts see it. */
export interface HttpRequestInfo {
  /** Upper case (`POST`). */
  readonly method: string;
  /** The path with its query string (`/orders?expand=items`): part of an idempotent request's fingerprint. */
  readonly url: string;
  /** The client's address as the framework reports it (behind a proxy: configure the framework's trust). */
  readonly ip: string | undefined;
  /** A request header's value (the first one), case-insensitive; undefined when absent. */
  header(name: string): string | undefined;
}

/**
 * The first value of a header in Node's incoming headers (names lower-cased by Node; a repeated
 * header arrives as an array): what `HttpRequestInfo.header` answers for Express and Fastify.
 */
export function firstHeader(
  headers: Readonly<Record<string, string | string[] | undefined>>,
  name: string,
): string | undefined {
  const value = headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

/** A response as recorded and replayed by the Idempotency-Key part: byte for byte. */
export interface RecordedResponse {
  readonly status: number;
  /** The headers kept (see `recordedHeader`), lower-case names, in the order sent. */
  readonly headers: readonly (readonly [string, string])[];
  /** The body, base64 (any bytes, so a replay is the same bytes); '' when `omitted`. */
  readonly body: string;
  /**
   * True when the body could not be kept (streamed, or over the record's bound): the status and
   * headers are, and a replay says the body is missing (`idempotent-body: omitted`).
   */
  readonly omitted?: true;
}

/** A response the HTTP parts answer with themselves (a 429, a 409, a 422, a 400). */
export interface HttpAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** JSON text of an RFC 9457 problem (`application/problem+json`). */
  readonly body: string;
}
